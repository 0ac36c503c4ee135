package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/invariants"
	"github.com/queryflux/queryflux/internal/query"
)

// racingGuard is a guard with a planted bug: it lets a second query in while it grants the
// first, past the limit, as a guard that lost a race would.
type racingGuard struct {
	inner   *capacity.LocalGuard
	core    *Core
	entered bool
	second  query.Rows
}

func (g *racingGuard) Acquire(ctx context.Context, cluster string, limit int) (Slot, error) {
	if !g.entered {
		g.entered = true // the second query's own Acquire does not start a third
		rows, err := g.core.Execute(ctx, sel("select 2"))
		if err != nil {
			return nil, err
		}
		g.second = rows
	}
	return g.inner.Acquire(ctx, cluster, limit+1)
}

// wantViolation fails t unless fn panicked with a violation whose message holds want.
func wantViolation(t *testing.T, want string, fn func()) {
	t.Helper()
	v := invariants.Catch(fn)
	if v == nil || !strings.Contains(v.Message, want) {
		t.Fatalf("Catch = %v, want a violation containing %q", v, want)
	}
}

// The core counts what it runs on each cluster and checks it against the cap itself, so a guard
// that grants past its limit is caught at the admission that breaks the cap.
func TestAdmissionPastTheCapIsCaught(t *testing.T) {
	h := newHarness(t)
	guard := &racingGuard{inner: capacity.NewLocalGuard()}
	h.core = New(Options{Env: h.env, Guard: guard, OnFinish: h.recs.add})
	guard.core = h.core
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1})))
	wantViolation(t, "2 queries running on cluster a, over its cap 1", func() {
		_, _ = h.core.Execute(t.Context(), sel("select 1"))
	})
	_ = guard.second.Close()
}

func TestAdmissionFinishedTwiceIsCaught(t *testing.T) {
	h := newHarness(t)
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1})))
	adm, err := h.core.Admit(t.Context(), sel("select 1"))
	if err != nil {
		t.Fatal(err)
	}
	adm.Finish(0, 0, nil)
	wantViolation(t, "admission "+adm.QueryID+" closed twice", func() { adm.Finish(0, 0, nil) })
	if h.core.Running("a") != 0 || len(h.recs.all()) != 1 {
		t.Fatalf("the second Finish released or reported again: running %d, %d records", h.core.Running("a"), len(h.recs.all()))
	}
}

func TestRowsClosedTwiceIsCaught(t *testing.T) {
	h := newHarness(t)
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1})))
	rows, err := h.core.Execute(t.Context(), sel("select 1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	wantViolation(t, "closed twice", func() { _ = rows.Close() })
}

func TestCachedRowsClosedTwiceIsCaught(t *testing.T) {
	h := newHarness(t)
	spec := oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1}))
	spec.Groups[0].Cache = CacheSpec{TTL: time.Minute}
	h.activate(spec)
	if _, err := h.run(t.Context(), sel("select 1")); err != nil {
		t.Fatal(err)
	}
	rows, err := h.core.Execute(t.Context(), sel("select 1"))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := rows.(*stream); !ok {
		t.Fatalf("a cache hit is %T, not a stream", rows)
	} else if _, hit := s.inner.(*cachedRows); !hit {
		t.Fatalf("the second run was not a cache hit: %T", s.inner)
	}
	_ = rows.Close()
	wantViolation(t, "closed twice", func() { _ = rows.Close() })
}

// A Rows never closed holds its slot forever; the core's ledger names it, which is how every
// test of this package (newHarness) fails when it forgets one.
func TestRowsNeverClosedIsALeak(t *testing.T) {
	h := newHarness(t)
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1})))
	rows, err := h.core.Execute(t.Context(), sel("select 'leaked'"))
	if err != nil {
		t.Fatal(err)
	}
	open := h.core.Unclosed()
	if len(open) != 2 || !strings.HasPrefix(open[0], "admission ") || !strings.HasPrefix(open[1], "rows ") ||
		!strings.HasSuffix(open[1], ": select 'leaked'") {
		t.Fatalf("Unclosed = %q, want the admission and the rows of the open query", open)
	}
	_ = rows.Close()
	if open := h.core.Unclosed(); len(open) != 0 {
		t.Fatalf("after Close, Unclosed = %q", open)
	}
}
