package flightsql

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// stallBound is the write stall timeout of these tests: well above what a loaded machine
// delays a reader that keeps reading.
const stallBound = 2 * time.Second

// smallWindowClient is arrow-go's client with gRPC's least fixed stream window (64 KiB; no
// window grown to the connection's bandwidth): a client that stops reading shuts it at once.
func smallWindowClient(t *testing.T, addr string) *fsql.Client {
	t.Helper()
	c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// openStream executes sql and opens its DoGet, released when t ends.
func openStream(t *testing.T, ctx context.Context, c *fsql.Client, sql string) *flight.Reader {
	t.Helper()
	info, err := c.Execute(ctx, sql)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Release)
	return r
}

func stallEngines(t *testing.T) []engine.Spec {
	return []engine.Spec{
		{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)},
		{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"},
	}
}

// TestAStreamWhoseClientStopsReadingEnds: with one slot on the cluster, arrow-go's client reads
// one batch of a 1 GB result and no more while staying connected; within the write stall
// timeout its stream ends, its engine query with it, and another client waiting for the slot
// gets it; counted as bound write_stall. When the first client reads again it gets what was
// already on its way, then DeadlineExceeded naming the bound. Before: gRPC's flow control held
// the stream's Send without any socket write waiting, and the slot was held for as long as the
// client stayed connected.
func TestAStreamWhoseClientStopsReadingEnds(t *testing.T) {
	for _, spec := range stallEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			s, addr := serve(t, engineCoreCap(t, spec, 1), Options{Registerer: prometheus.NewRegistry(),
				Limits: netlimit.Limits{WriteStallTimeout: stallBound}})
			stops, other := smallWindowClient(t, addr), dialFlight(t, addr)
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			r := openStream(t, ctx, stops, "SELECT g, repeat('x', 1000) AS s FROM generate_series(1, 1000000) AS t(g)")
			if !r.Next() {
				t.Fatalf("no first batch: %v", r.Err())
			}
			if rows := query1(t, ctx, other, "SELECT 42"); fmt.Sprint(rows) != "[[42]]" {
				t.Fatalf("the waiting client's rows: %v", rows)
			}
			if n := testutil.ToFloat64(s.refusals.WithLabelValues("flightsql", "write_stall")); n != 1 {
				t.Errorf("write stalls counted: %v, want 1", n)
			}
			read := 1
			for r.Next() {
				read++
			}
			if err := r.Err(); status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "write stall timeout (2s)") {
				t.Fatalf("the stopped reader, after %d more batches: %v; want DeadlineExceeded naming the write stall timeout", read, err)
			}
		})
	}
}

// TestASlowSteadyStreamReaderIsNotCut: a client that takes each batch of a 12 MB result a fifth
// of the write stall timeout after the last, for far longer in all than the timeout, gets every
// row: the bound is on each message's wait, not the stream's length.
func TestASlowSteadyStreamReaderIsNotCut(t *testing.T) {
	for _, spec := range stallEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			s, addr := serve(t, engineCoreCap(t, spec, 1), Options{Registerer: prometheus.NewRegistry(),
				Limits: netlimit.Limits{WriteStallTimeout: stallBound}})
			c := smallWindowClient(t, addr)
			ctx := context.Background()
			const rows = 12000
			r := openStream(t, ctx, c, fmt.Sprintf("SELECT g, repeat('x', 1000) AS s FROM generate_series(1, %d) AS t(g)", rows))
			got, batches := 0, 0
			for r.Next() {
				got += int(r.RecordBatch().NumRows())
				batches++
				time.Sleep(stallBound / 5)
			}
			if err := r.Err(); err != nil || got != rows {
				t.Fatalf("the slow reader got %d rows in %d batches, then %v; want %d rows", got, batches, err, rows)
			}
			if n := testutil.ToFloat64(s.refusals.WithLabelValues("flightsql", "write_stall")); n != 0 {
				t.Errorf("write stalls counted: %v, want 0", n)
			}
		})
	}
}
