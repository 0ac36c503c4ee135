package disconnect

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/querynode"
)

// bigResult is a statement of each engine whose result (about 33 MB) is far more than the
// sockets between the engine, the proxy and the client hold, so that a client reading its first
// rows leaves most of it still on its way.
var bigResult = map[string]string{
	"postgres": "select g, repeat('x', 100) from generate_series(1, 300000) g",
	"mariadb":  "select seq, repeat('x', 100) from seq_1_to_300000",
	"duckdb":   "select range, repeat('x', 100) from range(300000)",
}

// reset ends nc as a crashed client host's kernel does: a TCP reset, nothing flushed.
func reset(t *testing.T, nc net.Conn) {
	t.Helper()
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		t.Fatalf("the client's connection is a %T", nc)
	}
	_ = tc.SetLinger(0)
	_ = tc.Close()
}

// afterReset checks what the next client gets once a client was reset mid-result: its slot
// freed, and right answers to statements in a row on a new connection (an engine connection
// given back with the rest of the reset client's result still on it would answer them with
// that result's rows, or fail).
func afterReset(t *testing.T, n *querynode.Node, next func(i int) (int, error)) {
	t.Helper()
	waitUntil(t, stopBound, "the reset client's slot freed", func() bool { return n.Core().Running("c") == 0 })
	for i := 1; i <= 20; i++ {
		got, err := next(i)
		if err != nil || got != i {
			t.Fatalf("statement %d after the reset: %d, %v", i, got, err)
		}
	}
}

// The PostgreSQL wire: a client reads the first rows of a large result and is reset.
func TestPgwireResetMidResultLeavesTheNextClientRightAnswers(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		url := "postgres://" + querynode.LoopbackUser + "@" + n.Addrs()["postgres"] + "/" + tg.db + "?sslmode=disable"
		ctx := context.Background()
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			a, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := a.Query(ctx, bigResult[tg.name], mode)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 100 && rows.Next(); i++ {
			}
			reset(t, a.PgConn().Conn())
			b, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			afterReset(t, n, func(i int) (int, error) {
				var v int
				err := b.QueryRow(ctx, fmt.Sprintf("select %d", i), mode).Scan(&v)
				return v, err
			})
			b.Close(ctx)
		}
	})
}

// The MySQL wire: the same, in the text and the binary protocol.
func TestMySQLResetMidResultLeavesTheNextClientRightAnswers(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		for _, prepared := range []bool{false, true} {
			tr := &connTracker{}
			a := openMySQL(t, n, tr)
			var rows *sql.Rows
			var err error
			if prepared {
				rows, err = a.Query(bigResult[tg.name]+" where 1 = ?", 1)
			} else {
				rows, err = a.Query(bigResult[tg.name])
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 100 && rows.Next(); i++ {
			}
			reset(t, *tr.last.Load())
			b := openMySQL(t, n, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			afterReset(t, n, func(i int) (int, error) {
				var v int
				var err error
				if prepared {
					err = b.QueryRowContext(ctx, "select ? + 0", i).Scan(&v)
				} else {
					err = b.QueryRowContext(ctx, fmt.Sprintf("select %d", i)).Scan(&v)
				}
				return v, err
			})
			cancel()
			b.Close()
		}
	})
}
