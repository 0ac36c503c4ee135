package pgcapacity_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
	"github.com/queryflux/queryflux/internal/testlong"
	"github.com/queryflux/queryflux/migrations/migratedtest"
	"github.com/queryflux/queryflux/node/env"
)

// steppedEnv is a replica's Env whose clock is stepped back and forth while it runs (an NTP
// step, a VM resumed, an operator's date command).
type steppedEnv struct {
	env.Env
	step *atomic.Int64 // nanoseconds
}

func (e steppedEnv) Now() time.Time { return e.Env.Now().Add(time.Duration(e.step.Load())) }

// clockSteps are the offsets a caller's clock is stepped to: both ways, from a tick to an hour.
// The largest first: rapid draws the first ones most often.
var clockSteps = []time.Duration{-time.Hour, time.Hour, -time.Minute, time.Minute, -time.Second, time.Second,
	-30 * time.Millisecond, 30 * time.Millisecond, 0}

// holding is a span of one lease during which its holder may run work under it: from the grant's
// answer to its fence (the last renewal's sending plus the TTL), its release or a refused renewal.
type holding struct {
	cluster, lease string
	from, to       time.Time // the test process's monotonic clock, which no step touches
}

// holderRound is one lease a holder takes: acquire, hold (maybe past its term), renew, then
// release it or let it lapse for the sweep.
type holderRound struct {
	cluster  string
	step     time.Duration // the holder's clock offset for this round's calls
	ttl      time.Duration
	renewals int
	hold     time.Duration // between renewals; over the TTL, the lease lapses meanwhile
	release  bool
}

// TestSteppedClocksCannotPassTheCap: holders on two control-plane replicas acquire, renew and
// release leases of two clusters, or let them lapse, while both replicas' sweepers revoke and
// free the expired ones; every caller's clock is stepped back and forth by up to an hour between
// calls. Whatever the steps, at no instant do more holders than a cluster's cap believe they hold
// one of its leases: the table stamps and compares every expiry by its own clock, so a step can
// neither make a live lease look expired to a sweeper nor keep a lapsed one renewable.
func TestSteppedClocksCannotPassTheCap(t *testing.T) {
	testlong.RapidChecks(t, 10, 150)
	url := migratedtest.NewDatabase(t)
	a, pool := openStore(t, url, 4)
	b, _ := openStore(t, url, 4)
	replicas := []*pgcapacity.Store{a, b}
	ctx := context.Background()
	clusters := []string{"c1", "c2"}
	rapid.Check(t, func(rt *rapid.T) {
		if _, err := pool.Exec(ctx, "TRUNCATE capacity_leases, capacity_clusters, capacity_sweep_locks, capacity_waiters"); err != nil {
			rt.Fatal(err)
		}
		caps := map[string]int{}
		for _, c := range clusters {
			caps[c] = rapid.IntRange(1, 2).Draw(rt, "cap-"+c)
		}
		plans := make([][]holderRound, rapid.IntRange(3, 6).Draw(rt, "holders"))
		for h := range plans {
			for range rapid.IntRange(2, 4).Draw(rt, "rounds") {
				ttl := time.Duration(rapid.IntRange(20, 60).Draw(rt, "ttl-ms")) * time.Millisecond
				plans[h] = append(plans[h], holderRound{
					cluster:  rapid.SampledFrom(clusters).Draw(rt, "cluster"),
					step:     rapid.SampledFrom(clockSteps).Draw(rt, "holder-step"),
					ttl:      ttl,
					renewals: rapid.IntRange(0, 2).Draw(rt, "renewals"),
					hold:     ttl * time.Duration(rapid.IntRange(30, 150).Draw(rt, "hold-percent")) / 100,
					release:  rapid.Bool().Draw(rt, "release"),
				})
			}
		}
		sweepSteps := make([][]time.Duration, len(replicas))
		for i := range sweepSteps {
			sweepSteps[i] = rapid.SliceOfN(rapid.SampledFrom(clockSteps), 1, 6).Draw(rt, "sweeper-steps")
		}
		pause := time.Duration(rapid.IntRange(2, 20).Draw(rt, "sweep-pause-ms")) * time.Millisecond

		var mu sync.Mutex
		var spans []holding
		var failures []error
		fail := func(err error) {
			mu.Lock()
			failures = append(failures, err)
			mu.Unlock()
		}
		var holders sync.WaitGroup
		for h, plan := range plans {
			holders.Add(1)
			go func() {
				defer holders.Done()
				mine := holdPlan(ctx, replicas[h%len(replicas)], fmt.Sprintf("w%d", h), plan, caps, fail)
				mu.Lock()
				spans = append(spans, mine...)
				mu.Unlock()
			}()
		}
		done := make(chan struct{})
		var sweepers sync.WaitGroup
		for i, s := range replicas {
			sweepers.Add(1)
			go func() {
				defer sweepers.Done()
				step := &atomic.Int64{}
				sw := &capacity.Sweeper{Env: steppedEnv{env.Real(slog.New(slog.DiscardHandler)), step}, Store: s, Locks: s, Owner: fmt.Sprintf("cp%d", i)}
				for n := 0; ; n++ {
					step.Store(int64(sweepSteps[i][n%len(sweepSteps[i])]))
					if _, err := sw.SweepOnce(ctx, pause); err != nil && !errors.Is(err, capacity.ErrLockHeld) {
						fail(err)
					}
					select {
					case <-done:
						return
					case <-time.After(pause):
					}
				}
			}()
		}
		holders.Wait()
		close(done)
		sweepers.Wait()
		if len(failures) > 0 {
			rt.Fatal(failures[0])
		}
		for _, c := range clusters {
			if n, at, who := mostHeldAtOnce(spans, c); n > caps[c] {
				rt.Fatalf("cluster %s (cap %d): %d leases held at once, %v into the run: %v", c, caps[c], n, at, who)
			}
		}
	})
}

// holdPlan runs one holder's rounds and returns the spans it held leases for.
func holdPlan(ctx context.Context, s *pgcapacity.Store, holder string, plan []holderRound, caps map[string]int, fail func(error)) []holding {
	var spans []holding
	for _, r := range plan {
		now := func() time.Time { return time.Now().Add(r.step) }
		var l capacity.Lease
		var err error
		// A denied holder asks again, as a waiting query would, for two of its terms.
		sent := time.Now()
		for first := sent; time.Since(first) < 2*r.ttl; time.Sleep(r.ttl / 10) {
			sent = time.Now()
			if l, err = s.Acquire(ctx, r.cluster, holder, caps[r.cluster], r.ttl, now()); !errors.Is(err, capacity.ErrAtCapacity) {
				break
			}
		}
		if errors.Is(err, capacity.ErrAtCapacity) {
			continue
		}
		if err != nil {
			fail(fmt.Errorf("%s acquire: %w", holder, err))
			return spans
		}
		from, fence := time.Now(), sent.Add(r.ttl)
		ref := l.Ref().As(holder)
		refused := false
		for i := 0; i < r.renewals && !refused; i++ {
			time.Sleep(r.hold)
			sent := time.Now()
			_, err := s.Renew(ctx, ref, r.ttl, now())
			switch {
			case errors.Is(err, capacity.ErrStaleGeneration):
				refused = true // lapsed, swept or not: the holder stops at its fence or now
			case err != nil:
				fail(fmt.Errorf("%s renew %s: %w", holder, l.ID, err))
				return spans
			case sent.Before(fence):
				fence = sent.Add(r.ttl)
			default:
				// Renewed after its holder's fence had stopped its work: a new span, from now.
				spans = append(spans, holding{r.cluster, l.ID, from, fence})
				from, fence = time.Now(), sent.Add(r.ttl)
			}
		}
		if !refused {
			time.Sleep(r.hold)
		}
		end := time.Now()
		spans = append(spans, holding{r.cluster, l.ID, from, minTime(end, fence)})
		if r.release && !refused {
			if err := s.Release(ctx, ref); err != nil && !errors.Is(err, capacity.ErrStaleGeneration) {
				fail(fmt.Errorf("%s release %s: %w", holder, l.ID, err))
				return spans
			}
		}
	}
	return spans
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// mostHeldAtOnce is the largest number of cluster's spans that overlap, when it was reached
// (since the first span), and which leases overlapped then.
func mostHeldAtOnce(spans []holding, cluster string) (int, time.Duration, []string) {
	type edge struct {
		at    time.Time
		delta int
		lease string
	}
	var edges []edge
	for _, s := range spans {
		if s.cluster == cluster && s.from.Before(s.to) {
			edges = append(edges, edge{s.from, 1, s.lease}, edge{s.to, -1, s.lease})
		}
	}
	// At one instant, ends before starts: a span ending as another starts is not an overlap.
	slices.SortFunc(edges, func(x, y edge) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		return x.delta - y.delta
	})
	most, held := 0, 0
	var at time.Duration
	var live, who []string
	for _, e := range edges {
		held += e.delta
		if e.delta > 0 {
			live = append(live, e.lease)
		} else {
			live = slices.DeleteFunc(live, func(id string) bool { return id == e.lease })
		}
		if held > most {
			most, at, who = held, e.at.Sub(edges[0].at), slices.Clone(live)
		}
	}
	return most, at, who
}
