package trinohttp

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// A query's context is not the server's context's child (start): what ends a statement that
// waits inside the engine for PostgreSQL's answer (pgx watching the query's context) is the
// query's own cancel, by a DELETE of its nextUri, by its client gone (abandoned), or by the
// server's Close, which cancels every held query (cancelHeld). Each stops the statement on
// PostgreSQL, within seconds of a pg_sleep(60).
func TestEveryEndOfAQueryStopsItsStatementOnPostgreSQL(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	backend := postgresBackendAt(t, dbURL)
	sleep := func(marker string) string { return fmt.Sprintf("select pg_sleep(60) /* %s */", marker) }

	t.Run("DELETE of its nextUri", func(t *testing.T) {
		ts := startServer(t, backend, Options{PollWait: 50 * time.Millisecond})
		_, qr := post(t, ts.addr, sleep("qf-tp-delete"))
		waitEngineActive(t, dbURL, "qf-tp-delete")
		req, _ := http.NewRequest(http.MethodDelete, qr.NextURI, nil)
		if resp, _ := do(t, req); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %d", resp.StatusCode)
		}
		waitEngineIdle(t, dbURL, "qf-tp-delete")
		waitNoQueries(t, ts, "the deleted query is still held")
	})
	t.Run("its client gone", func(t *testing.T) {
		ts := startServer(t, backend, Options{PollWait: 50 * time.Millisecond, AbandonAfter: 300 * time.Millisecond})
		post(t, ts.addr, sleep("qf-tp-gone"))
		waitEngineActive(t, dbURL, "qf-tp-gone")
		waitEngineIdle(t, dbURL, "qf-tp-gone")
		waitNoQueries(t, ts, "the abandoned query is still held")
	})
	t.Run("the server's Close", func(t *testing.T) {
		ts := startServer(t, backend, Options{PollWait: 50 * time.Millisecond})
		post(t, ts.addr, sleep("qf-tp-close"))
		waitEngineActive(t, dbURL, "qf-tp-close")
		closed := make(chan struct{})
		go func() { ts.Server.Close(); close(closed) }()
		waitEngineIdle(t, dbURL, "qf-tp-close")
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return: a running query was not cancelled")
		}
	})
}

// waitEngineActive waits up to 10s until a statement containing marker runs on the PostgreSQL
// database at dbURL, failing t otherwise.
func waitEngineActive(t *testing.T, dbURL, marker string) {
	t.Helper()
	admin, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := admin.QueryRow(context.Background(), `select count(*) from pg_stat_activity
			where query like '%' || $1 || '%' and state = 'active' and pid <> pg_backend_pid()`, marker).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the query marked %s never ran on PostgreSQL", marker)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
