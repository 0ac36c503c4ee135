package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestClientCannotEndAnotherClientsEngineSession: every client of a cluster reaches
// PostgreSQL as the same engine role, which may cancel and terminate its own backends. Bob
// knows Alice's running statement's backend (from the engine itself: through the proxy he sees only his own) and tries to end its backend through the
// proxy in every way a statement can name the functions (bare, schema-qualified, quoted, U&
// escaped, in a DO block, in both protocols); each is refused, and Alice's statement ends
// with its row.
func TestClientCannotEndAnotherClientsEngineSession(t *testing.T) {
	addr, url, _, _ := coreServer(t, coreSetup{})
	direct := connect(t, url) // the engine's own view: Bob sees only his session (activity.go)
	alice := connect(t, proxyURL(addr, "alice"))
	bob := connect(t, proxyURL(addr, "bob"))
	const victim = "select pg_sleep(3), 'qf-victim-statement' /* alice */"
	done := make(chan error, 1)
	go func() {
		var tag string
		err := alice.QueryRow(context.Background(), victim).Scan(nil, &tag)
		if err == nil && tag != "qf-victim-statement" {
			err = fmt.Errorf("row %q", tag)
		}
		done <- err
	}()
	var pid int
	waitFor(t, 10*time.Second, func() bool {
		err := direct.QueryRow(context.Background(),
			`select pid from pg_stat_activity where query like '%qf-victim-' || 'statement%' and state = 'active'`).Scan(&pid)
		return err == nil
	})
	const where = ` from pg_stat_activity where query like '%qf-victim-' || 'statement%'`
	for _, attack := range []string{
		"select pg_cancel_backend(pid)" + where,
		"select pg_terminate_backend(pid)" + where,
		"SELECT PG_CATALOG.PG_CANCEL_BACKEND(pid)" + where,
		`select "pg_terminate_backend"(pid)` + where,
		`select pg_catalog . "pg_cancel_backend" (pid)` + where,
		`select U&"pg\005fcancel\005fbackend"(pid)` + where,
		fmt.Sprintf("do $x$ begin perform pg_cancel_backend(%d); end $x$", pid),
		fmt.Sprintf("/* c */ select pg_cancel_backend(%d)", pid),
	} {
		for mode, m := range map[string]pgx.QueryExecMode{"simple": pgx.QueryExecModeSimpleProtocol, "extended": pgx.QueryExecModeExec} {
			_, err := bob.Exec(context.Background(), attack, m)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42501" {
				t.Errorf("%s %q: %v, want refused with 42501", mode, attack, err)
			}
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("alice's statement: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("alice's statement did not end")
	}
	// Words that only look alike pass.
	var s string
	if err := bob.QueryRow(context.Background(), "select 'kill' || '_backend as text'").Scan(&s); err != nil {
		t.Fatalf("a harmless statement: %v", err)
	}
}
