package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/sim"
)

// TestReleasesRideOnTheNextAcquire: against a control plane that takes releases on an acquire
// (a ReleasingAcquirer) and keeps nothing idle (contended), a worker whose queries (3 ms) follow
// each other within the release linger (2 ms) sends each query's release on the next one's acquire:
// one round trip per query, not two.
func TestReleasesRideOnTheNextAcquire(t *testing.T) {
	client := &contentionClient{Memory: capacity.NewMemory(), contended: true}
	reuseWorld(t, client, capacity.GuardOptions{}, func(ctx context.Context, e env.Env, g *capacity.LeaseGuard, check func(string, bool)) {
		for range 20 {
			slot, err := g.Acquire(ctx, "c", 5)
			if err != nil {
				panic(err)
			}
			sleep(ctx, e, 3*time.Millisecond)
			slot.Release()
			sleep(ctx, e, 500*time.Microsecond)
		}
		check(fmt.Sprintf("20 queries: %d releases carried on acquires, %d release batches of their own; want 19 and at most 1",
			client.carried, client.batches), client.carried == 19 && client.batches <= 1)
	})
}

// failingReleases answers every release batch with err, counting them.
type failingReleases struct {
	capacity.LeaseClient
	err     error
	batches int
}

func (f *failingReleases) ReleaseBatch(context.Context, []capacity.LeaseRef) (int, error) {
	f.batches++
	return 0, f.err
}

// TestReleaseRefusalsAndFailures: a release batch the control plane refuses as not this
// session's (the node registered again: the control plane fences and frees those leases
// itself) is not sent again and is no coordination failure; one that gets no answer is counted
// (queryflux_coordination_failures_total{op="release"}) and sent again later.
func TestReleaseRefusalsAndFailures(t *testing.T) {
	for _, c := range []struct {
		err                 error
		again               bool
		failures            float64
		pendingAfterASecond int
	}{
		{fmt.Errorf("not this session's: %w", capacity.ErrNotHolder), false, 0, 0},
		{errors.New("connection refused"), true, 1, 1},
	} {
		metrics := capacity.NewMetrics(nil)
		client := &failingReleases{LeaseClient: capacity.NewMemory(), err: c.err}
		simChecks(t, 1, "w", time.Minute, func(n *sim.Node, check func(string, bool)) {
			g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: client, Holder: "w", Metrics: metrics})
			if err != nil {
				panic(err)
			}
			g.Start(n.Ctx())
			slot, err := g.Acquire(n.Ctx(), "c", 2)
			if err != nil {
				panic(err)
			}
			slot.Release()
			sleep(n.Ctx(), n.Env(), 100*time.Millisecond)
			got := testutil.ToFloat64(metrics.CoordinationFailures.WithLabelValues("release"))
			check(fmt.Sprintf("%v: %v release failures counted, want %v", c.err, got, c.failures), got == c.failures)
			check(fmt.Sprintf("%v: %d releases left to send, want %d", c.err, g.PendingReleases(), c.pendingAfterASecond),
				g.PendingReleases() == c.pendingAfterASecond)
			sleep(n.Ctx(), n.Env(), 2500*time.Millisecond)
			check(fmt.Sprintf("%v: sent %d times in 2.6 s (sent again: %v)", c.err, client.batches, c.again),
				(client.batches == 1) != c.again && client.batches >= 1)
			// A refusal says this node's session ended (another registration under its name): an
			// operator is told, once per refused batch.
			logged, want := strings.Count(strings.Join(n.Sim().Logs(), "\n"), "refused releases of leases this node's session does not hold"), 0
			if !c.again {
				want = client.batches
			}
			check(fmt.Sprintf("%v: the refusal logged %d times, want %d", c.err, logged, want), logged == want)
		})
	}
}

// TestManyReleasesLandTogether: 600 slots released at once (more than one batch of 500) all
// reach the control plane within a few milliseconds: the flusher sends the next batch as soon
// as one lands, without a back-off between them.
func TestManyReleasesLandTogether(t *testing.T) {
	store := capacity.NewMemory()
	simChecks(t, 1, "w", time.Minute, func(n *sim.Node, check func(string, bool)) {
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: store, Holder: "w"})
		if err != nil {
			panic(err)
		}
		g.Start(n.Ctx())
		var slots []capacity.Slot
		for range 600 {
			s, err := g.Acquire(n.Ctx(), "c", 1000)
			if err != nil {
				panic(err)
			}
			slots = append(slots, s)
		}
		for _, s := range slots {
			s.Release()
		}
		sleep(n.Ctx(), n.Env(), 50*time.Millisecond)
		check(fmt.Sprintf("50 ms after 600 releases: %d leases left at the control plane, %d queued; want 0", store.Count("c"), g.PendingReleases()),
			store.Count("c") == 0 && g.PendingReleases() == 0)
	})
}
