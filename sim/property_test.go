package sim_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
	"pgregory.net/rapid"
)

// op is one step of a drawn task program.
type op struct {
	kind    string // sleep, notify, wait
	d       time.Duration
	timeout time.Duration // 0: no deadline
}

type outcome struct {
	op         op
	start, end time.Time
	from, to   int // global order of the op's start and end
	err        error
}

// TestEnvSemanticsProperty draws task programs of sleeps, timeouts, signal waits and notifies,
// runs them, and checks the Env's contract against each outcome: a sleep ends exactly when its
// duration or its deadline says, a wait ends with nil iff a notify happened while it waited,
// virtual time never runs backwards, and the same seed gives the same trace.
func TestEnvSemanticsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ms := func(label string) time.Duration {
			return time.Duration(rapid.IntRange(0, 50).Draw(rt, label)) * time.Millisecond
		}
		programs := make([][]op, rapid.IntRange(1, 5).Draw(rt, "tasks"))
		for i := range programs {
			for j := range rapid.IntRange(1, 6).Draw(rt, fmt.Sprint("ops", i)) {
				o := op{kind: rapid.SampledFrom([]string{"sleep", "notify", "wait"}).Draw(rt, fmt.Sprint("kind", i, j))}
				o.d = ms(fmt.Sprint("d", i, j))
				if rapid.Bool().Draw(rt, fmt.Sprint("hasTimeout", i, j)) || o.kind == "wait" {
					o.timeout = ms(fmt.Sprint("timeout", i, j)) + time.Millisecond
				}
				programs[i] = append(programs[i], o)
			}
		}
		seed := rapid.Uint64().Draw(rt, "seed")
		run := func() ([]outcome, []int, string) {
			s := sim.New(sim.Opts{Seed: seed})
			n := s.AddNode("n", nil)
			e := n.Env()
			sig := e.NewSignal()
			order := 0
			var outs []outcome
			var notifies []int
			last := e.Now()
			for i, prog := range programs {
				s.Spawn(n, fmt.Sprint("task", i), func() {
					for _, o := range prog {
						ctx, cancel := context.Background(), context.CancelFunc(func() {})
						if o.timeout > 0 {
							ctx, cancel = e.WithTimeout(ctx, o.timeout)
						}
						out := outcome{op: o, start: e.Now(), from: order}
						order++
						switch o.kind {
						case "sleep":
							out.err = e.Sleep(ctx, o.d)
						case "notify":
							notifies = append(notifies, order)
							order++
							sig.Notify()
						case "wait":
							out.err = sig.Wait(ctx, sig.Seq())
						}
						cancel()
						out.end, out.to = e.Now(), order
						order++
						if out.end.Before(last) {
							rt.Errorf("time ran backwards: %v after %v", out.end, last)
						}
						last = out.end
						outs = append(outs, out)
					}
				})
			}
			if err := s.Run(time.Minute); err != nil {
				rt.Fatal(err)
			}
			return outs, notifies, s.TraceHash()
		}
		outs, notifies, h1 := run()
		if _, _, h2 := run(); h1 != h2 {
			rt.Fatalf("same seed, hashes %s and %s", h1, h2)
		}
		for _, o := range outs {
			took := o.end.Sub(o.start)
			switch o.op.kind {
			case "sleep":
				switch {
				case o.op.timeout > 0 && o.op.timeout < o.op.d:
					if !errors.Is(o.err, context.DeadlineExceeded) || took != o.op.timeout {
						rt.Errorf("sleep %v under timeout %v: %v after %v", o.op.d, o.op.timeout, o.err, took)
					}
				case o.op.timeout == 0 || o.op.timeout > o.op.d:
					if o.err != nil || took != o.op.d {
						rt.Errorf("sleep %v (timeout %v): %v after %v", o.op.d, o.op.timeout, o.err, took)
					}
				}
			case "wait":
				notified := false
				for _, at := range notifies {
					notified = notified || (at > o.from && at < o.to)
				}
				switch {
				case o.err == nil && !notified:
					rt.Errorf("wait returned nil with no notify while waiting (took %v)", took)
				case o.err != nil && notified:
					rt.Errorf("wait missed a notify: %v", o.err)
				case o.err != nil && (!errors.Is(o.err, context.DeadlineExceeded) || took != o.op.timeout):
					rt.Errorf("wait with timeout %v: %v after %v", o.op.timeout, o.err, took)
				}
			}
		}
	})
}
