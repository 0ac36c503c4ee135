// Package capacitytest holds checks every capacity.CapacityStore must pass, run by the tests of
// each store (the in-memory one and pgcapacity's on a real PostgreSQL).
//
// It serves the capacity API on loopback test servers (net/http/httptest) with a clock the
// check steps itself.
//
// determinism: outside the simulator (test support: real loopback servers and a real Env)
package capacitytest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
)

// steppedEnv is a real Env whose clock only moves when the check steps it.
type steppedEnv struct {
	env.Env
	mu  sync.Mutex
	now time.Time
}

func (e *steppedEnv) Now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func (e *steppedEnv) step(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = e.now.Add(d)
}

// FreedSlotGoesToWaiterAcrossReplicas checks retry-mode fairness through two control-plane
// replicas, one serving the capacity API on store a and one on store b, where a and b are one
// lease table (the same Memory, or two Postgres stores on one database, each reading the
// callers' clock). A "poor" worker asks replica A, a "rich" one replica B, on a cluster of cap
// 3: a slot rich frees goes to poor, who waits for it at the other replica, although rich asks
// first; then poor's freed slot goes to rich, waiting at B longer than poor; and once nobody
// waits, anyone may take a free slot. With a waiting record per replica, B would not know that
// poor waits at A, and rich would win its slot back.
func FreedSlotGoesToWaiterAcrossReplicas(t *testing.T, a, b capacity.CapacityStore) {
	t.Helper()
	e := &steppedEnv{Env: env.Real(nil), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	metrics := capacity.NewMetrics(nil)
	replica := func(store capacity.CapacityStore) *capacity.Remote {
		srv := httptest.NewServer(capacity.NewAPIHandler(store, nil, e, metrics))
		t.Cleanup(srv.Close)
		return capacity.NewRemote(srv.URL, srv.Client(), nil)
	}
	at := map[string]*capacity.Remote{"poor": replica(a), "rich": replica(b)}
	ctx := context.Background()
	acquire := func(holder string, release ...capacity.Lease) (capacity.Lease, error) {
		refs := make([]capacity.LeaseRef, len(release))
		for i, l := range release {
			refs[i] = l.Ref()
		}
		return at[holder].AcquireReleasing(ctx, "c", holder, 3, 10*time.Second, e.Now(), refs)
	}
	expect := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", what, err, want)
		}
	}
	rich1, err := acquire("rich")
	expect("rich's first lease", err, nil)
	_, err = acquire("rich")
	expect("rich's second lease", err, nil)
	_, err = acquire("poor")
	expect("poor's lease", err, nil)

	_, err = acquire("poor")
	expect("poor asks A on a full cluster", err, capacity.ErrAtCapacity)
	e.step(10 * time.Millisecond)
	_, err = acquire("rich", rich1)
	expect("rich asks B, releasing one (decided before it is freed)", err, capacity.ErrAtCapacity)
	_, err = acquire("rich")
	expect("rich asks B again for the slot it freed while poor waits at A", err, capacity.ErrAtCapacity)
	e.step(capacity.RetryAskEvery)
	poor2, err := acquire("poor")
	expect("poor asks A within RetryAskEvery and gets the freed slot", err, nil)

	// poor holds 2 now and waits no more; rich (1) waits at B: poor's next release goes to rich.
	_, err = acquire("rich")
	expect("rich asks B on the full cluster", err, capacity.ErrAtCapacity)
	_, err = acquire("poor", poor2)
	expect("poor asks A, releasing one", err, capacity.ErrAtCapacity)
	_, err = acquire("poor")
	expect("poor asks A again while rich has waited at B longer", err, capacity.ErrAtCapacity)
	e.step(capacity.FairWindow)
	_, err = acquire("poor")
	expect("poor asks A after rich stopped waiting", err, nil)

	if got := testutil.ToFloat64(metrics.LeaseYielded.WithLabelValues("c")); got != 2 {
		t.Errorf("yielded %v acquires, want 2", got)
	}
}

// WaitingRecordIsBounded checks that store's waiting record keeps at most WaitersMax holders
// of a cluster (a holder already recorded is still updated when it is full) and forgets a
// denial ContendedFor old, making room. The store must read the callers' clock.
func WaitingRecordIsBounded(t *testing.T, store capacity.CapacityStore) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	denied := func(holder string, at time.Time) {
		t.Helper()
		if err := store.MarkDenied(ctx, "c", holder, at); err != nil {
			t.Fatal(err)
		}
	}
	read := func(holder string, at time.Time) capacity.Contention {
		t.Helper()
		c, err := store.Contention(ctx, "c", holder, at)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// A holder that does not wait ranks after every waiting one: Ahead counts the waiters.
	waiters := func(at time.Time) int { return read("nobody", at).Ahead }
	for i := range capacity.WaitersMax + 5 {
		denied(fmt.Sprintf("w%04d", i), t0)
	}
	last, first := fmt.Sprintf("w%04d", capacity.WaitersMax-1), fmt.Sprintf("w%04d", capacity.WaitersMax)
	if n := waiters(t0); n != capacity.WaitersMax || !read(last, t0).Waiting || read(first, t0).Waiting {
		t.Fatalf("after %d denials the record holds %d waiters (%s waiting %v, %s waiting %v), want the first %d", capacity.WaitersMax+5,
			n, last, read(last, t0).Waiting, first, read(first, t0).Waiting, capacity.WaitersMax)
	}
	later := t0.Add(capacity.FairWindow)
	denied("w0000", later)
	if c := read("w0000", later); !c.Waiting || !c.Wait.Since.Equal(later) {
		t.Errorf("a recorded holder denied again in a full record after its wait lapsed: %+v, want a wait since %v", c, later)
	}
	forgotten := t0.Add(capacity.ContendedFor)
	denied("late", forgotten)
	if n, late, w0 := waiters(forgotten), read("late", forgotten), read("w0000", forgotten); n != 1 || !late.Waiting || !late.Others || w0.Waiting || !w0.Others {
		t.Errorf("a denial %v later: %d waiters, late %+v, w0000 %+v; want late waiting alone, w0000 recorded (denied by others for both)", capacity.ContendedFor, n, late, w0)
	}
	// The record holds late and w0000: room for WaitersMax-2 more.
	for i := range capacity.WaitersMax - 1 {
		denied(fmt.Sprintf("n%04d", i), forgotten)
	}
	last, first = fmt.Sprintf("n%04d", capacity.WaitersMax-3), fmt.Sprintf("n%04d", capacity.WaitersMax-2)
	if n := waiters(forgotten); n != capacity.WaitersMax-1 || !read(last, forgotten).Waiting || read(first, forgotten).Waiting {
		t.Errorf("after the old denials were forgotten the record holds %d waiters (%s waiting %v, %s waiting %v), want late and %d new ones",
			n, last, read(last, forgotten).Waiting, first, read(first, forgotten).Waiting, capacity.WaitersMax-2)
	}
}
