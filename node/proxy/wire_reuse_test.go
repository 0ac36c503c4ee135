package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/query"
)

// A client in transaction pool mode on a local guard hands its last transaction's wire back
// (OpenWireInto): the next transaction's wire session is made in its memory, and a
// one-statement transaction allocates only, in tests, the ledger's entry (its slot is the core's
// own count).
func TestWireTransactionAllocationsReusingTheLastWire(t *testing.T) {
	h := newHarness(t)
	h.core = New(Options{Env: h.env, NewQueryID: func() string { return "q" }})
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 4, &wireEngine{})))
	q := sel("select 1")
	ctx := query.WithAffinity(t.Context(), 1)
	var last *Wire
	reused := 0
	tx := func() {
		w, ok, err := h.core.OpenWireInto(ctx, q, 1, "", last)
		if err != nil || !ok {
			t.Fatalf("OpenWireInto: %v %v", ok, err)
		}
		if w == last {
			reused++
		}
		relayOneAndClose(t, ctx, w, q)
		last = w
	}
	tx()
	n := testing.AllocsPerRun(100, tx)
	t.Logf("%.1f allocations per transaction", n)
	if reused < 100 || n > 1 {
		t.Fatalf("%d of 101 transactions reused the last wire, %.1f allocations each; want all but the first, at most 1 (the ledger's entry)", reused, n)
	}
}

// relayOneAndClose relays q on w's session as one statement (1 row) and closes the session, as
// a transaction pool mode client's one-statement transaction.
func relayOneAndClose(t testing.TB, ctx context.Context, w *Wire, q *query.Request) {
	t.Helper()
	r, ok, err := w.Session.(relayer).BeginRelay(ctx, q)
	if err != nil || !ok {
		t.Fatalf("BeginRelay: %v %v", ok, err)
	}
	if err := r.Finish(1, 10, nil); err != nil {
		t.Fatal(err)
	}
	_ = w.Session.Close()
}

// A spare wire that something may still reach is never made over: one still open, one
// closed with a statement still relaying (its Finish comes later), and one whose slot can be
// lost (its lost-lease hook holds the session).
func TestOpenWireIntoLeavesAReachableWireAlone(t *testing.T) {
	q := sel("select 1")
	open := func(t *testing.T, h *harness, spare *Wire) *Wire {
		t.Helper()
		w, ok, err := h.core.OpenWireInto(t.Context(), q, 1, "", spare)
		if err != nil || !ok {
			t.Fatalf("OpenWireInto: %v %v", ok, err)
		}
		if w == spare {
			t.Fatal("a wire that can still be reached was made over")
		}
		return w
	}
	local := func(t *testing.T) *harness {
		h := newHarness(t)
		h.core = New(Options{Env: h.env, OnFinish: h.recs.add})
		h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 4, &wireEngine{})))
		return h
	}
	t.Run("open", func(t *testing.T) {
		h := local(t)
		spare := open(t, h, nil)
		w := open(t, h, spare)
		r, ok, err := spare.Session.(relayer).BeginRelay(t.Context(), q)
		if err != nil || !ok || r.Finish(0, 0, nil) != nil {
			t.Fatalf("the spare's statement: %v %v", ok, err)
		}
		_ = spare.Session.Close()
		_ = w.Session.Close()
	})
	t.Run("relaying", func(t *testing.T) {
		h := local(t)
		spare := open(t, h, nil)
		r, ok, err := spare.Session.(relayer).BeginRelay(t.Context(), q)
		if err != nil || !ok {
			t.Fatalf("BeginRelay: %v %v", ok, err)
		}
		_ = spare.Session.Close()
		w := open(t, h, spare)
		if err := r.Finish(0, 0, nil); err != nil {
			t.Fatal(err)
		}
		_ = w.Session.Close()
	})
	t.Run("losable", func(t *testing.T) {
		h := newHarness(t)
		h.core = New(Options{Env: h.env, Guard: capacitytest.NewLosingGuard(), OnFinish: h.recs.add})
		h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 4, &wireEngine{})))
		spare := open(t, h, nil)
		_ = spare.Session.Close()
		w := open(t, h, spare)
		_ = w.Session.Close()
	})
}
