package duckengine_test

import (
	"context"
	"database/sql/driver"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
)

// countCalls is a scalar function counting how many rows DuckDB has computed.
type countCalls struct{ n *atomic.Int64 }

func (c countCalls) Config() duckdb.ScalarFuncConfig {
	big, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{big}, ResultTypeInfo: big}
}

func (c countCalls) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(v []driver.Value) (any, error) {
		c.n.Add(1)
		return v[0], nil
	}}
}

// A large SELECT reaches its reader while DuckDB has computed only a part of it: the first batch
// arrives with most rows not yet produced, and reading on produces them all. A materialized
// result computes every row before the first is read.
func TestSelectStreamsWhileDuckDBProduces(t *testing.T) {
	e := open(t)
	var calls atomic.Int64
	if err := duckengine.RegisterScalarUDF(e.(*duckengine.Engine), "qf_counted", countCalls{&calls}); err != nil {
		t.Fatal(err)
	}
	const total = 5_000_000
	rows, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT qf_counted(i) AS i, 'row ' || i AS s FROM range(5000000) t(i)"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Column(0).ValueStr(0); got != "0" {
		t.Fatalf("first row %s, want 0", got)
	}
	if n := calls.Load(); n >= total/2 {
		t.Fatalf("DuckDB had computed %d of %d rows before the first batch was read: the result is materialized", n, total)
	}
	read := b.NumRows()
	for {
		b, err := rows.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.NumRows() > engine.BatchRowsMax {
			t.Fatalf("batch of %d rows exceeds %d", b.NumRows(), engine.BatchRowsMax)
		}
		read += b.NumRows()
	}
	if read != total || calls.Load() != total || rows.Tag() != "SELECT 5000000" {
		t.Fatalf("read %d rows, DuckDB computed %d, tag %q; want %d", read, calls.Load(), rows.Tag(), total)
	}
}

// Closing a streaming result half read frees its connection: the pool of one serves the next query.
func TestStreamClosedEarlyFreesConnection(t *testing.T) {
	e := openConns(t, 1, nil)
	for range 3 {
		rows, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT i FROM range(10000000) t(i)"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rows.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Cancelling the context interrupts a streaming query in DuckDB.
func TestStreamCancelled(t *testing.T) {
	e := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	rows, err := e.Execute(ctx, &query.Request{SQL: "SELECT i FROM range(100000000) t(i)"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if _, err := rows.Next(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	for {
		_, err := rows.Next(ctx)
		if err == io.EOF {
			t.Fatal("a cancelled query read to its end")
		}
		if err != nil {
			break
		}
	}
}

// A cancel that lands while DuckDB is starting the statement still stops it. DuckDB clears a
// connection's interrupt when a query starts (ClientContext::InitialCleanup), so a single
// interrupt sent just before was lost and the statement ran to its end (here: for hours) after
// its caller had given up its slot. The hook cancels and lets the interrupt land right there.
func TestCancelWhileTheStatementStarts(t *testing.T) {
	e := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer duckengine.SetStartingHook(func() {
		cancel()
		time.Sleep(50 * time.Millisecond) // the interrupt is sent before the statement starts
	})()
	ended := make(chan error, 1)
	go func() {
		rows, err := e.Execute(ctx, &query.Request{SQL: "select sum(a.range) from range(1000000000000) a"})
		if err == nil {
			_, err = rows.Next(ctx)
			rows.Close()
		}
		ended <- err
	}()
	const bound = time.Minute // the statement needs hours; an interrupt that works, milliseconds
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("a cancelled statement succeeded")
		}
	case <-time.After(bound):
		t.Fatalf("the statement still ran %v after its cancel", bound)
	}
}
