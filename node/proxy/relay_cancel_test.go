package proxy

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/enginetest"
	"github.com/queryflux/queryflux/internal/query"
)

// wireEngine hands out engine connections that relay nothing.
type wireEngine struct{ fakeEngine }

func (*wireEngine) OpenPGWire(context.Context, engine.PGWireOptions) (engine.PGWire, error) {
	return enginetest.NopWire{}, nil
}

type relayer interface {
	BeginRelay(ctx context.Context, q *query.Request) (*Relay, bool, error)
}

// A session's relayed statement is cancelled through its OnCancel hook, once, when the
// session's lease is lost (at once for a hook set after that), never once it finished; it has
// no context of its own but under the group's query timeout, which ends its Ctx. Finish names
// why it was cancelled.
func TestRelayOnCancelHook(t *testing.T) {
	h := newHarness(t)
	guard := capacitytest.NewLosingGuard()
	h.core = New(Options{Env: h.env, Guard: guard, OnFinish: h.recs.add})
	spec := oneGroup(RoundRobin, 5, time.Minute, cl("a", 4, &wireEngine{}))
	h.activate(spec)
	begin := func() (*Wire, *Relay) {
		t.Helper()
		w, ok, err := h.core.OpenWire(t.Context(), sel("select 1"), 1, "")
		if err != nil || !ok {
			t.Fatalf("OpenWire: %v %v", ok, err)
		}
		r, ok, err := w.Session.(relayer).BeginRelay(t.Context(), sel("select 1"))
		if err != nil || !ok {
			t.Fatalf("BeginRelay: %v %v", ok, err)
		}
		return w, r
	}
	lastSlot := func() *capacitytest.LosableSlot {
		slots := guard.Slots()
		return slots[len(slots)-1]
	}

	w, r := begin()
	if r.Ctx != t.Context() {
		t.Fatal("without a query timeout the statement has a context of its own")
	}
	var calls atomic.Int32
	r.OnCancel(func() { calls.Add(1) })
	if r.Cancelled() || calls.Load() != 0 {
		t.Fatal("cancelled before anything cancelled it")
	}
	lastSlot().Lose()
	if !r.Cancelled() || calls.Load() != 1 {
		t.Fatalf("after the lease was lost: cancelled %v, hook ran %d times", r.Cancelled(), calls.Load())
	}
	r.OnCancel(func() { calls.Add(1) }) // set after the cancel: runs at once
	if calls.Load() != 2 {
		t.Fatalf("a hook set after the cancel ran %d times", calls.Load()-1)
	}
	var qe *query.Error
	if err := r.Finish(0, 0, errors.New("canceling statement due to user request")); !errors.As(err, &qe) || qe.Code != query.CodeCapacityTimeout {
		t.Fatalf("Finish after the lost lease: %v, want the lease named", err)
	}
	_ = w.Session.Close()

	w, r = begin()
	r.OnCancel(func() { calls.Add(1) })
	if err := r.Finish(1, 1, nil); err != nil {
		t.Fatal(err)
	}
	lastSlot().Lose()
	if calls.Load() != 2 {
		t.Fatal("the hook ran for a statement that had finished")
	}
	_ = w.Session.Close()

	spec.Groups[0].QueryTimeout = 50 * time.Millisecond
	h.activate(spec)
	w, r = begin()
	select {
	case <-r.Ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the query timeout did not end the statement's Ctx")
	}
	if !r.Cancelled() {
		t.Fatal("a statement past its query timeout is not Cancelled")
	}
	if err := r.Finish(0, 0, errors.New("canceling statement due to user request")); !errors.As(err, &qe) || qe.Code != query.CodeQueryTimeout {
		t.Fatalf("Finish after the query timeout: %v, want the timeout named", err)
	}
	_ = w.Session.Close()
}
