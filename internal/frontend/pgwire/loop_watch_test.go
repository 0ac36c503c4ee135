//go:build linux

package pgwire_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/node/proxy"
)

// The loop looks at one message of a simple Query's answer, its ReadyForQuery (where the
// statement's rows are counted), not at its RowDescription and CommandComplete as well; and
// an extended-protocol statement after such Queries on the same connection still has the
// messages that complete its Describe and Execute looked at (it is relayed by the loop, with
// its result). The history's row counts of the Queries stay exact.
func TestLoopLooksAtAQuerysAnswerAtItsEnd(t *testing.T) {
	srv, url, h := loopServer(t, proxy.PoolModeTransaction, 1)
	c := connect(t, url)
	ctx := context.Background()
	const queries = 30
	for i := range queries {
		sql := fmt.Sprintf("select g from generate_series(1, %d) g", 1+i%4)
		rows, err := c.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if rows.Close(); rows.Err() != nil || n != 1+i%4 {
			t.Fatalf("%s: %d rows, err %v", sql, n, rows.Err())
		}
	}
	for i := range queries {
		sql := fmt.Sprintf("select g from generate_series(1, %d) g", 1+i%4)
		recs := h.Find(sql)
		if len(recs) == 0 || recs[len(recs)-1].Rows != int64(1+i%4) {
			t.Fatalf("records of %q: %+v, want %d rows", sql, recs, 1+i%4)
		}
	}
	executes := srv.LoopExecutes()
	for i := range 3 {
		var got int
		if err := c.QueryRow(ctx, "select $1::int + 1", pgx.QueryExecModeDescribeExec, 40+i).Scan(&got); err != nil || got != 41+i {
			t.Fatalf("extended statement %d: %d, %v", i, got, err)
		}
	}
	if n := srv.LoopExecutes() - executes; n < 2 {
		t.Fatalf("the loop relayed %d of the 3 extended statements after the Queries", n)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.LoopWatched() < queries && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// Each Query's ReadyForQuery, and up to 8 for each extended statement (a Describe's
	// ParseComplete, ParameterDescription, RowDescription and ReadyForQuery, an Execute's
	// BindComplete, CommandComplete and ReadyForQuery): looking at every Query's
	// RowDescription and CommandComplete too would be 3 a Query.
	if w := srv.LoopWatched(); w < queries || w > queries+3*8 {
		t.Fatalf("the loop looked at %d of the engine's messages for %d Queries and 3 extended statements; want %d to %d", w, queries, queries, queries+3*8)
	}
}
