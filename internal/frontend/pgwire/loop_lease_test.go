//go:build linux

package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// pgx's Deallocate closes a prepared statement in a batch of its own (Close, Sync). Between
// transactions (transaction pool mode) the event loop answers it without an engine
// connection: no slot, a worker's lease, is granted for it, and the client is not handed back
// to its goroutine. The statement is gone as on PostgreSQL (binding it fails with 26000) and
// can be prepared again under its name.
func TestEventLoopClosesStatementsWithoutASlot(t *testing.T) {
	guard := capacitytest.NewLosingGuard()
	srv, proxyURL, direct, _ := loopServerDirect(t, proxy.PoolModeTransaction, 4, pgwireTrustAll(), guard)
	ctx := context.Background()
	names := []string{"s0", "s1", "s2", "s3", "s4"}
	exec := func(c *pgx.Conn, name string) string {
		res := c.PgConn().ExecPrepared(ctx, name, [][]byte{[]byte("1")}, nil, nil).Read()
		var pe *pgconn.PgError
		if errors.As(res.Err, &pe) {
			return "error " + pe.Code
		}
		if res.Err != nil || len(res.Rows) != 1 {
			t.Fatalf("%s: %v", name, res.Err)
		}
		return string(res.Rows[0][0])
	}
	run := func(url string, closing func(func())) []string {
		c := connect(t, url)
		if got := queryInt(t, c, "select 1"); got != 1 { // the loop takes a client after its first statement
			t.Fatal(got)
		}
		var out []string
		for i, name := range names {
			if _, err := c.Prepare(ctx, name, fmt.Sprintf("select $1::int4 + %d", i)); err != nil {
				t.Fatal(err)
			}
			out = append(out, exec(c, name))
		}
		closing(func() {
			for _, name := range names {
				if err := c.Deallocate(ctx, name); err != nil {
					t.Fatalf("deallocate %s: %v", name, err)
				}
			}
		})
		out = append(out, exec(c, "s0"))
		if _, err := c.Prepare(ctx, "s0", "select $1::int4 * 10"); err != nil {
			t.Fatal(err)
		}
		return append(out, exec(c, "s0"))
	}
	want := run(direct, func(deallocate func()) { deallocate() })
	if got := strings.Join(want, " "); got != "1 2 3 4 5 error 26000 10" {
		t.Fatalf("directly on PostgreSQL: %s", got)
	}
	executes := srv.LoopExecutes()
	got := run(proxyURL, func(deallocate func()) {
		if srv.LoopExecutes()-executes < 4 {
			t.Fatalf("the loop relayed %d of the 5 prepared statements: the client is not on it", srv.LoopExecutes()-executes)
		}
		grants, pauses := guard.Grants(), srv.LoopPauses()
		deallocate()
		if n := guard.Grants() - grants; n != 0 {
			t.Fatalf("closing %d statements between transactions took %d slots, want none", len(names), n)
		}
		if n := srv.LoopPauses() - pauses; n != 0 {
			t.Fatalf("the loop handed the client back %d times to close its statements, want none", n)
		}
	})
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("through the loop: %q, directly: %q", got, want)
	}
}

// When the lease of a statement the event loop relays is lost (its worker fenced), the
// statement ends: PostgreSQL stops running it (the engine connection's cancel), the client gets
// an error naming the lost lease, the history records it so, and the client's next
// transaction runs under a new slot.
func TestEventLoopLostLeaseEndsTheStatement(t *testing.T) {
	guard := capacitytest.NewLosingGuard()
	srv, proxyURL, direct, h := loopServerDirect(t, proxy.PoolModeTransaction, 4, pgwireTrustAll(), guard)
	c, admin := connect(t, proxyURL), connect(t, direct)
	if got := queryInt(t, c, "select 1"); got != 1 { // the loop takes a client after its first statement
		t.Fatal(got)
	}
	const marker = "qf-lost-lease-test"
	const sleep = "select pg_sleep(30) /* " + marker + " */"
	before := srv.LoopStatements()
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), sleep)
		done <- err
	}()
	waitFor(t, 30*time.Second, func() bool { return countActive(t, admin, marker) == 1 })
	if n := srv.LoopStatements() - before; n != 1 {
		t.Fatalf("the sleep was not relayed by the loop (%d statements)", n)
	}
	guard.LoseAll()
	var pe *pgconn.PgError
	if err := <-done; !errorsAs(err, &pe) || pe.Code != query.CodeLeaseLost || !strings.Contains(pe.Message, "lease") {
		t.Fatalf("the statement whose lease was lost: %v, want %s naming the lease", err, query.CodeLeaseLost)
	}
	waitFor(t, 30*time.Second, func() bool { return countActive(t, admin, marker) == 0 })
	if recs := h.Find(sleep); len(recs) != 1 || recs[0].ErrorCode != query.CodeLeaseLost {
		t.Fatalf("history of the statement: %+v", recs)
	}
	grants := guard.Grants()
	if got := queryInt(t, c, "select 2"); got != 2 {
		t.Fatal(got)
	}
	if n := guard.Grants() - grants; n != 1 {
		t.Fatalf("the next transaction took %d slots, want one", n)
	}
}

// countActive counts the backends running a statement that carries marker.
func countActive(t *testing.T, admin *pgx.Conn, marker string) int {
	t.Helper()
	var n int
	err := admin.QueryRow(context.Background(),
		`select count(*) from pg_stat_activity where query like '%' || $1 || '%' and state = 'active' and pid <> pg_backend_pid()`, marker).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A client that now and then sends a message the event loop does not relay (here a Bind of a
// statement it never prepared, which the goroutine refuses) stays on the loop: only misses in
// a row, before any statement, take it off.
func TestEventLoopKeepsAClientThatMissesNowAndThen(t *testing.T) {
	srv, proxyURL, _, _ := loopServerDirect(t, proxy.PoolModeTransaction, 4, pgwireTrustAll(), nil)
	c := connect(t, proxyURL)
	ctx := context.Background()
	for round := range 10 {
		before := srv.LoopStatements()
		for i := range 5 {
			if got := queryInt(t, c, fmt.Sprintf("select %d", i)); got != i {
				t.Fatal(got)
			}
		}
		if n := srv.LoopStatements() - before; round > 0 && n < 4 {
			t.Fatalf("round %d: the loop relayed %d of 5 statements", round, n)
		}
		res := c.PgConn().ExecPrepared(ctx, "never-prepared", nil, nil, nil).Read()
		var pe *pgconn.PgError
		if !errors.As(res.Err, &pe) || pe.Code != "26000" {
			t.Fatalf("a Bind of a statement never prepared: %v", res.Err)
		}
	}
}
