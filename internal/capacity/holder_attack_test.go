package capacity_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/sim"
)

// twoHoldersCP is a control plane that hands the lease worker "a" holds to whoever asks next,
// as it answers it to "a" (holder "a/s1"); its other answers are honest.
type twoHoldersCP struct {
	store  *capacity.Memory
	now    func() time.Time
	theirs capacity.Lease
	asked  int
}

func (c *twoHoldersCP) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, _ time.Time) (capacity.Lease, error) {
	c.asked++
	if c.theirs.ID == "" {
		l, err := c.store.Acquire(ctx, cluster, capacity.SessionHolder("a", "s1"), limit, ttl, c.now())
		if err != nil {
			return l, err
		}
		c.theirs = l
	}
	return c.theirs, nil
}

func (c *twoHoldersCP) Renew(ctx context.Context, ref capacity.LeaseRef, ttl time.Duration, _ time.Time) (capacity.Lease, error) {
	return c.store.Renew(ctx, ref, ttl, c.now())
}

func (c *twoHoldersCP) ReleaseBatch(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	return c.store.ReleaseBatch(ctx, refs)
}

// TestAWorkerDoesNotUseALeaseTheAnswerSaysAnotherHolds: a control plane that answers worker b's
// acquire with the lease worker a holds (one lease handed to two workers) does not make b run a
// query on it: the acquire is denied, counted in
// queryflux_capacity_misbehaving_answers_total{kind="holder"} and logged with the lease's id
// (not its holder's session), and b neither renews nor releases a's lease (a keeps it). Before:
// b ran on a's lease, two queries on a cap of 1; the control plane's over-cap audit sees one row
// and cannot tell. Plant: the holder check in LeaseGuard.Acquire.
func TestAWorkerDoesNotUseALeaseTheAnswerSaysAnotherHolds(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 42})
	n := s.AddNode("b", nil)
	cp := &twoHoldersCP{store: capacity.NewMemory(), now: n.Env().Now}
	m := capacity.NewMetrics(nil)
	g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: n.Env(), Client: cp, Holder: "b", Metrics: m,
		LeaseTTL: 3 * time.Second, DriftMargin: 500 * time.Millisecond, AcquireTimeout: time.Second, OnLeaseLost: capacity.OnLeaseLostCancel})
	if err != nil {
		t.Fatal(err)
	}
	var results []error
	s.Spawn(n, "guard", func() { g.Start(n.Ctx()) })
	s.Spawn(n, "queries", func() {
		for range 3 {
			slot, err := g.Acquire(n.Ctx(), "c", 1)
			if slot != nil {
				slot.Release()
			}
			results = append(results, err)
			_ = n.Env().Sleep(n.Ctx(), 2*time.Second)
		}
	})
	if err := s.Run(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || cp.asked != 3 {
		t.Fatalf("acquires: %v, asked %d", results, cp.asked)
	}
	for i, err := range results {
		if !errors.Is(err, capacity.ErrAtCapacity) {
			t.Errorf("acquire %d answered with a's lease: %v, want denied", i, err)
		}
	}
	if n := testutil.ToFloat64(m.MisbehavingAnswers.WithLabelValues("c", "holder")); n != 3 {
		t.Errorf("misbehaving{kind=holder} = %v, want 3", n)
	}
	held, _ := cp.store.List(context.Background(), "c")
	if len(held) != 1 || held[0].Holder != "a/s1" || held[0].Revoked {
		t.Errorf("a's lease after b was handed it: %+v, want it a's, held", held)
	}
	if l := strings.Join(s.Logs(), "\n"); !strings.Contains(l, "kind=holder") || !strings.Contains(l, cp.theirs.ID) || strings.Contains(l, "s1") {
		t.Errorf("the log: %s\nwant the lease and kind=holder, not a's session", l)
	}
}
