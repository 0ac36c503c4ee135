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
	"unsafe"
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
	if err := checkMonoLayout(); err != nil {
		panic(err)
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

// timeLayout mirrors time.Time: with the hasMonotonic bit set, wall holds 33 bits of seconds
// since 1885-01-01 and 30 bits of nanoseconds, and ext the monotonic reading.
type timeLayout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

const (
	hasMonotonic = 1 << 63
	nsecShift    = 30
)

var epoch1885 = time.Date(1885, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// wallStepped is t with its wall reading moved by d and its monotonic reading kept (time.Time
// has no constructor for that: the fields are written as the time package lays them out).
func wallStepped(t time.Time, d time.Duration) time.Time {
	l := (*timeLayout)(unsafe.Pointer(&t))
	if l.wall&hasMonotonic == 0 {
		return t.Add(d)
	}
	mono := l.ext
	w := t.Round(0).Add(d)
	sec := w.Unix() - epoch1885
	if sec < 0 || sec >= 1<<33 {
		return w
	}
	out := w
	o := (*timeLayout)(unsafe.Pointer(&out))
	o.wall = hasMonotonic | uint64(sec)<<nsecShift | uint64(w.Nanosecond())
	o.ext = mono
	return out
}

// checkMonoLayout proves wallStepped against the time package once: the wall moves, durations
// between readings do not.
func checkMonoLayout() error {
	if unsafe.Sizeof(time.Time{}) != unsafe.Sizeof(timeLayout{}) {
		return fmt.Errorf("env: time.Time changed layout; the test clock hook cannot step the wall clock")
	}
	a := time.Now()
	b := wallStepped(a, time.Hour)
	if b.Sub(a) != 0 || b.Round(0).Sub(a.Round(0)) != time.Hour || !b.After(a.Add(-1)) || b.Location() != a.Location() {
		return fmt.Errorf("env: time.Time's monotonic reading does not work as expected (%v, %v); the test clock hook cannot step the wall clock", a, b)
	}
	return nil
}
