package proxy

import (
	"context"
	"errors"
	"fmt"
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
	if !r.Cancellable() {
		t.Fatal("a statement whose lease can be lost says the core cannot cancel it: its frontend would set no hook")
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
	if err := r.Finish(0, 0, errors.New("canceling statement due to user request")); !errors.As(err, &qe) || qe.Code != query.CodeLeaseLost {
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

// A wire session's first statement is its admission's query: relayed with the very request
// OpenWire admitted, it is checked once (the admission's check stands), carries the admission's
// id and times and takes no id of its own; every other statement, and a first one relayed with
// another request (a frontend that rewrote it), is checked and gets a new id.
func TestWireFirstStatementIsTheAdmissions(t *testing.T) {
	h := newHarness(t)
	checks := map[string]int{}
	var ids atomic.Int32
	h.core = New(Options{Env: h.env, OnFinish: h.recs.add,
		NewQueryID: func() string { return fmt.Sprintf("id%d", ids.Add(1)) },
		Check: func(req *query.Request, _ string) error {
			checks[req.SQL]++
			if req.SQL == "drop table t" {
				return &query.Error{Code: query.CodeAccessDenied, Message: "no drops"}
			}
			return nil
		}})
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 4, &wireEngine{})))
	relay := func(w *Wire, q *query.Request) error {
		t.Helper()
		r, ok, err := w.Session.(relayer).BeginRelay(t.Context(), q)
		if err != nil || !ok {
			return err
		}
		return r.Finish(1, 10, nil)
	}

	first := sel("select 1")
	w, ok, err := h.core.OpenWire(t.Context(), first, 1, "")
	if err != nil || !ok {
		t.Fatalf("OpenWire: %v %v", ok, err)
	}
	h.env.advance(5 * time.Millisecond)
	if err := relay(w, first); err != nil {
		t.Fatal(err)
	}
	if err := relay(w, sel("select 2")); err != nil {
		t.Fatal(err)
	}
	if err := relay(w, sel("drop table t")); err == nil {
		t.Fatal("a later statement was not checked: drop table t ran")
	}
	_ = w.Session.Close()
	recs := h.recs.all()
	if len(recs) != 3 || recs[0].QueryID != "id1" || recs[0].End.Sub(recs[0].Start) < 5*time.Millisecond || recs[1].QueryID != "id2" || recs[2].QueryID != "id3" {
		t.Fatalf("records %+v: want id1 (the admission's, started when it was admitted), id2, id3", recs)
	}
	if checks["select 1"] != 1 || checks["select 2"] != 1 || checks["drop table t"] != 1 || ids.Load() != 3 {
		t.Fatalf("checks %v, %d ids: want each statement checked once, one id each", checks, ids.Load())
	}

	w, ok, err = h.core.OpenWire(t.Context(), sel("select 3"), 1, "")
	if err != nil || !ok {
		t.Fatalf("OpenWire: %v %v", ok, err)
	}
	if err := relay(w, sel("select 3")); err != nil {
		t.Fatal(err)
	}
	_ = w.Session.Close()
	if checks["select 3"] != 2 || h.recs.last(t).QueryID != "id4" {
		t.Fatalf("a first statement relayed with another request: checked %d times, record %+v; want 2 checks, the admission's id4",
			checks["select 3"], h.recs.last(t))
	}
}

// A one-statement transaction on a wire session (a pooled client in transaction pool mode on
// a local guard: the standalone daemon's passthrough, once per query) allocates the core's
// minimum: the statement that carries the admission relays through the session's own Relay,
// the guardrails are a method (not a method value per statement) and a slot that is never
// lost gets no lost-lease hook. Each of those was an allocation on every transaction.
func TestWireTransactionAllocations(t *testing.T) {
	h := newHarness(t)
	h.core = New(Options{Env: h.env, NewQueryID: func() string { return "q" }})
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 4, &wireEngine{})))
	q := sel("select 1")
	ctx := query.WithAffinity(t.Context(), 1) // as pgwire hands it, once per connection
	tx := func() {
		w, ok, err := h.core.OpenWire(ctx, q, 1, "")
		if err != nil || !ok {
			t.Fatalf("OpenWire: %v %v", ok, err)
		}
		r, ok, err := w.Session.(relayer).BeginRelay(ctx, q)
		if err != nil || !ok {
			t.Fatalf("BeginRelay: %v %v", ok, err)
		}
		if err := r.CheckLimits(1, 10); err != nil {
			t.Fatal(err)
		}
		if err := r.Finish(1, 10, nil); err != nil {
			t.Fatal(err)
		}
		_ = w.Session.Close()
	}
	tx() // the series, the pools: made once
	n := testing.AllocsPerRun(100, tx)
	t.Logf("%.1f allocations per transaction", n)
	// The wireSession and the ledger's entry for the admission (invariants run in these tests;
	// a daemon makes no entry); the slot of a core that counts its own is no allocation.
	if n > 2 {
		t.Fatalf("a one-statement wire transaction allocates %.1f times, want at most 2 (its wireSession, its ledger entry)", n)
	}
}

// The statement of a session on a slot that cannot be lost (a core counting its own) is one the
// core never cancels: its frontend may spare the hook.
func TestRelayOfAnUnlosableSlotIsNotCancellable(t *testing.T) {
	h := newHarness(t)
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 4, &wireEngine{})))
	w, ok, err := h.core.OpenWire(t.Context(), sel("select 1"), 1, "")
	if err != nil || !ok {
		t.Fatalf("OpenWire: %v %v", ok, err)
	}
	r, ok, err := w.Session.(relayer).BeginRelay(t.Context(), sel("select 1"))
	if err != nil || !ok {
		t.Fatalf("BeginRelay: %v %v", ok, err)
	}
	if r.Cancellable() {
		t.Fatal("a statement on a slot that is never lost says the core may cancel it")
	}
	if err := r.Finish(0, 0, nil); err != nil {
		t.Fatal(err)
	}
	_ = w.Session.Close()
}
