package flightsql

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestTransactionWhoseConnectionEndedStaysAborted: a transaction whose engine connection ends
// under it (an administrator's pg_terminate_backend, as a fence does) stays its client's, as
// an aborted one: its next statements are refused (none runs outside the transaction and
// commits on its own), COMMIT answers Aborted and commits nothing, ROLLBACK succeeds.
func TestTransactionWhoseConnectionEndedStaysAborted(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	c := startServer(t, engineCore(t, engine.Spec{Name: "pg", Kind: "postgres", Endpoint: dsn}), Options{Auth: passwords{"alice": "pw"}})
	ctx := login(t, c, "alice", "pw")
	mustUpdate(t, ctx, c, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
	admin, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	for _, end := range []string{"commit", "rollback"} {
		tx, err := c.BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecuteUpdate(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		info, err := tx.Execute(ctx, "SELECT pg_backend_pid()")
		if err != nil {
			t.Fatal(err)
		}
		_, rows := fetch(t, ctx, c, info)
		if _, err := admin.Exec(context.Background(), "SELECT pg_terminate_backend("+rows[0][0]+")"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecuteUpdate(ctx, "INSERT INTO t VALUES (2)"); err == nil {
			t.Fatal("a statement on the ended connection succeeded")
		}
		_, err = tx.ExecuteUpdate(ctx, "INSERT INTO t VALUES (3)")
		if st, _ := status.FromError(err); st.Code() != codes.Aborted || !strings.Contains(st.Message(), "[25P02]") {
			t.Fatalf("the next statement of the ended transaction: %v, want Aborted 25P02", err)
		}
		if end == "commit" {
			wantCode(t, "COMMIT of the ended transaction", tx.Commit(ctx), codes.Aborted)
		} else if err := tx.Rollback(ctx); err != nil {
			t.Fatalf("ROLLBACK of the ended transaction: %v", err)
		}
		if got := count(t, ctx, c, "t"); got != "0" {
			t.Fatalf("after %s of the ended transaction: %s rows, want 0", end, got)
		}
	}
}
