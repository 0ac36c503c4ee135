package flightsql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
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

// TestEndActionsRefuseWhatTheyDoNotTake: EndTransaction and EndSavepoint refuse an action they
// do not take (naming those they do) before touching the transaction, which stays open; a
// savepoint id naming no transaction (":x") is an unknown savepoint. (It was taken for no
// transaction, and the nil one read under the server's lock: a panic that gRPC's recovery
// answered left the lock held, and every later call of every client waited on it.)
func TestEndActionsRefuseWhatTheyDoNotTake(t *testing.T) {
	s, err := NewServer(engineCore(t, engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), userKey{}, "alice")
	for _, bad := range []string{":x", ":", "x"} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("savepoint id %q: panic %v", bad, r) // s is left unclosed: its lock may be held
				}
			}()
			err = s.EndSavepoint(ctx, &pb.ActionEndSavepointRequest{SavepointId: []byte(bad), Action: pb.ActionEndSavepointRequest_END_SAVEPOINT_RELEASE})
			wantCode(t, "savepoint id "+bad, err, codes.InvalidArgument)
		}()
	}
	defer s.Close()
	id, err := s.BeginTransaction(ctx, &pb.ActionBeginTransactionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.EndTransaction(ctx, &pb.ActionEndTransactionRequest{TransactionId: id})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "END_TRANSACTION_COMMIT, END_TRANSACTION_ROLLBACK") {
		t.Fatalf("EndTransaction without an action: %v", err)
	}
	sp, err := s.BeginSavepoint(ctx, &pb.ActionBeginSavepointRequest{TransactionId: id, Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	err = s.EndSavepoint(ctx, &pb.ActionEndSavepointRequest{SavepointId: sp})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "END_SAVEPOINT_RELEASE, END_SAVEPOINT_ROLLBACK") {
		t.Fatalf("EndSavepoint without an action: %v", err)
	}
	if err := s.EndSavepoint(ctx, &pb.ActionEndSavepointRequest{SavepointId: sp, Action: pb.ActionEndSavepointRequest_END_SAVEPOINT_RELEASE}); err != nil {
		t.Fatalf("the savepoint after the refusals: %v", err)
	}
	if err := s.EndTransaction(ctx, &pb.ActionEndTransactionRequest{TransactionId: id, Action: pb.ActionEndTransactionRequest_END_TRANSACTION_COMMIT}); err != nil {
		t.Fatalf("the transaction after the refusals: %v", err)
	}
}
