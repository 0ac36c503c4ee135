package proxy

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/invariants"
	"github.com/queryflux/queryflux/internal/query"
)

// stream is every result the core hands a frontend as Rows: a query's on a member, a pinned
// session's statement, a cache hit. It counts rows and bytes against the guardrails, turns an
// engine error into what the client should see, and ends the query once, on Close, where the
// outcome is decided: the first error, or errClosedEarly for a result set not read to its end.
type stream struct {
	inner   query.Rows
	id      string // the query's, for messages
	limits  Limits
	explain func(error) error // nil: errors pass as they are
	tee     func(arrow.RecordBatch)
	// end releases what the query holds and reports it, with the outcome.
	end     func(rows, bytes int64, outcome error)
	rows    int64
	bytes   int64
	drained bool
	err     error
	closed  invariants.Once
}

func (s *stream) Schema() *arrow.Schema { return s.inner.Schema() }
func (s *stream) Tag() string           { return s.inner.Tag() }

// MoreResults and NextResult pass on the several results of a statement whose engine answers
// with them (query.ResultSets); every other statement has one.
func (s *stream) MoreResults() bool {
	rs, ok := s.inner.(query.ResultSets)
	return ok && s.drained && s.err == nil && rs.MoreResults()
}

func (s *stream) NextResult(ctx context.Context) error {
	if !s.MoreResults() {
		return fmt.Errorf("proxy: NextResult of query %s without a result to come", s.id)
	}
	if err := s.inner.(query.ResultSets).NextResult(ctx); err != nil {
		return s.fail(err)
	}
	s.drained = false
	return nil
}

func (s *stream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.closed.Closed() {
		return nil, fmt.Errorf("proxy: Next on closed rows of query %s", s.id)
	}
	if s.drained {
		return nil, io.EOF
	}
	rec, err := s.inner.Next(ctx)
	if err == io.EOF {
		s.drained = true
		return nil, io.EOF
	}
	if err != nil {
		if s.explain != nil {
			err = s.explain(err)
		}
		return nil, s.fail(err)
	}
	s.rows += rec.NumRows()
	s.bytes += engine.BatchBytes(rec)
	if err := s.limits.check(s.rows, s.bytes); err != nil {
		return nil, s.fail(err)
	}
	if s.tee != nil {
		s.tee(rec)
	}
	return rec, nil
}

var _ query.PlainRows = (*stream)(nil)

// Plain reports whether the rows may be read as plain values (query.PlainRows): the engine's
// are, and nothing needs them as batches (a cache fill keeps batches).
func (s *stream) Plain() bool {
	p, ok := s.inner.(query.PlainRows)
	return ok && s.tee == nil && p.Plain()
}

// NextPlain is Next of plain values, counted against the guardrails as Next counts a batch.
func (s *stream) NextPlain(ctx context.Context) ([][]any, error) {
	if s.closed.Closed() {
		return nil, fmt.Errorf("proxy: NextPlain on closed rows of query %s", s.id)
	}
	if s.drained {
		return nil, io.EOF
	}
	rows, err := s.inner.(query.PlainRows).NextPlain(ctx)
	if err == io.EOF {
		s.drained = true
		return nil, io.EOF
	}
	if err != nil {
		if s.explain != nil {
			err = s.explain(err)
		}
		return nil, s.fail(err)
	}
	s.rows += int64(len(rows))
	s.bytes += engine.PlainBytes(rows)
	if err := s.limits.check(s.rows, s.bytes); err != nil {
		return nil, s.fail(err)
	}
	return rows, nil
}

// fail keeps the first error as the query's outcome and returns err.
func (s *stream) fail(err error) error {
	if s.err == nil {
		s.err = err
	}
	return err
}

func (s *stream) Close() error {
	if !s.closed.Close("rows", s.id) {
		return nil
	}
	cerr := s.inner.Close()
	outcome := s.err
	// A statement without a result set (INSERT, SET) is complete once it started; a result set
	// closed before its end was abandoned by the client.
	if outcome == nil && !s.drained && s.inner.Schema() != nil {
		outcome = errClosedEarly
	}
	s.end(s.rows, s.bytes, outcome)
	return cerr
}
