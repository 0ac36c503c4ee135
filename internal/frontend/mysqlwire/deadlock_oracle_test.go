package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestDeadlockEndsTheTransactionAsMariaDB: two clients' transactions lock two rows in
// opposite orders. The engine picks a victim (InnoDB at once, PostgreSQL after its
// deadlock_timeout; not always the same client), which gets 1213, and the whole of the victim's
// transaction is gone, as InnoDB rolls it back: its earlier insert and update are undone, its
// next statement runs outside any transaction (committed at once, a ROLLBACK after it undoes
// nothing), and the winner commits everything it did. On PostgreSQL the proxy's statement
// savepoint (stmtrollback.go) must not undo the deadlocked statement alone, which would leave
// the victim's transaction open with its first statements. The victim is read from whichever
// client errs, on each side; the rows after are what MariaDB leaves for that victim.
func TestDeadlockEndsTheTransactionAsMariaDB(t *testing.T) {
	maria, _ := newMariaDB(t)
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	server, err := pgx.Connect(context.Background(), pgtest.ServerURL()) // the proxy shows a client its own backend only
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(context.Background()) })
	for _, side := range []struct {
		name    string
		db      *sql.DB
		waiting func(context.Context) (n int, err error) // counts the statements waiting for a lock
	}{
		{"MariaDB", maria, func(ctx context.Context) (n int, err error) {
			err = maria.QueryRowContext(ctx, "select count(*) from information_schema.processlist where info like 'update dl set v = 11%'").Scan(&n)
			return n, err
		}},
		{"PostgreSQL", pg, func(ctx context.Context) (n int, err error) {
			err = server.QueryRow(ctx, "select count(*) from pg_stat_activity where wait_event_type = 'Lock' and query like '%dl set v = 11%'").Scan(&n)
			return n, err
		}},
	} {
		t.Run(side.name, func(t *testing.T) {
			got, want := deadlockOutcome(t, side.db, side.waiting)
			if got != want {
				t.Errorf("after the deadlock:\n got  %s\n want %s (as MariaDB)", got, want)
			}
		})
	}
}

// deadlockOutcome runs the deadlock on db (waiting: a query counting the blocked statements)
// and returns what the victim read after it and the table, and what MariaDB gives for that
// victim.
func deadlockOutcome(t *testing.T, db *sql.DB, waiting func(context.Context) (int, error)) (got, want string) {
	ctx := context.Background()
	db.SetMaxIdleConns(0)
	var conns [3]*sql.Conn
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	a, b, observer := conns[0], conns[1], conns[2]
	must := func(c *sql.Conn, stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			if _, err := c.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	must(observer, "create table dl (id int primary key, v int)", "insert into dl values (1, 0), (2, 0)")
	must(a, "start transaction", "insert into dl values (3, 0)", "update dl set v = 10 where id = 1")
	must(b, "start transaction", "insert into dl values (4, 0)", "update dl set v = 20 where id = 2")
	errs := make(chan [2]error, 2)
	// the updates give up after 30 s (the driver closes its connection), so that a transaction
	// left open by a wrong answer fails the test rather than hanging it
	wait, cancel := context.WithTimeout(ctx, 30*time.Second) //determinism:ok a real server's deadlock detection
	defer cancel()
	go func() {
		_, err := a.ExecContext(wait, "update dl set v = 11 where id = 2") // waits for b
		errs <- [2]error{err, nil}
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) { //determinism:ok a real server's lock wait, polled
		n, err := waiting(ctx)
		if err != nil {
			t.Fatalf("counting the waiting statements: %v", err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) { //determinism:ok as above
			t.Fatal("the first update never waited for the second transaction's lock")
		}
	}
	go func() {
		_, err := b.ExecContext(wait, "update dl set v = 21 where id = 1") // closes the cycle
		errs <- [2]error{nil, err}
	}()
	var failed [2]error
	for range 2 {
		e := <-errs
		failed[0], failed[1] = cmpOr(failed[0], e[0]), cmpOr(failed[1], e[1])
	}
	victim, winner := a, b
	wantRows := "(1,21) (2,20) (4,0) (5,0)"
	switch {
	case errNumber(failed[0]) == 1213 && failed[1] == nil:
	case errNumber(failed[1]) == 1213 && failed[0] == nil:
		victim, winner = b, a
		wantRows = "(1,10) (2,11) (3,0) (5,0)"
	default:
		t.Fatalf("want one update 1213 and the other done (a victim's transaction left open holds its locks): %v, %v", failed[0], failed[1])
	}
	t.Logf("victim: the client whose transaction inserted %s", map[bool]string{true: "3", false: "4"}[victim == a])
	// the victim's transaction is gone: its next statement commits alone, its ROLLBACK undoes nothing
	_, ierr := victim.ExecContext(ctx, "insert into dl values (5, 0)")
	_, rerr := victim.ExecContext(ctx, "rollback")
	must(winner, "commit")
	rows, err := observer.QueryContext(ctx, "select id, v from dl order by id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got = fmt.Sprintf("insert %d, rollback %d:", errNumber(ierr), errNumber(rerr))
	for rows.Next() {
		var id, v int
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		got += fmt.Sprintf(" (%d,%d)", id, v)
	}
	return got, "insert 0, rollback 0: " + wantRows
}

// cmpOr is the first error that is not nil.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
