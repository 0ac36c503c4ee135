package env_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// runLoop runs the duties setup returns in one loop on a simulated node for d of virtual time,
// the loop's context ending at end (0: never).
func runLoop(t *testing.T, d, end time.Duration, setup func(s *sim.Sim, e env.Env) []*env.Duty) {
	t.Helper()
	s := sim.New(sim.Opts{Seed: 1})
	n := s.AddNode("n", nil)
	l := env.NewLoop(n.Env())
	l.Add(setup(s, n.Env())...)
	s.Spawn(n, "loop", func() {
		ctx, cancel := n.Env().WithCancel(n.Ctx())
		if end > 0 {
			s.At(end, cancel)
		}
		l.Run(ctx)
	})
	if err := s.Run(d); err != nil {
		t.Fatal(err)
	}
}

func secs(ds ...float64) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = time.Duration(d * float64(time.Second))
	}
	return out
}

// A duty whose runs block (a hung round trip) runs beside the others: a one-second duty keeps
// its period while a blocking one takes 1.5 s per run and comes back 2 s after each run ends.
func TestLoopDutiesKeepTheirOwnPeriods(t *testing.T) {
	var ticks, slow []time.Duration
	runLoop(t, 10400*time.Millisecond, 0, func(s *sim.Sim, e env.Env) []*env.Duty {
		return []*env.Duty{
			{Name: "tick", First: time.Second, Run: func(ctx context.Context, due time.Time) time.Time {
				ticks = append(ticks, s.Elapsed())
				return e.Now().Add(time.Second)
			}},
			{Name: "slow", Blocks: true, Run: func(ctx context.Context, due time.Time) time.Time {
				slow = append(slow, s.Elapsed())
				_ = e.Sleep(ctx, 1500*time.Millisecond)
				return e.Now().Add(2 * time.Second)
			}},
		}
	})
	if want := secs(1, 2, 3, 4, 5, 6, 7, 8, 9, 10); !slices.Equal(ticks, want) {
		t.Fatalf("the 1 s duty ran at %v, want %v", ticks, want)
	}
	if want := secs(0, 3.5, 7); !slices.Equal(slow, want) {
		t.Fatalf("the blocking duty ran at %v, want %v", slow, want)
	}
}

// A duty that waits for wakes runs only when woken; a wake during its blocking run makes it run
// once more when that run ends, never two runs at once; Stop runs when the loop's context ends.
func TestLoopWakeRunsOnceMoreAfterABlockingRun(t *testing.T) {
	var starts, stops []time.Duration
	running, most := 0, 0
	runLoop(t, 10*time.Second, 5*time.Second, func(s *sim.Sim, e env.Env) []*env.Duty {
		flush := &env.Duty{Name: "flush", Blocks: true, WhenWoken: true,
			Run: func(ctx context.Context, due time.Time) time.Time {
				starts = append(starts, s.Elapsed())
				running++
				most = max(most, running)
				_ = e.Sleep(ctx, time.Second)
				running--
				return time.Time{}
			},
			Stop: func(ctx context.Context) { stops = append(stops, s.Elapsed()) },
		}
		for _, at := range secs(2, 2.5, 2.6) {
			s.At(at, flush.Wake)
		}
		return []*env.Duty{flush}
	})
	if want := secs(2, 3); !slices.Equal(starts, want) || most != 1 {
		t.Fatalf("runs started at %v (at most %d at once), want %v one at a time", starts, most, want)
	}
	if want := secs(5); !slices.Equal(stops, want) {
		t.Fatalf("Stop ran at %v, want %v (when the context ended)", stops, want)
	}
}

// A timed duty sees how late the loop's timer fires: on a node whose timers fire 300 ms late,
// every probe measures 300 ms, while another duty wakes the loop every 100 ms (a timed duty does
// not run on those), and when the timer that wakes it was set for another duty due 200 ms
// before it (its lateness is that timer's).
func TestLoopTimedDutySeesTheTimersLateness(t *testing.T) {
	for _, c := range []struct {
		name  string
		other func(s *sim.Sim, e env.Env) *env.Duty
	}{
		{"woken every 100ms", func(s *sim.Sim, e env.Env) *env.Duty {
			other := &env.Duty{Name: "other", WhenWoken: true, Run: func(context.Context, time.Time) time.Time { return time.Time{} }}
			for i := 1; i < 60; i++ {
				s.At(time.Duration(i)*100*time.Millisecond, other.Wake)
			}
			return other
		}},
		{"a timer 200ms earlier", func(s *sim.Sim, e env.Env) *env.Duty {
			return &env.Duty{Name: "early", First: 800 * time.Millisecond, Run: func(context.Context, time.Time) time.Time {
				return e.Now().Add(time.Second)
			}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var lags []time.Duration
			runLoop(t, 6*time.Second, 0, func(s *sim.Sim, e env.Env) []*env.Duty {
				s.Node("n").SetStarve(300 * time.Millisecond)
				probe := &env.Duty{Name: "probe", Timed: true, First: time.Second, Run: func(ctx context.Context, due time.Time) time.Time {
					lags = append(lags, e.Now().Sub(due))
					return e.Now().Add(time.Second)
				}}
				return []*env.Duty{c.other(s, e), probe}
			})
			if len(lags) < 3 {
				t.Fatalf("the probe ran %d times, want at least 3", len(lags))
			}
			for _, lag := range lags {
				if lag != 300*time.Millisecond {
					t.Fatalf("probe lags %v, want 300ms each", lags)
				}
			}
		})
	}
}
