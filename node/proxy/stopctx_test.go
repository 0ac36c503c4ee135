package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// ctxEngine is fakeEngine keeping the context each statement ran under.
type ctxEngine struct {
	fakeEngine
	ctxs []context.Context
}

func (e *ctxEngine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	e.ctxs = append(e.ctxs, ctx)
	return e.fakeEngine.Execute(ctx, q)
}

// A caller whose context is the query's own and carries its cancel (query.WithStop, as
// trinohttp's) has the engine run under that context, no context derived from it (one fewer
// per statement), and cancelled when the rows end; a caller without one, and any under a
// group's query timeout, has one of the core's own, which ending the rows cancels and the
// caller's does not.
func TestTheCallersQueryContextIsTheEngines(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Minute} {
		h := newHarness(t)
		e := &ctxEngine{fakeEngine: fakeEngine{rows: 1}}
		spec := oneGroup("", 10, time.Second, cl("c", 4, e))
		spec.Groups[0].QueryTimeout = timeout
		h.activate(spec)

		own, stop := context.WithCancel(context.Background())
		if n, err := h.run(query.WithStop(own, stop), sel("select 1")); err != nil || n != 1 {
			t.Fatalf("timeout %s: the caller's own context: %d rows, %v", timeout, n, err)
		}
		plain, cancelPlain := context.WithCancel(context.Background())
		if n, err := h.run(plain, sel("select 1")); err != nil || n != 1 {
			t.Fatalf("timeout %s: a plain context: %d rows, %v", timeout, n, err)
		}
		cancelPlain()
		first, second := e.ctxs[0], e.ctxs[1]
		if shared := first.Done() == own.Done(); shared != (timeout == 0) {
			t.Fatalf("timeout %s: the engine's context is the caller's own: %v, want %v", timeout, shared, timeout == 0)
		}
		if first.Err() == nil || (own.Err() == nil) != (timeout > 0) {
			t.Fatalf("timeout %s: the rows ended: the caller's context %v, the engine's %v", timeout, own.Err(), first.Err())
		}
		stop()
		if _, has := first.Deadline(); has != (timeout > 0) {
			t.Fatalf("timeout %s: the engine's context has a deadline: %v", timeout, has)
		}
		if second.Done() == plain.Done() || second.Err() == nil || query.Stop(second) == nil {
			t.Fatalf("timeout %s: a plain caller's engine context: its own %v, cancelled %v, with a stop %v",
				timeout, second.Done() != plain.Done(), second.Err() != nil, query.Stop(second) != nil)
		}
		if query.Stop(first) == nil {
			t.Fatalf("timeout %s: the engine's context carries no stop", timeout)
		}
	}
}
