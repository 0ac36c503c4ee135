package capacity_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/sim"
)

// TestFreedSlotGoesToTheWaitingWorker: in retry mode a slot freed by a worker that holds more
// leases goes to the worker that waits for one holding fewer, even though the freeing worker
// asks first (its own release wakes its queue), also when the two ask different control-plane
// replicas sharing the store; once nobody waits, anyone may take it.
func TestFreedSlotGoesToTheWaitingWorker(t *testing.T) {
	m := capacity.NewMemory()
	capacitytest.FreedSlotGoesToWaiterAcrossReplicas(t, m, m)
}

func TestWaitingRecordIsBounded(t *testing.T) {
	capacitytest.WaitingRecordIsBounded(t, capacity.NewMemory())
}

// TestContentionOfRanksWaiters pins the ranking ContentionOf defines, case by case: the lease
// sum, who counts as another denied worker, the holder's own wait, and which waiting holders
// rank ahead (fewer leases, then waiting longer, then by name; a holder not waiting ranks after
// every waiting one with as many leases or fewer).
func TestContentionOfRanksWaiters(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Millisecond)
	wait := func(h string, since time.Time) capacity.Waiter {
		return capacity.Waiter{Holder: h, Since: since, Waiting: true}
	}
	done := func(h string) capacity.Waiter { return capacity.Waiter{Holder: h, Since: t0} }
	for _, tc := range []struct {
		name   string
		holder string
		held   map[string]int
		denied []capacity.Waiter
		want   capacity.Contention
	}{
		{"no record: leases summed", "a", map[string]int{"a": 2, "b": 3}, nil,
			capacity.Contention{Leases: 5, Held: 2}},
		{"own wait is not another's", "a", map[string]int{"a": 1}, []capacity.Waiter{wait("a", t0)},
			capacity.Contention{Leases: 1, Held: 1, Wait: wait("a", t0), Waiting: true}},
		{"own ended wait is no wait", "a", nil, []capacity.Waiter{done("a")},
			capacity.Contention{}},
		{"another's ended wait: contended, nobody ahead", "a", nil, []capacity.Waiter{done("b")},
			capacity.Contention{Others: true}},
		{"fewer leases ranks ahead though waiting shorter", "a", map[string]int{"a": 2, "b": 1},
			[]capacity.Waiter{wait("a", t0), wait("b", t1)},
			capacity.Contention{Leases: 3, Held: 2, Others: true, Wait: wait("a", t0), Waiting: true, Ahead: 1}},
		{"more leases ranks behind though waiting longer", "b", map[string]int{"a": 2, "b": 1},
			[]capacity.Waiter{wait("a", t0), wait("b", t1)},
			capacity.Contention{Leases: 3, Held: 1, Others: true, Wait: wait("b", t1), Waiting: true}},
		{"equal leases: longer wait ahead", "b", nil, []capacity.Waiter{wait("a", t0), wait("b", t1)},
			capacity.Contention{Others: true, Wait: wait("b", t1), Waiting: true, Ahead: 1}},
		{"equal leases: shorter wait behind", "a", nil, []capacity.Waiter{wait("a", t1), wait("b", t0)},
			capacity.Contention{Others: true, Wait: wait("a", t1), Waiting: true, Ahead: 1}},
		{"equal leases and wait: by name, first", "a", nil, []capacity.Waiter{wait("a", t0), wait("b", t0)},
			capacity.Contention{Others: true, Wait: wait("a", t0), Waiting: true}},
		{"equal leases and wait: by name, second", "b", nil, []capacity.Waiter{wait("a", t0), wait("b", t0)},
			capacity.Contention{Others: true, Wait: wait("b", t0), Waiting: true, Ahead: 1}},
		{"not waiting: behind a waiter with as many", "a", map[string]int{"a": 1, "b": 1},
			[]capacity.Waiter{wait("b", t0)},
			capacity.Contention{Leases: 2, Held: 1, Others: true, Ahead: 1}},
		{"not waiting: ahead of a waiter with more", "a", map[string]int{"b": 1},
			[]capacity.Waiter{wait("b", t0)},
			capacity.Contention{Leases: 1, Others: true}},
		{"ended waits rank nowhere", "a", nil, []capacity.Waiter{done("b"), done("c")},
			capacity.Contention{Others: true}},
	} {
		if got := capacity.ContentionOf(tc.holder, tc.held, tc.denied); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestYieldsKeepsFreeSlotsForThoseAhead: an acquire yields only while a slot is free and the
// waiters ranked ahead would take every free one; at or over the limit the store decides.
func TestYieldsKeepsFreeSlotsForThoseAhead(t *testing.T) {
	for _, tc := range []struct {
		leases, ahead, limit int
		want                 bool
	}{
		{leases: 3, ahead: 0, limit: 4, want: false},
		{leases: 3, ahead: 1, limit: 4, want: true},
		{leases: 2, ahead: 1, limit: 4, want: false},
		{leases: 2, ahead: 3, limit: 4, want: true},
		{leases: 4, ahead: 5, limit: 4, want: false},
		{leases: 5, ahead: 0, limit: 4, want: false},
	} {
		c := capacity.Contention{Leases: tc.leases, Ahead: tc.ahead}
		if got := c.Yields(tc.limit); got != tc.want {
			t.Errorf("%d leases, %d ahead, limit %d: yields %v, want %v", tc.leases, tc.ahead, tc.limit, got, tc.want)
		}
	}
}

// flakyWaits is a memory store whose waiting record fails on demand.
type flakyWaits struct {
	*capacity.Memory
	failRead, failMark bool
}

var errWaits = errors.New("waiting record down")

func (f *flakyWaits) Contention(ctx context.Context, cluster, holder string, now time.Time) (capacity.Contention, error) {
	if f.failRead {
		return capacity.Contention{}, errWaits
	}
	return f.Memory.Contention(ctx, cluster, holder, now)
}

func (f *flakyWaits) MarkDenied(ctx context.Context, cluster, holder string, now time.Time) error {
	if f.failMark {
		return errWaits
	}
	return f.Memory.MarkDenied(ctx, cluster, holder, now)
}

func (f *flakyWaits) MarkGranted(ctx context.Context, cluster, holder string) error {
	if f.failMark {
		return errWaits
	}
	return f.Memory.MarkGranted(ctx, cluster, holder)
}

// TestFailingWaitingRecordCostsOnlyFairness: when the waiting record fails, acquires are still
// decided by the lease table, the answer says contended (nobody knows who waits), and every
// failure is counted by op and logged; a working record counts nothing, and a grant to a
// worker that was not waiting writes nothing to the record.
func TestFailingWaitingRecordCostsOnlyFairness(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 5})
	store := &flakyWaits{Memory: capacity.NewMemory()}
	metrics := capacity.NewMetrics(prometheus.NewRegistry())
	s.AddNode("cp", func(n *sim.Node) http.Handler { return capacity.NewAPIHandler(store, store, n.Env(), metrics) })
	w := s.AddNode("w", nil)
	failures := func(op string) float64 {
		return testutil.ToFloat64(metrics.CoordinationFailures.WithLabelValues("store-waiters-" + op))
	}
	var failed []string
	check := func(what string, ok bool) {
		if !ok {
			failed = append(failed, what)
		}
	}
	s.Spawn(w, "test", func() {
		r := capacity.NewRemote("http://cp", w.Client(), nil)
		ask := func(holder string) (capacity.Lease, bool, error) {
			return r.AcquireContended(w.Ctx(), "c", holder, 1, time.Minute, time.Time{}, nil)
		}
		release := func(l capacity.Lease) bool {
			n, err := store.ReleaseBatch(w.Ctx(), []capacity.LeaseRef{l.Ref()})
			return n == 1 && err == nil
		}
		waiting := func(holder string) bool {
			c, err := store.Memory.Contention(w.Ctx(), "c", holder, w.Env().Now())
			return err == nil && c.Waiting
		}
		store.failMark = true
		first, _, err := ask("w1")
		check("w1 granted", err == nil)
		check("a grant without a wait writes no mark", failures("mark") == 0)
		store.failMark = false
		_, _, err = ask("w2")
		check("w2 denied", errors.Is(err, capacity.ErrAtCapacity))
		check("w2 waits", waiting("w2"))
		check("release", release(first))
		second, _, err := ask("w2")
		check("w2 granted after its wait", err == nil)
		check("w2's wait ended", !waiting("w2"))
		check("a working record counts no failure", failures("read") == 0 && failures("mark") == 0)

		store.failRead = true
		_, contended, err := ask("w3")
		check("w3 denied by the table while the record is unreadable", errors.Is(err, capacity.ErrAtCapacity))
		check("unreadable record answers contended", contended)
		check("read failure counted", failures("read") == 1)
		check("release w2", release(second))
		third, contended, err := ask("w3")
		check("w3 granted while the record is unreadable", err == nil && contended)
		store.failRead = false

		store.failMark = true
		_, _, err = ask("w1")
		check("w1 denied while the record is unwritable", errors.Is(err, capacity.ErrAtCapacity))
		check("denial mark failure counted", failures("mark") == 1)
		store.failMark = false
		_, _, err = ask("w1")
		check("w1 denied again", errors.Is(err, capacity.ErrAtCapacity))
		// w3's grant could not end its wait (its Contention read failed): end it, or w3 ranks
		// ahead of w1 (holding none, waiting longer) until FairWindow passes.
		check("end w3's wait", store.Memory.MarkGranted(w.Ctx(), "c", "w3") == nil)
		check("release w3", release(third))
		store.failMark = true
		_, _, err = ask("w1")
		check("w1 granted while its wait cannot be ended", err == nil)
		check("grant mark failure counted", failures("mark") == 2)
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(failed) > 0 {
		t.Errorf("failed: %v", failed)
	}
	logs := strings.Join(s.Logs(), "\n")
	for _, op := range []string{"op=read", "op=mark"} {
		if !strings.Contains(logs, "the waiting record failed") || !strings.Contains(logs, op) {
			t.Errorf("no warning with %s in the logs:\n%s", op, logs)
		}
	}
}
