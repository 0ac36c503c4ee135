package capacity

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/sim"
)

// TestSweeperCountsGrantsOverTheCap: the sweeper's audit over a shared lease table that honest
// grants (under the cap the audit knows, raised and lowered at random, leases released at
// random) and a rogue writer's grants (a replica whose cap is higher, a store whose count
// drifted) fill. (A cap raised and lowered again between two rounds is not seen: the leases
// granted under the higher one would be counted.) A rogue grant made while the cluster held its cap or more is counted once, at
// the next round; an honest one never is, nor a round that finds nothing new, nor the leases
// held over a cap that was lowered under them.
func TestSweeperCountsGrantsOverTheCap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := sim.New(sim.Opts{Seed: 1})
		n := s.AddNode("cp", nil)
		var failure string
		fail := func(format string, args ...any) {
			if failure == "" {
				failure = fmt.Sprintf(format, args...)
			}
		}
		capNow := rapid.IntRange(1, 4).Draw(rt, "cap")
		ops := rapid.SliceOfN(rapid.IntRange(0, 5), 1, 40).Draw(rt, "ops")
		picks := rapid.SliceOfN(rapid.IntRange(0, 1000), len(ops), len(ops)).Draw(rt, "picks")
		s.Spawn(n, "test", func() {
			ctx, e := context.Background(), n.Env()
			m := NewMemory()
			metrics := NewMetrics(nil)
			sw := &Sweeper{Env: e, Store: m, Locks: m, Owner: "cp", Metrics: metrics,
				Limits: func(c string) (int, time.Duration, bool) { return capNow, time.Minute, c == "c" }}
			counted := func() int { return int(testutil.ToFloat64(metrics.OverCap.WithLabelValues("c"))) }
			round := func(what string, want int) {
				before := counted()
				if _, err := sw.SweepOnce(ctx, time.Minute); err != nil {
					panic(err)
				}
				if got := counted() - before; got != want {
					ls, _ := m.List(ctx, "c")
					fail("%s: the round counted %d over the cap, want %d (cap %d, held %d: %v)", what, got, want, capNow, len(ls), ls)
				}
			}
			var log []string
			for i, op := range ops {
				if failure != "" {
					return
				}
				held, _ := m.List(ctx, "c")
				switch op {
				case 0, 1: // an honest grant, under the cap
					_, err := m.Acquire(ctx, "c", fmt.Sprintf("w%d/s", picks[i]%3), capNow, time.Hour, e.Now())
					log = append(log, fmt.Sprintf("acquire(%v)", err))
				case 2: // a release
					if len(held) > 0 {
						l := held[picks[i]%len(held)]
						_ = m.Release(ctx, l.Ref())
						log = append(log, "release "+l.ID)
					}
				case 3: // a new cap (a config change), seen by a round before any other grant
					capNow = 1 + picks[i]%4
					log = append(log, fmt.Sprintf("cap %d", capNow))
					round(fmt.Sprint(log), 0)
				case 4: // a round
					round(fmt.Sprint(log), 0)
					log = nil
				case 5: // a rogue grant, the audit knowing the cap
					round(fmt.Sprint(log), 0)
					over := len(held) >= capNow
					l, err := m.Acquire(ctx, "c", "rogue/s", len(held)+1, time.Hour, e.Now())
					if err != nil {
						panic(err)
					}
					want := 0
					if over {
						want = 1
					}
					round(fmt.Sprintf("rogue grant %s with %d held, cap %d", l.ID, len(held), capNow), want)
					round("the round after", 0)
					log = nil
				}
			}
		})
		if err := s.Run(time.Hour); err != nil {
			rt.Fatal(err)
		}
		if failure != "" {
			rt.Fatal(failure)
		}
	})
}

// TestOverCapLogNamesTheHolders: the audit's log line says how many each worker holds.
func TestOverCapLogNamesTheHolders(t *testing.T) {
	ls := []Lease{{Holder: "w2/b"}, {Holder: "w1/a"}, {Holder: "w2/c"}, {Holder: "cp"}}
	if got, want := holderCounts(ls), "cp=1,w1=1,w2=2"; got != want {
		t.Fatalf("holderCounts: %q, want %q", got, want)
	}
	if got := holderCounts(slices.Clip([]Lease{})); got != "" {
		t.Fatalf("holderCounts of none: %q", got)
	}
}

// TestReplicaWithoutTheSweepLockAudits: two replicas share a table; cp-b holds the sweep lock
// and caps the cluster at 3, cp-a caps it at 2. cp-b's grant of a third lease is over cp-a's cap:
// cp-a counts it although it does not sweep, and cp-b, under whose cap it is, does not.
func TestReplicaWithoutTheSweepLockAudits(t *testing.T) {
	inSim(t, func(ctx context.Context, n *sim.Node, fail func(string, ...any)) {
		e := n.Env()
		m := NewMemory()
		sweeper := func(owner string, limit int) (*Sweeper, *Metrics) {
			metrics := NewMetrics(nil)
			return &Sweeper{Env: e, Store: m, Locks: m, Owner: owner, Metrics: metrics,
				Limits: func(string) (int, time.Duration, bool) { return limit, time.Minute, true }}, metrics
		}
		a, am := sweeper("cp-a", 2)
		b, bm := sweeper("cp-b", 3)
		rounds := func() {
			if _, err := b.SweepOnce(ctx, time.Hour); err != nil {
				panic(err)
			}
			if _, err := a.SweepOnce(ctx, time.Hour); err == nil {
				panic("cp-a took the sweep lock cp-b holds")
			}
		}
		if _, err := m.Acquire(ctx, "c", "w0/s", 3, time.Hour, e.Now()); err != nil {
			panic(err)
		}
		rounds() // the cluster first seen
		for i := 1; i < 3; i++ {
			if _, err := m.Acquire(ctx, "c", fmt.Sprintf("w%d/s", i), 3, time.Hour, e.Now()); err != nil {
				panic(err)
			}
		}
		rounds()
		if got := testutil.ToFloat64(am.OverCap.WithLabelValues("c")); got != 1 {
			fail("cp-a (cap 2, no sweep lock) counted %v over its cap with 3 held, want 1", got)
		}
		if got := testutil.ToFloat64(bm.OverCap.WithLabelValues("c")); got != 0 {
			fail("cp-b (cap 3) counted %v over its cap with 3 held, want 0", got)
		}
	})
}

// TestAuditFollowsTheCapOfAnEmptyCluster: a cap raised while the cluster holds no lease is
// learnt all the same: leases granted under it, then the cap lowered below them, are not over.
func TestAuditFollowsTheCapOfAnEmptyCluster(t *testing.T) {
	inSim(t, func(ctx context.Context, n *sim.Node, fail func(string, ...any)) {
		e := n.Env()
		m := NewMemory()
		metrics := NewMetrics(nil)
		capNow := 1
		sw := &Sweeper{Env: e, Store: m, Locks: m, Owner: "cp", Metrics: metrics,
			Limits: func(string) (int, time.Duration, bool) { return capNow, time.Minute, true }}
		round := func() {
			if _, err := sw.SweepOnce(ctx, time.Minute); err != nil {
				panic(err)
			}
		}
		l, err := m.Acquire(ctx, "c", "w/s", capNow, time.Hour, e.Now())
		if err != nil {
			panic(err)
		}
		round() // seen under cap 1
		if err := m.Release(ctx, l.Ref()); err != nil {
			panic(err)
		}
		capNow = 3
		round() // none held
		for range 3 {
			if _, err := m.Acquire(ctx, "c", "w/s", capNow, time.Hour, e.Now()); err != nil {
				panic(err)
			}
		}
		capNow = 2
		round()
		if got := testutil.ToFloat64(metrics.OverCap.WithLabelValues("c")); got != 0 {
			fail("3 leases granted under cap 3, the cap then lowered to 2: %v counted over it, want 0", got)
		}
	})
}
