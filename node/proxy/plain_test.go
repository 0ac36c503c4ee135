package proxy

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// plainEngine answers as fakeEngine, with rows that may be read as plain values.
type plainEngine struct{ *fakeEngine }

func (p plainEngine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	rows, err := p.fakeEngine.Execute(ctx, q)
	if err != nil {
		return nil, err
	}
	return &fakePlainRows{fakeRows: rows.(*fakeRows)}, nil
}

type fakePlainRows struct{ *fakeRows }

func (r *fakePlainRows) Plain() bool { return true }

func (r *fakePlainRows) NextPlain(ctx context.Context) ([][]any, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	if r.sent {
		return nil, io.EOF
	}
	r.sent = true
	rows := make([][]any, r.f.rows)
	for i := range rows {
		rows[i] = []any{int64(i)}
	}
	return rows, nil
}

// runPlain is harness.run reading plain values; plain reports whether the rows offered them.
func (h *harness) runPlain(ctx context.Context, req *query.Request) (n int64, plain bool, err error) {
	rows, err := h.core.Execute(ctx, req)
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	p, ok := rows.(query.PlainRows)
	if !ok || !p.Plain() {
		return 0, false, nil
	}
	for {
		r, err := p.NextPlain(ctx)
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, true, err
		}
		n += int64(len(r))
	}
}

// Plain rows count against a group's result limits as batches do, and their rows and bytes
// reach the query's record; a group that caches results reads batches (the cache keeps them).
func TestPlainRowsCountAgainstResultLimits(t *testing.T) {
	for _, lim := range []Limits{{MaxResultRows: 5}, {MaxResultBytes: 40}} {
		h := newHarness(t)
		spec := oneGroup(RoundRobin, 0, 0, cl("a", 1, plainEngine{&fakeEngine{rows: 10}}))
		spec.Limits = lim
		h.activate(spec)
		_, plain, err := h.runPlain(t.Context(), sel("select * from big"))
		var qe *query.Error
		if !plain || !errors.As(err, &qe) || qe.Code != query.CodeLimitExceeded {
			t.Fatalf("%+v: want CodeLimitExceeded of plain rows, got %v (plain %v)", lim, err, plain)
		}
		if r := h.recs.last(t); r.Status != StatusFailed || r.ErrorCode != query.CodeLimitExceeded || h.core.Running("a") != 0 {
			t.Fatalf("record %+v", r)
		}
	}
	h := newHarness(t)
	spec := oneGroup(RoundRobin, 0, 0, cl("a", 1, plainEngine{&fakeEngine{rows: 10}}))
	spec.Limits = Limits{MaxResultRows: 10, MaxResultBytes: 80}
	h.activate(spec)
	if n, plain, err := h.runPlain(t.Context(), sel("select * from big")); err != nil || n != 10 || !plain {
		t.Fatalf("a result at the limits must pass: %d %v %v", n, plain, err)
	}
	if r := h.recs.last(t); r.Status != StatusSucceeded || r.Rows != 10 || r.Bytes != 80 {
		t.Fatalf("record %+v, want 10 rows of 80 bytes", r)
	}

	h = newHarness(t)
	spec = oneGroup(RoundRobin, 0, 0, cl("a", 1, plainEngine{&fakeEngine{rows: 3}}))
	spec.Groups[0].Cache = CacheSpec{TTL: time.Hour}
	h.activate(spec)
	if _, plain, err := h.runPlain(t.Context(), sel("select * from big")); err != nil || plain {
		t.Fatalf("a cached group's rows: plain %v, %v", plain, err)
	}
}
