package env

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The test clock hook: a drift offset moves both readings, a wall step moves only the wall
// reading (durations inside the process do not see it), and a file that does not parse
// leaves the clock alone.
func TestTestClockHookOffsetsAndSteps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	t.Setenv(TestClockFileEnv, path)
	e := Real(slog.New(slog.DiscardHandler))
	write := func(f ClockFault) {
		t.Helper()
		if err := os.WriteFile(path, []byte(f.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for e.(*realEnv).clock.get().String() != f.String() {
			if ctx.Err() != nil {
				t.Fatalf("the hook did not read %v", f)
			}
			time.Sleep(time.Millisecond)
		}
	}
	near := func(got, want time.Duration) bool { return got > want-time.Second && got < want+time.Second }

	before := e.Now()
	write(ClockFault{Offset: time.Hour, Rate: 1, Since: time.Now()})
	after := e.Now()
	if d := after.Sub(before); !near(d, time.Hour) {
		t.Errorf("offset 1h: a duration across it reads %v, want about 1h (drift moves both readings)", d)
	}
	if d := after.Round(0).Sub(time.Now().Round(0)); !near(d, time.Hour) {
		t.Errorf("offset 1h: wall reading %v ahead of real time, want about 1h", d)
	}

	write(ClockFault{Offset: time.Hour, Rate: 1, Since: time.Now(), WallStep: 24 * time.Hour})
	stepped := e.Now()
	if d := stepped.Sub(after); d < 0 || d > time.Second {
		t.Errorf("wall step 24h: a duration across it reads %v, want the real time between (the monotonic reading does not step)", d)
	}
	if d := stepped.Round(0).Sub(time.Now().Round(0)); !near(d, 25*time.Hour) {
		t.Errorf("wall step 24h: wall reading %v ahead of real time, want about 25h", d)
	}

	if err := os.WriteFile(path, []byte("not a clock"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * testClockPoll)
	if d := e.Now().Round(0).Sub(time.Now().Round(0)); !near(d, 25*time.Hour) {
		t.Errorf("after an unparsable file the clock reads %v ahead, want it unchanged (25h)", d)
	}
}

func TestClockFaultParse(t *testing.T) {
	f := ClockFault{Offset: -3 * time.Second, Rate: 1.5, Since: time.Unix(0, 1234567), WallStep: time.Minute}
	got, err := ParseClockFault(f.String())
	if err != nil || got.String() != f.String() || !got.Since.Equal(f.Since) {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, f)
	}
	for _, bad := range []string{"", "1 2 3", "x 1 0 0", "0 0 0 0", "0 -1 0 0", "0 1 0 0 0"} {
		if _, err := ParseClockFault(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestTestClockRateScalesSleeps(t *testing.T) {
	c := &testClock{fault: ClockFault{Rate: 2}}
	if got := c.scale(time.Second); got != 500*time.Millisecond {
		t.Errorf("rate 2: 1s of the clock lasts %v of real time, want 500ms", got)
	}
}
