package proxy

import (
	"context"
	"io"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// stopEngine records the stop its query's context carries.
type stopEngine struct {
	instantEngine
	ctx  context.Context
	stop context.CancelFunc
}

func (e *stopEngine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	e.ctx, e.stop = ctx, query.Stop(ctx)
	return &emptyRows{}, nil
}

// The core hands an engine the cancel of the query's context (query.Stop), so that the engine
// ends a statement early without a context of its own: calling it ends that context, and the
// query still finishes as the stream's end decides.
func TestExecuteHandsTheEngineItsCancel(t *testing.T) {
	eng := &stopEngine{}
	var finished []Record
	core := New(Options{Env: newTestEnv(), OnFinish: func(r *Record) { finished = append(finished, *r) }})
	rt, err := NewRuntime(oneGroup(RoundRobin, 10, 0, cl("a", 1, eng)))
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	ctx := context.Background()
	rows, err := core.Execute(ctx, &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres})
	if err != nil {
		t.Fatal(err)
	}
	if eng.stop == nil {
		t.Fatal("the engine's context carries no stop")
	}
	eng.stop() // as pgengine does when its rows close
	if eng.ctx.Err() == nil {
		t.Fatal("the stop handed down does not end the engine's context")
	}
	if _, err := rows.Next(ctx); err != io.EOF {
		t.Fatal(err)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if len(finished) != 1 || finished[0].Status != StatusSucceeded || core.Running("a") != 0 {
		t.Fatalf("finished %+v, running %d; want one succeeded query and its slot back", finished, core.Running("a"))
	}
}
