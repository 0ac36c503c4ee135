package capacity_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// countingEnv counts the wake-ups of the signals it makes: Waits that return because the signal
// was notified while they waited.
type countingEnv struct {
	env.Env
	wakes *int
}

func (e countingEnv) NewSignal() env.Signal { return countingSignal{e.Env.NewSignal(), e.wakes} }

type countingSignal struct {
	env.Signal
	wakes *int
}

func (s countingSignal) Wait(ctx context.Context, seen uint64) error {
	already := s.Seq() != seen
	err := s.Signal.Wait(ctx, seen)
	if err == nil && !already {
		*s.wakes++
	}
	return err
}

// orderedAPI serves the capacity API over store with the ordered queue (weighted: equal
// weights), unauthenticated: workers name themselves.
func orderedAPI(store *capacity.Memory, e env.Env, weighted bool) http.Handler {
	api := capacity.NewAPI(store, store, e, nil).Ordered()
	if weighted {
		api.Weighted(map[string]int{})
	}
	return serveAPIAs(api, "")
}

// TestQueueWakesOnlyTheHead: with many acquires waiting in a cluster's ordered queue (cap 2), a
// release wakes the head only, and the head's leaving wakes the next one only; so n grants in
// turn cost about 2n wake-ups, not one per waiter per release (about n² here). The grants keep
// arrival order (weighted: equal weights, one acquire per worker), and two slots freed at once
// go to the first two waiters in one round of wake-ups, not at the second one's next poll.
func TestQueueWakesOnlyTheHead(t *testing.T) {
	for _, weighted := range []bool{false, true} {
		t.Run(fmt.Sprintf("weighted=%v", weighted), func(t *testing.T) { checkWakesOnlyTheHead(t, weighted) })
	}
}

func checkWakesOnlyTheHead(t *testing.T, weighted bool) {
	const n = 20
	const holdFor = 100 * time.Millisecond
	s := sim.New(sim.Opts{Seed: 3})
	s.Net().SetDefault(sim.Link{Latency: sim.Fixed(time.Millisecond)})
	store := capacity.NewMemory()
	wakes := 0
	s.AddNode("cp", func(node *sim.Node) http.Handler {
		return orderedAPI(store, countingEnv{node.Env(), &wakes}, weighted)
	})
	var order []string
	grantedAt := map[string]time.Duration{}
	hold := func(n *sim.Node, name string, wait time.Duration, slots int) {
		r := capacity.NewRemote("http://cp", n.Client(), nil).WithAcquireWait(wait)
		var refs []capacity.LeaseRef
		for range slots {
			l, err := r.Acquire(n.Ctx(), "c", name, 2, time.Minute, time.Time{})
			if err != nil {
				panic(name + ": " + err.Error())
			}
			refs = append(refs, l.Ref())
		}
		order, grantedAt[name] = append(order, name), s.Elapsed()
		_ = n.Env().Sleep(n.Ctx(), holdFor)
		if _, err := r.ReleaseBatch(n.Ctx(), refs); err != nil {
			panic(err)
		}
	}
	first := s.AddNode("w0", nil)
	s.Spawn(first, "hold", func() { hold(first, "w0", 0, 2) }) // the whole cap, freed at once
	for i := range n {
		name := fmt.Sprintf("w%d", i+1)
		node := s.AddNode(name, nil)
		s.At(time.Duration(10+i)*time.Millisecond, func() { // arrive in name order, after w0's grant
			s.Spawn(node, "wait", func() { hold(node, name, 30*time.Second, 1) })
		})
	}
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(order) != n+1 {
		t.Fatalf("granted %v, want all %d", order, n+1)
	}
	for i := 2; i <= n; i++ { // two slots: a grant may come at the same instant as the one before
		prev, this := fmt.Sprintf("w%d", i-1), fmt.Sprintf("w%d", i)
		if grantedAt[this] < grantedAt[prev] {
			t.Fatalf("%s granted at %v, before %s (arrived earlier) at %v", this, grantedAt[this], prev, grantedAt[prev])
		}
	}
	if gap := grantedAt["w2"] - grantedAt["w1"]; gap > 10*time.Millisecond {
		t.Fatalf("w1 granted at %v, w2 at %v: the second of two freed slots waited for its poll instead of being woken",
			grantedAt["w1"], grantedAt["w2"])
	}
	if wakes > 2*n {
		t.Fatalf("%d wake-ups for %d grants in turn, want at most %d: waiters other than the head were woken", wakes, n, 2*n)
	}
	t.Logf("%d wake-ups for %d grants", wakes, n)
}

// TestQueueHeadIsGrantedAtTheRelease: in the ordered queue (cap 1, three acquires waiting), each
// release that reaches the control plane grants the next waiter at once, within the round trips
// of the release and of the grant's answer (2 ms here), not at a poll: a waiter that becomes
// the head is woken by the grant of the one before (leave), and the head by the release; the
// 250 ms poll (queuePollEvery) is only for slots freed where no wake-up reaches (an expiry,
// another replica on a store that cannot announce it).
func TestQueueHeadIsGrantedAtTheRelease(t *testing.T) {
	for _, weighted := range []bool{false, true} {
		t.Run(fmt.Sprintf("weighted=%v", weighted), func(t *testing.T) {
			s := sim.New(sim.Opts{Seed: 5})
			s.Net().SetDefault(sim.Link{Latency: sim.Fixed(time.Millisecond)})
			store := capacity.NewMemory()
			s.AddNode("cp", func(node *sim.Node) http.Handler { return orderedAPI(store, node.Env(), weighted) })
			grantedAt, releasedAt := map[string]time.Duration{}, map[string]time.Duration{}
			hold := func(n *sim.Node, name string, wait time.Duration) {
				r := capacity.NewRemote("http://cp", n.Client(), nil).WithAcquireWait(wait)
				l, err := r.Acquire(n.Ctx(), "c", name, 1, time.Minute, time.Time{})
				if err != nil {
					panic(name + ": " + err.Error())
				}
				grantedAt[name] = s.Elapsed()
				_ = n.Env().Sleep(n.Ctx(), 100*time.Millisecond)
				releasedAt[name] = s.Elapsed()
				if _, err := r.ReleaseBatch(n.Ctx(), []capacity.LeaseRef{l.Ref()}); err != nil {
					panic(err)
				}
			}
			names := []string{"w0", "w1", "w2", "w3"}
			for i, name := range names {
				node := s.AddNode(name, nil)
				s.At(time.Duration(i)*10*time.Millisecond, func() { s.Spawn(node, "hold", func() { hold(node, name, 30*time.Second) }) })
			}
			if err := s.Run(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(names); i++ {
				prev, this := names[i-1], names[i]
				if _, ok := grantedAt[this]; !ok {
					t.Fatalf("%s never granted", this)
				}
				if gap := grantedAt[this] - releasedAt[prev]; gap > 2*time.Millisecond {
					t.Errorf("%s released at %v, %s (waiting at the head) granted at %v: %v later, want the two round trips (2ms)",
						prev, releasedAt[prev], this, grantedAt[this], gap)
				}
			}
		})
	}
}

// TestQueueHeadIsGrantedAtTheSweep: a slot the sweeper frees (its holder stopped renewing: the
// lease expired) goes to the ordered queue's head in the round that frees it (API.Freed), not at
// the head's next poll, up to 250 ms later.
func TestQueueHeadIsGrantedAtTheSweep(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 6})
	s.Net().SetDefault(sim.Link{Latency: sim.Fixed(time.Millisecond)})
	store := capacity.NewMemory()
	var freedAt, grantedAt time.Duration
	s.AddNode("cp", func(node *sim.Node) http.Handler {
		api := capacity.NewAPI(store, store, node.Env(), nil).Ordered()
		sw := &capacity.Sweeper{Env: node.Env(), Store: store, Locks: store, Owner: "cp", Every: 2 * time.Second,
			OnFreed: func(refs []capacity.LeaseRef) {
				freedAt = s.Elapsed()
				api.Freed(refs)
			}}
		node.Env().Go(node.Ctx(), "sweeper", sw.Run)
		return serveAPIAs(api, "")
	})
	gone, waiting := s.AddNode("gone", nil), s.AddNode("waiting", nil)
	s.Spawn(gone, "hold", func() { // granted, then never renewed nor released: its process died
		if _, err := capacity.NewRemote("http://cp", gone.Client(), nil).Acquire(gone.Ctx(), "c", "gone", 1, time.Second, time.Time{}); err != nil {
			panic(err)
		}
	})
	s.At(100*time.Millisecond, func() {
		s.Spawn(waiting, "wait", func() {
			r := capacity.NewRemote("http://cp", waiting.Client(), nil).WithAcquireWait(30 * time.Second)
			if _, err := r.Acquire(waiting.Ctx(), "c", "waiting", 1, time.Minute, time.Time{}); err != nil {
				panic(err)
			}
			grantedAt = s.Elapsed()
		})
	})
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if freedAt == 0 || grantedAt == 0 || grantedAt-freedAt > time.Millisecond {
		t.Fatalf("the sweeper freed the expired lease at %v, the waiting head was granted at %v: want within the answer's trip (1ms)", freedAt, grantedAt)
	}
}
