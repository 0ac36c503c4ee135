package flightsql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestSavepointsAsArrowGoUsesThem: arrow-go's client takes savepoints in a transaction,
// rolls back to one (what followed it is undone, what preceded it kept) and releases one; a
// savepoint the engine no longer has gets the engine's error, an id never issued a clear one;
// SqlInfo advertises savepoints where the engine keeps them (PostgreSQL, MariaDB) and not on
// DuckDB, which refuses ROLLBACK TO.
func TestSavepointsAsArrowGoUsesThem(t *testing.T) {
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			mustUpdate(t, ctx, c, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
			duck := spec.Kind == "duckdb"
			wantTx, wantSP := fmt.Sprint(int32(fsql.SqlTransactionSavepoint)), "true"
			if duck {
				wantTx, wantSP = fmt.Sprint(int32(fsql.SqlTransactionTransaction)), "false"
			}
			if got := sqlInfoValue(t, ctx, c, fsql.SqlInfoFlightSqlServerTransaction); got != wantTx {
				t.Errorf("FLIGHT_SQL_SERVER_TRANSACTION %s, want %s", got, wantTx)
			}
			if got := sqlInfoValue(t, ctx, c, fsql.SqlInfoSavePointsSupported); got != wantSP {
				t.Errorf("SQL_SAVEPOINTS_SUPPORTED %s, want %s", got, wantSP)
			}

			tx, err := c.BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			mustTx := func(sql string) {
				t.Helper()
				if _, err := tx.ExecuteUpdate(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			mustTx("INSERT INTO t VALUES (1)")
			first, err := tx.BeginSavepoint(ctx, `odd "name"`)
			if err != nil {
				t.Fatal(err)
			}
			mustTx("INSERT INTO t VALUES (2)")
			err = tx.RollbackSavepoint(ctx, first)
			if duck {
				wantCode(t, "ROLLBACK TO SAVEPOINT on DuckDB", err, codes.Unimplemented)
				wantCode(t, "COMMIT after it", tx.Commit(ctx), codes.Aborted)
				return
			}
			if err != nil {
				t.Fatalf("ROLLBACK TO SAVEPOINT: %v", err)
			}
			mustTx("INSERT INTO t VALUES (3)")
			second, err := tx.BeginSavepoint(ctx, "s2")
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.ReleaseSavepoint(ctx, second); err != nil {
				t.Fatalf("RELEASE SAVEPOINT: %v", err)
			}
			err = tx.ReleaseSavepoint(ctx, second)
			if st, _ := status.FromError(err); err == nil || !containsAny(st.Message(), "3B001", "1305") {
				t.Errorf("a released savepoint released again: %v, want the engine's error", err)
			}
			err = tx.RollbackSavepoint(ctx, fsql.Savepoint("not-issued"))
			wantCode(t, "a savepoint id never issued", err, codes.InvalidArgument)
			if spec.Kind == "postgres" { // the engine's error failed PostgreSQL's transaction
				wantCode(t, "COMMIT", tx.Commit(ctx), codes.Aborted)
				return
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if got := query1(t, ctx, c, "SELECT n FROM t ORDER BY n"); fmt.Sprint(got) != "[[1] [3]]" {
				t.Fatalf("after COMMIT: %v, want 1 and 3", got)
			}
		})
	}
}

func containsAny(s string, subs ...string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}

// sqlInfoValue is one SqlInfo value as text.
func sqlInfoValue(t *testing.T, ctx context.Context, c *fsql.Client, id fsql.SqlInfo) string {
	t.Helper()
	info, err := c.GetSqlInfo(ctx, []fsql.SqlInfo{id})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("SqlInfo %v: no answer (%v)", id, r.Err())
	}
	u := r.RecordBatch().Column(1).(*array.DenseUnion)
	return u.Field(u.ChildID(0)).ValueStr(int(u.ValueOffset(0)))
}
