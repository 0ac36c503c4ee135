//go:build linux

package pgwire_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/node/proxy"
)

// A wire's first statement keeps its request and run in memory the client's next wire makes
// over (wireRequest, newRun): every transaction here pipelines two statements in one Sync, so
// both are in flight at once and must each be reported with its own text and rows, transaction
// after transaction on the event loop. It fails when a second statement shares the first's run
// (the first reported with the second's count, or not at all) or its request (the first reported
// with the second's text).
func TestLoopPipelinedStatementsKeepTheirOwnRuns(t *testing.T) {
	srv, url, h := loopServer(t, proxy.PoolModeTransaction, 1)
	c := connect(t, url)
	ctx := context.Background()
	before := srv.LoopExecutes()
	const transactions = 20
	for i := range transactions {
		first := fmt.Sprintf("select g, %d from generate_series(1, %d) g", -i, 2+i%3)
		second := fmt.Sprintf("select g, %d from generate_series(1, %d) g", i, 10+i)
		b := &pgconn.Batch{}
		b.ExecParams(first, nil, nil, nil, nil)
		b.ExecParams(second, nil, nil, nil, nil)
		res, err := c.PgConn().ExecBatch(ctx, b).ReadAll()
		if err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		if len(res) != 2 || len(res[0].Rows) != 2+i%3 || len(res[1].Rows) != 10+i {
			t.Fatalf("transaction %d: %d results", i, len(res))
		}
		for _, want := range []struct {
			sql  string
			rows int64
		}{{first, int64(2 + i%3)}, {second, int64(10 + i)}} {
			recs := h.Find(want.sql)
			if len(recs) != 1 || recs[0].Rows != want.rows || recs[0].Status != proxy.StatusSucceeded {
				t.Fatalf("transaction %d: records of %q: %+v, want one of %d rows", i, want.sql, recs, want.rows)
			}
		}
	}
	// The first transaction's messages reach the connection's goroutine before the loop.
	if n := srv.LoopExecutes() - before; n < 2*(transactions-1) {
		t.Fatalf("the loop relayed %d of %d Executes", n, 2*transactions)
	}
}
