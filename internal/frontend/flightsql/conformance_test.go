package flightsql

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// engineCore is a proxy core over one engine, opened from spec.
func engineCore(t *testing.T, spec engine.Spec) *proxy.Core {
	t.Helper()
	return engineCoreCap(t, spec, 4)
}

// engineCoreCap is engineCore with the cluster's maxRunningQueries.
func engineCoreCap(t *testing.T, spec engine.Spec, maxRunning int) *proxy.Core {
	t.Helper()
	eng, err := engine.Openers{pgengine.Kind: pgengine.Open, duckengine.Kind: duckengine.Open, "mysql": mysqlengine.OpenSpec}.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: spec.Name, Enabled: true, MaxRunningQueries: maxRunning, Engine: eng}},
		Groups:   []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: spec.Name}}, MaxQueuedQueries: 10}},
		Fallback: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	return core
}

// TestPreparedStatementSchemas: arrow-go's client gets a prepared statement's parameter
// schema at prepare time (and its dataset schema where the engine describes columns:
// PostgreSQL), binds parameters and runs it; a statement the engine refuses fails to prepare.
func TestPreparedStatementSchemas(t *testing.T) {
	for _, spec := range []engine.Spec{
		{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)},
		{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"},
	} {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			prep, err := c.Prepare(ctx, "SELECT CAST($1 AS INTEGER) + 1 AS n, 'x' AS s")
			if err != nil {
				t.Fatal(err)
			}
			defer prep.Close(ctx)
			if ps := prep.ParameterSchema(); ps == nil || ps.NumFields() != 1 || ps.Field(0).Type.ID() != arrow.INT32 {
				t.Fatalf("parameter schema %v", ps)
			}
			ds := prep.DatasetSchema()
			if spec.Kind == "postgres" && (ds == nil || ds.NumFields() != 2 || ds.Field(0).Name != "n" || ds.Field(0).Type.ID() != arrow.INT32) {
				t.Fatalf("dataset schema %v", ds)
			}
			params := array.NewRecordBuilder(memory.DefaultAllocator, prep.ParameterSchema())
			params.Field(0).(*array.Int32Builder).Append(41)
			rec := params.NewRecordBatch()
			defer rec.Release()
			prep.SetParameters(rec)
			info, err := prep.Execute(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, rows := fetch(t, ctx, c, info); len(rows) != 1 || rows[0][0] != "42" {
				t.Fatalf("rows %v", rows)
			}
			if _, err := c.Prepare(ctx, "SELECT * FROM no_such_table"); err == nil {
				t.Fatal("preparing a statement over a missing table succeeded")
			}
		})
	}
}

// blockingEngine is an engine whose every query runs until its context ends; ended receives
// once per query when it does.
func blockingEngine(ended chan<- error, returnRows bool) frontendtest.FuncEngine {
	return func(ctx context.Context, q *query.Request) (query.Rows, error) {
		if !returnRows {
			<-ctx.Done()
			ended <- ctx.Err()
			return nil, ctx.Err()
		}
		return &blockingRows{ctx: ctx, ended: ended}, nil
	}
}

type blockingRows struct {
	ctx   context.Context
	ended chan<- error
}

func (r *blockingRows) Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
}
func (r *blockingRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	<-r.ctx.Done()
	return nil, io.EOF
}
func (r *blockingRows) Tag() string { return "" }
func (r *blockingRows) Close() error {
	select {
	case <-r.ctx.Done():
		r.ended <- r.ctx.Err()
	default:
		r.ended <- errors.New("closed while running")
	}
	return nil
}

// TestCancelFlightInfoStopsQuery: CancelFlightInfo (and the older CancelQuery action) stop
// the engine query behind an unfetched result at once.
func TestCancelFlightInfoStopsQuery(t *testing.T) {
	ended := make(chan error, 4)
	c := startServer(t, frontendtest.NewBackend(blockingEngine(ended, true)), Options{Auth: passwords{"alice": "pw"}})
	ctx := login(t, c, "alice", "pw")
	info, err := c.Execute(ctx, "SELECT forever")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.Status != flight.CancelStatusCancelled {
		t.Fatalf("CancelFlightInfo: %v, %v", res.Status, err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("engine query ended with %v", err)
	}
	if res, err := c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info}); err != nil || res.Status != flight.CancelStatusNotCancellable {
		t.Fatalf("second CancelFlightInfo: %v, %v", res.Status, err)
	}
	if _, err := c.DoGet(ctx, info.Endpoint[0].Ticket); err == nil {
		t.Log("DoGet of a cancelled result opened a stream") // the error comes with the first read
	}
	info, err = c.Execute(ctx, "SELECT forever")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.CancelQuery(ctx, info); err != nil || res != fsql.CancelResultCancelled {
		t.Fatalf("CancelQuery: %v, %v", res, err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("engine query ended with %v", err)
	}
}

// TestClientDeadlineStopsQuery: a client deadline that passes while the statement starts
// stops the engine query, instead of leaving it to the result's expiry.
func TestClientDeadlineStopsQuery(t *testing.T) {
	ended, started := make(chan error, 8), make(chan struct{}, 8)
	blocking := blockingEngine(ended, false)
	engine := func(ctx context.Context, q *query.Request) (query.Rows, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		return blocking(ctx, q)
	}
	c := startServer(t, frontendtest.NewBackend(frontendtest.FuncEngine(engine)), Options{Auth: passwords{"alice": "pw"}})
	ctx := login(t, c, "alice", "pw")
	// A deadline that passes before the call reaches the server ends it there, with no engine
	// query to stop (a loaded machine): the deadline doubles until a query ran under it.
	for deadline := 200 * time.Millisecond; deadline <= 6400*time.Millisecond; deadline *= 2 {
		dctx, cancel := context.WithTimeout(ctx, deadline)
		_, err := c.Execute(dctx, "SELECT forever")
		cancel()
		if err == nil {
			t.Fatal("a query past its deadline succeeded")
		}
		select {
		case <-started:
		default:
			continue
		}
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("engine query ended with %v", err)
		}
		return
	}
	t.Fatal("no query reached the engine before its deadline")
}
