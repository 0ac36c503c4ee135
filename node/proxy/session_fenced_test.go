package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// fencedEngine pins sessions whose statements find their connection fenced: the control plane
// took the lease back while the worker was frozen and ended the connection, and the worker's
// keeper has not yet told the session (the slot is lost, its OnLost functions not yet run).
type fencedEngine struct {
	*fakeEngine
	guard *capacitytest.LosingGuard
}

func (e *fencedEngine) OpenSession(context.Context, *query.Request) (engine.Session, error) {
	return &fencedSession{e: e}, nil
}

type fencedSession struct{ e *fencedEngine }

func (s *fencedSession) Execute(context.Context, *query.Request) (query.Rows, error) {
	s.e.executes.Add(1)
	for _, slot := range s.e.guard.Slots() {
		slot.LoseLater() // the keeper's news, not yet delivered
	}
	return nil, &query.Error{Code: "57P01", Message: "terminating connection due to administrator command"}
}
func (s *fencedSession) TxStatus() byte { return 'I' }
func (s *fencedSession) Close() error   { return nil }

// TestSessionOnAFencedConnectionAnswersTheLostLease: a session's statement that fails because
// the fence ended its connection, and one sent after its lease's term passed, answer the lost
// lease's error (40000: roll back and retry) even before the keeper has told the session; the
// latter is not sent to the engine.
func TestSessionOnAFencedConnectionAnswersTheLostLease(t *testing.T) {
	h := newHarness(t)
	g := capacitytest.NewLosingGuard()
	h.core = New(Options{Env: h.env, OnFinish: h.recs.add, Guard: g})
	e := &fencedEngine{fakeEngine: &fakeEngine{name: "c1", rows: 1}, guard: g}
	h.activate(oneGroup(RoundRobin, 5, time.Second, cl("c1", 2, e)))
	s, err := h.core.OpenSession(context.Background(), sel("begin"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, what := range []string{"the statement the fence stopped", "the next statement"} {
		_, err = s.Execute(context.Background(), sel("insert into t values (1)"))
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != query.CodeLeaseLost {
			t.Fatalf("%s: %v, want the lost lease's %s", what, err, query.CodeLeaseLost)
		}
		if n := e.executes.Load(); n != 1 {
			t.Fatalf("after %d statements the engine saw %d", i+1, n)
		}
	}
}
