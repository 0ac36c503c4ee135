package env

// A test-only clock fault for real daemons (qfsim chaos): when the environment variable
// QUERYFLUX_TEST_CLOCK_FILE names a file, the Real Env's clock follows what that file says,
// re-read every few milliseconds. It is never set in production; a daemon started with it logs
// a warning. The file is one line of four fields:
//
//	<offset> <rate> <since-unix-nano> <wall-step>
//
// The clock then reads real time plus offset + (rate-1)*(now - since) on both its wall and
// monotonic readings (drift, as the simulator's SetClock), plus wall-step on the wall reading
// only (an NTP step, as the simulator's StepWall: durations measured inside the process do not
// see it). Sleeps and timeouts last d/rate of real time. A file that cannot be read or parsed
// leaves the clock as it was.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/monotime"
)

// TestClockFileEnv is the environment variable of the test clock hook.
const TestClockFileEnv = "QUERYFLUX_TEST_CLOCK_FILE"

// testClockPoll is how often the file is re-read.
const testClockPoll = 5 * time.Millisecond

// ClockFault is the content of the test clock file.
type ClockFault struct {
	Offset   time.Duration // both readings, at Since
	Rate     float64       // how fast the clock runs from Since (1: real speed)
	Since    time.Time     // when Offset held and Rate began (real time)
	WallStep time.Duration // the wall reading only
}

// String is the file's line.
func (f ClockFault) String() string {
	return fmt.Sprintf("%d %g %d %d\n", f.Offset, f.Rate, f.Since.UnixNano(), f.WallStep)
}

// ParseClockFault reads the file's line.
func ParseClockFault(s string) (ClockFault, error) {
	fields := strings.Fields(s)
	if len(fields) != 4 {
		return ClockFault{}, fmt.Errorf("test clock: %q: want 4 fields (offset rate since wall-step)", s)
	}
	var f ClockFault
	off, err1 := strconv.ParseInt(fields[0], 10, 64)
	rate, err2 := strconv.ParseFloat(fields[1], 64)
	since, err3 := strconv.ParseInt(fields[2], 10, 64)
	step, err4 := strconv.ParseInt(fields[3], 10, 64)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return ClockFault{}, fmt.Errorf("test clock: %q: %v", s, err)
		}
	}
	if rate <= 0 || rate > 100 {
		return ClockFault{}, fmt.Errorf("test clock: rate %v: must be in (0, 100]", rate)
	}
	f.Offset, f.Rate, f.Since, f.WallStep = time.Duration(off), rate, time.Unix(0, since), time.Duration(step)
	return f, nil
}

// At is the fault's shift of both readings at real time t.
func (f ClockFault) At(t time.Time) time.Duration {
	if f.Rate == 0 || f.Rate == 1 {
		return f.Offset
	}
	return f.Offset + time.Duration((f.Rate-1)*float64(t.Sub(f.Since)))
}

// testClock is the hook's state.
type testClock struct {
	mu    sync.Mutex
	fault ClockFault
}

func newTestClock(path string) *testClock {
	if err := monotime.Check(); err != nil {
		panic(fmt.Sprintf("env: %v; the test clock hook cannot step the wall clock", err))
	}
	c := &testClock{fault: ClockFault{Rate: 1}}
	c.read(path)
	go func() {
		for range time.Tick(testClockPoll) {
			c.read(path)
		}
	}()
	return c
}

func (c *testClock) read(path string) {
	b, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return
	}
	f, err := ParseClockFault(string(b))
	if err != nil {
		return
	}
	c.mu.Lock()
	c.fault = f
	c.mu.Unlock()
}

func (c *testClock) get() ClockFault {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fault
}

func (c *testClock) now() time.Time {
	f := c.get()
	rt := time.Now()
	shifted := rt.Add(f.At(rt))
	if f.WallStep == 0 {
		return shifted
	}
	return wallStepped(shifted, f.WallStep)
}

// scale is how long d of the clock lasts in real time.
func (c *testClock) scale(d time.Duration) time.Duration {
	c.mu.Lock()
	rate := c.fault.Rate
	c.mu.Unlock()
	if rate == 1 || rate == 0 {
		return d
	}
	return time.Duration(float64(d) / rate)
}

// wallStepped is t with its wall reading moved by d and its monotonic reading kept.
func wallStepped(t time.Time, d time.Duration) time.Time {
	mono, ok := monotime.Of(t)
	if !ok {
		return t.Add(d)
	}
	return monotime.New(t.Round(0).Add(d), mono)
}
