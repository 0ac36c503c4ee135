package sim_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
)

// starveWorld is a client node c and a server node srv whose handler answers at once, on links
// with a fixed 1ms latency.
func starveWorld(seed uint64) (*sim.Sim, *sim.Node, *sim.Node) {
	s := sim.New(sim.Opts{Seed: seed})
	s.Net().SetDefault(sim.Link{Latency: sim.Fixed(time.Millisecond)})
	srv := s.AddNode("srv", func(n *sim.Node) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	})
	c := s.AddNode("c", nil)
	return s, c, srv
}

// get asks srv from c and returns how long the answer took by c's clock.
func get(t *testing.T, c *sim.Node) time.Duration {
	t0 := c.Env().Now()
	resp, err := c.Client().Get("http://srv/x")
	if err != nil {
		t.Error(err)
		return 0
	}
	_ = resp.Body.Close()
	return c.Env().Now().Sub(t0)
}

// A starved process handles no request until it gets the CPU: the handler of a request that
// arrives while the server starves runs the starvation late, and the answer comes that late.
func TestStarvedNodeAnswersLate(t *testing.T) {
	s, c, srv := starveWorld(1)
	var fresh, starved, after time.Duration
	s.Spawn(c, "client", func() {
		_ = c.Env().Sleep(context.Background(), time.Second)
		fresh = get(t, c)
		srv.SetStarve(500 * time.Millisecond)
		starved = get(t, c)
		srv.SetStarve(0)
		after = get(t, c)
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if fresh != 2*time.Millisecond || starved != 502*time.Millisecond || after != 2*time.Millisecond {
		t.Fatalf("round trips %v / %v starved / %v after; want 2ms, 502ms, 2ms", fresh, starved, after)
	}
}

// A starved client hears its answer late too: the answer's arrival wakes its task from outside.
func TestStarvedCallerHearsTheAnswerLate(t *testing.T) {
	s, c, _ := starveWorld(2)
	var took time.Duration
	s.Spawn(c, "client", func() {
		c.SetStarve(300 * time.Millisecond)
		took = get(t, c)
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if took != 302*time.Millisecond {
		t.Fatalf("round trip of a starved caller %v, want 302ms (the answer's wake-up held 300ms)", took)
	}
}

// The starvation ends: a timer armed while starved fires at its own due instant, and one that
// came due during the starvation fires as the starvation ends, not the starvation's delay after
// it came due.
func TestTimersAfterTheStarvationEnds(t *testing.T) {
	s, c, _ := starveWorld(3)
	var armedWoke, overdueWoke time.Duration
	c.SetStarve(10 * time.Second)
	s.At(12*time.Second, func() { c.SetStarve(0) })
	// Spawned at 0 while starved: runs at 10s, arms a 5s timer (due 15s, after the end).
	s.Spawn(c, "armed-while-starved", func() {
		_ = c.Env().Sleep(context.Background(), 5*time.Second)
		armedWoke = s.Elapsed()
	})
	// Spawned at 0, runs at 10s, sleeps 1s: due at 11s, during the starvation; held until 21s
	// if the starvation lasted, released at its end (12s).
	s.Spawn(c, "overdue", func() {
		_ = c.Env().Sleep(context.Background(), time.Second)
		overdueWoke = s.Elapsed()
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if armedWoke != 15*time.Second || overdueWoke != 12*time.Second {
		t.Fatalf("armed while starved woke at %v (want 15s, its due instant); overdue woke at %v (want 12s, the end)", armedWoke, overdueWoke)
	}
}

// A timer armed before the starvation and due during it is held too (a stopped process runs
// nothing), and a context's deadline passes on time by the node's clock.
func TestStarvationHoldsTimersArmedBefore(t *testing.T) {
	s, c, _ := starveWorld(4)
	var woke time.Duration
	var lateBy time.Duration
	s.Spawn(c, "sleeper", func() {
		ctx, cancel := c.Env().WithTimeout(context.Background(), time.Second)
		defer cancel()
		dl, _ := ctx.Deadline()
		_ = c.Env().Sleep(ctx, time.Hour)
		woke = s.Elapsed()
		lateBy = c.Env().Now().Sub(dl)
	})
	s.At(500*time.Millisecond, func() { c.SetStarve(2 * time.Second) })
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if woke != 3*time.Second || lateBy != 2*time.Second {
		t.Fatalf("woke at %v, %v after its deadline; want 3s, 2s", woke, lateBy)
	}
}

// What a starved node's own running task wakes runs in its turn: the node has the CPU then.
func TestStarvedNodesOwnWakeUpsAreNotHeld(t *testing.T) {
	s, c, _ := starveWorld(5)
	e := c.Env()
	sig := e.NewSignal()
	var heard time.Duration
	s.Spawn(c, "waiter", func() {
		_ = sig.Wait(context.Background(), sig.Seq())
		heard = s.Elapsed()
	})
	s.Spawn(c, "notifier", func() {
		_ = e.Sleep(context.Background(), time.Second)
		c.SetStarve(400 * time.Millisecond)
		_ = e.Sleep(context.Background(), time.Second) // due 2s, runs at 2.4s
		sig.Notify()
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if heard != 2400*time.Millisecond {
		t.Fatalf("the waiter heard the node's own signal at %v, want 2.4s (with the notifier)", heard)
	}
}

// A held task of a node that crashes unwinds (its defers run) and never runs on.
func TestHeldTaskOfACrashedNodeUnwinds(t *testing.T) {
	s, c, _ := starveWorld(6)
	var unwound, ranOn bool
	s.Spawn(c, "sleeper", func() {
		defer func() { unwound = true }()
		_ = c.Env().Sleep(context.Background(), time.Second)
		ranOn = true
	})
	s.At(500*time.Millisecond, func() { c.SetStarve(time.Hour) })
	s.At(2*time.Second, func() { c.Crash() })
	s.At(3*time.Second, func() { c.SetStarve(0) })
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if !unwound || ranOn {
		t.Fatalf("unwound %v, ran on %v; want true, false", unwound, ranOn)
	}
}

// A longer starvation holds each held wake-up its delay after it came due; a shorter one lets
// those already past it go at once.
func TestStarvationChangesRearmHeldWakeUps(t *testing.T) {
	s, c, _ := starveWorld(7)
	var woke [2]time.Duration
	for i, d := range []time.Duration{time.Second, 2 * time.Second} {
		s.Spawn(c, "sleeper", func() {
			_ = c.Env().Sleep(context.Background(), d)
			woke[i] = s.Elapsed()
		})
	}
	s.At(500*time.Millisecond, func() { c.SetStarve(5 * time.Second) }) // held to 6s and 7s
	s.At(2500*time.Millisecond, func() { c.SetStarve(time.Second) })    // 2.5s (past 2s) and 3s
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if woke != [2]time.Duration{2500 * time.Millisecond, 3 * time.Second} {
		t.Fatalf("woke at %v, want [2.5s 3s]", woke)
	}
}
