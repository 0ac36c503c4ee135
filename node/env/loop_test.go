package env_test

import (
	"context"
	"fmt"
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
	runLoopIn(t, d, end, nil, setup)
}

// runLoopIn is runLoop with the loop and the duties on wrap(the node's Env) (nil: the Env).
func runLoopIn(t *testing.T, d, end time.Duration, wrap func(env.Env) env.Env, setup func(s *sim.Sim, e env.Env) []*env.Duty) {
	t.Helper()
	s := sim.New(sim.Opts{Seed: 1})
	n := s.AddNode("n", nil)
	e := n.Env()
	if wrap != nil {
		e = wrap(e)
	}
	l := env.NewLoop(e)
	l.Add(setup(s, e)...)
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

// A timed duty sees how late the loop's timer fires: on a node that gets the CPU 300 ms after
// every wake-up from outside it (a starved node), every probe measures 300 ms when the timer
// that wakes the loop was set for another duty due 200 ms before it (its lateness is that
// timer's), and 200 ms while another duty is woken from outside every 100 ms (a timed duty does
// not run on those wake-ups; the one at 0.9 s runs the loop at 1.2 s, where it sees that the
// probe's timer, due at 1 s, has fired).
func TestLoopTimedDutySeesTheTimersLateness(t *testing.T) {
	for _, c := range []struct {
		name  string
		lag   time.Duration
		other func(s *sim.Sim, e env.Env) *env.Duty
	}{
		{"woken every 100ms", 200 * time.Millisecond, func(s *sim.Sim, e env.Env) *env.Duty {
			other := &env.Duty{Name: "other", WhenWoken: true, Run: func(context.Context, time.Time) time.Time { return time.Time{} }}
			for i := 1; i < 60; i++ {
				s.At(time.Duration(i)*100*time.Millisecond, other.Wake)
			}
			return other
		}},
		{"a timer 200ms earlier", 300 * time.Millisecond, func(s *sim.Sim, e env.Env) *env.Duty {
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
				if lag != c.lag {
					t.Fatalf("probe lags %v, want %v each", lags, c.lag)
				}
			}
		})
	}
}

// busyClock is an Env whose clock also counts the time its duties' runs take (spent), as a
// real process's clock does; the simulator's virtual time stands still while a task runs.
type busyClock struct {
	env.Env
	spent time.Duration
}

func (c *busyClock) Now() time.Time { return c.Env.Now().Add(c.spent) }

// A duty that came due while the loop ran another duty runs as soon as that run ends, not when
// the loop's timer, aimed at a later duty, fires: "soon" comes back due 200 ms after its first
// run ends, and the run the loop does next ("busy", woken by soon) takes 300 ms, while the timer
// is aimed at a duty due at 5 s.
func TestLoopRunsADutyThatCameDueWhileItRan(t *testing.T) {
	var runs []time.Duration
	clock := &busyClock{}
	wrap := func(e env.Env) env.Env { clock.Env = e; return clock }
	runLoopIn(t, 6*time.Second, 0, wrap, func(s *sim.Sim, e env.Env) []*env.Duty {
		busy := &env.Duty{Name: "busy", WhenWoken: true, Run: func(context.Context, time.Time) time.Time {
			clock.spent += 300 * time.Millisecond
			return time.Time{}
		}}
		soon := &env.Duty{Name: "soon", Blocks: true, Run: func(ctx context.Context, _ time.Time) time.Time {
			runs = append(runs, s.Elapsed())
			if len(runs) > 1 {
				return time.Time{}
			}
			_ = e.Sleep(ctx, 100*time.Millisecond)
			busy.Wake()
			return e.Now().Add(200 * time.Millisecond)
		}}
		later := &env.Duty{Name: "later", First: 5 * time.Second, Run: func(context.Context, time.Time) time.Time { return time.Time{} }}
		return []*env.Duty{soon, busy, later}
	})
	// Virtual time: soon's first run ends at 100 ms, and busy's 300 ms do not move it.
	if want := secs(0, 0.1); !slices.Equal(runs, want) {
		t.Fatalf("soon ran at %v (virtual), want %v: its second run waited for a later timer", runs, want)
	}
}

// countingEnv counts the timeout contexts made and re-armed through it; it re-arms only when the
// Env under it can (the simulator's).
type countingEnv struct {
	env.Env
	made, rearmed int
}

func (c *countingEnv) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c.made++
	return c.Env.WithTimeout(ctx, d)
}

func (c *countingEnv) Rearm(ctx, parent context.Context, d time.Duration) bool {
	r, ok := c.Env.(interface {
		Rearm(ctx, parent context.Context, d time.Duration) bool
	})
	if ok && r.Rearm(ctx, parent, d) {
		c.rearmed++
		return true
	}
	return false
}

// The loop's timer is one context, armed again in place at each wake-up, where the Env can do
// that; where it cannot, a new one each time. The duty runs at the same instants either way.
func TestLoopRearmsItsTimerInPlace(t *testing.T) {
	ticks := func(wrap func(env.Env) env.Env) []time.Duration {
		var at []time.Duration
		runLoopIn(t, 10500*time.Millisecond, 0, wrap, func(s *sim.Sim, e env.Env) []*env.Duty {
			return []*env.Duty{{Name: "tick", Timed: true, First: time.Second, Run: func(_ context.Context, due time.Time) time.Time {
				at = append(at, s.Elapsed())
				return due.Add(time.Second)
			}}}
		})
		return at
	}
	counted := &countingEnv{}
	got := ticks(func(e env.Env) env.Env { counted.Env = e; return counted })
	if want := secs(1, 2, 3, 4, 5, 6, 7, 8, 9, 10); !slices.Equal(got, want) {
		t.Fatalf("ticks at %v, want %v", got, want)
	}
	if counted.made != 1 || counted.rearmed != 10 {
		t.Fatalf("%d timer contexts made and %d re-armed, want 1 made and 10 re-armed (one per tick)", counted.made, counted.rearmed)
	}
	plain := &struct{ env.Env }{} // no Rearm
	if again := ticks(func(e env.Env) env.Env { plain.Env = e; return plain }); !slices.Equal(again, got) {
		t.Fatalf("without re-arming: ticks at %v, want %v", again, got)
	}
}

// BenchmarkLoopWakeUps is the duty loop's cost per wake-up in the simulator, as a fleet pays it:
// 1,000 loops, each with a one-second timed probe and a five-second duty, for a virtual minute.
// Run it with -benchmem: allocations per wake-up are the figure that does not vary with load.
func BenchmarkLoopWakeUps(b *testing.B) {
	b.ReportAllocs()
	var wakes int
	for range b.N {
		s := sim.New(sim.Opts{Seed: 1})
		for i := range 1000 {
			n := s.AddNode(fmt.Sprint("n", i), nil)
			e := n.Env()
			l := env.NewLoop(e)
			l.Add(&env.Duty{Name: "probe", Timed: true, First: time.Second, Run: func(_ context.Context, due time.Time) time.Time {
				wakes++
				return due.Add(time.Second)
			}}, &env.Duty{Name: "beat", Run: func(context.Context, time.Time) time.Time { return e.Now().Add(5 * time.Second) }})
			s.Spawn(n, "loop", func() { l.Run(n.Ctx()) })
		}
		if err := s.Run(time.Minute); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(wakes), "ns/wake-up")
	b.ReportMetric(float64(wakes)/float64(b.N), "wake-ups/op")
}

// notifyCounter is an Env whose signals count their Notify calls (the loop's wake-ups by
// duties), and which counts the tasks started through it.
type notifyCounter struct {
	env.Env
	notified, started int
}

func (c *notifyCounter) NewSignal() env.Signal { return &countedSignal{c.Env.NewSignal(), c} }

func (c *notifyCounter) Go(ctx context.Context, name string, fn func(context.Context)) {
	c.started++
	c.Env.Go(ctx, name, fn)
}

type countedSignal struct {
	env.Signal
	c *notifyCounter
}

func (s *countedSignal) Notify() { s.c.notified++; s.Signal.Notify() }

// A blocking run that ends next due no sooner than the loop's pending timer leaves the loop
// asleep (that timer wakes it in time), and the duties run at the same instants: "beat" takes
// 100 ms and comes back 3 s after it starts, while "tick" keeps a timer armed every second. A
// lone blocking duty (no timer armed while it runs) still wakes the loop at its end.
func TestLoopSleepsThroughBlockingRunsDueAfterItsTimer(t *testing.T) {
	var ticks, beats []time.Duration
	counted := &notifyCounter{}
	runLoopIn(t, 9500*time.Millisecond, 0, func(e env.Env) env.Env { counted.Env = e; return counted }, func(s *sim.Sim, e env.Env) []*env.Duty {
		return []*env.Duty{
			{Name: "tick", Timed: true, First: time.Second, Run: func(_ context.Context, due time.Time) time.Time {
				ticks = append(ticks, s.Elapsed())
				return due.Add(time.Second)
			}},
			{Name: "beat", Blocks: true, Run: func(ctx context.Context, _ time.Time) time.Time {
				beats = append(beats, s.Elapsed())
				next := e.Now().Add(3 * time.Second)
				_ = e.Sleep(ctx, 100*time.Millisecond)
				return next
			}},
		}
	})
	if want := secs(1, 2, 3, 4, 5, 6, 7, 8, 9); !slices.Equal(ticks, want) {
		t.Fatalf("tick ran at %v, want %v", ticks, want)
	}
	if want := secs(0, 3, 6, 9); !slices.Equal(beats, want) {
		t.Fatalf("beat ran at %v, want %v", beats, want)
	}
	if counted.notified != 0 {
		t.Fatalf("the blocking runs woke the loop %d times, want 0 (its timer was due first each time)", counted.notified)
	}

	var lone []time.Duration
	runLoop(t, 8*time.Second, 0, func(s *sim.Sim, e env.Env) []*env.Duty {
		return []*env.Duty{{Name: "lone", Blocks: true, Run: func(ctx context.Context, _ time.Time) time.Time {
			lone = append(lone, s.Elapsed())
			_ = e.Sleep(ctx, 1500*time.Millisecond)
			return e.Now().Add(2 * time.Second)
		}}}
	})
	if want := secs(0, 3.5, 7); !slices.Equal(lone, want) {
		t.Fatalf("a lone blocking duty ran at %v, want %v: its end must wake a loop with no timer", lone, want)
	}
}

// A blocking duty's Quick runs in the loop's task, and a task is started only for the runs it
// declines: every second run of "keeper" has nothing to wait for. The runs keep their instants.
func TestLoopQuickRunsWithoutATask(t *testing.T) {
	var quick, slow []time.Duration
	counted := &notifyCounter{}
	runLoopIn(t, 8500*time.Millisecond, 0, func(e env.Env) env.Env { counted.Env = e; return counted }, func(s *sim.Sim, e env.Env) []*env.Duty {
		return []*env.Duty{{Name: "keeper", Blocks: true,
			Quick: func(_ context.Context, _ time.Time) (time.Time, bool) {
				if (len(quick)+len(slow))%2 == 1 {
					return time.Time{}, false
				}
				quick = append(quick, s.Elapsed())
				return e.Now().Add(time.Second), true
			},
			Run: func(ctx context.Context, _ time.Time) time.Time {
				slow = append(slow, s.Elapsed())
				_ = e.Sleep(ctx, 500*time.Millisecond)
				return e.Now().Add(time.Second)
			}}}
	})
	if want := secs(0, 2.5, 5, 7.5); !slices.Equal(quick, want) {
		t.Fatalf("quick runs at %v, want %v", quick, want)
	}
	if want := secs(1, 3.5, 6, 8.5); !slices.Equal(slow, want) {
		t.Fatalf("blocking runs at %v, want %v", slow, want)
	}
	if counted.started != len(slow) {
		t.Fatalf("%d tasks started for %d blocking runs, want one each (none for a quick run)", counted.started, len(slow))
	}
}

// The loop does not ask a duty it saw due later (the loop's seen) until a Wake: a duty due in
// an hour, woken at 2.5 s from outside the loop and at 4 s by another duty's run in the loop's
// task, runs each time at once, in the pass that woke it, before the duty after it; between
// wakes it does not run while a one-second duty wakes the loop.
func TestLoopRunsAWokenDutyItSawDueLater(t *testing.T) {
	var runs []string
	log := func(s *sim.Sim, name string) { runs = append(runs, fmt.Sprintf("%s@%v", name, s.Elapsed())) }
	runLoop(t, 5500*time.Millisecond, 0, func(s *sim.Sim, e env.Env) []*env.Duty {
		late := &env.Duty{Name: "late", Run: func(ctx context.Context, due time.Time) time.Time {
			log(s, "late")
			return e.Now().Add(time.Hour)
		}}
		var waker *env.Duty
		waker = &env.Duty{Name: "waker", First: time.Second, Run: func(ctx context.Context, due time.Time) time.Time {
			log(s, "waker")
			if s.Elapsed() == 4*time.Second {
				late.Wake()
			}
			return e.Now().Add(time.Second)
		}}
		after := &env.Duty{Name: "after", First: time.Second, Run: func(ctx context.Context, due time.Time) time.Time {
			log(s, "after")
			return e.Now().Add(time.Second)
		}}
		s.At(2500*time.Millisecond, late.Wake)
		return []*env.Duty{waker, late, after}
	})
	want := []string{"late@0s",
		"waker@1s", "after@1s", "waker@2s", "after@2s", "late@2.5s", "waker@3s", "after@3s",
		"waker@4s", "late@4s", "after@4s", "waker@5s", "after@5s"}
	if !slices.Equal(runs, want) {
		t.Fatalf("runs %v\nwant %v", runs, want)
	}
}
