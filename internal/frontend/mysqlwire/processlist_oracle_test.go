package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestOwnSessionInProcesslistOnDuckDB: information_schema.PROCESSLIST, SHOW [FULL] PROCESSLIST
// and CONNECTION_ID() on the embedded DuckDB show the client's own connection as MariaDB shows
// it (the mariadb CLI's users and GUI tools' session views ask; DuckDB has no such table and
// answered its catalog error, 1146): the row's ID is the connection id (what KILL takes), its
// database, command, time and statement the session's, MariaDB's columns; the proxy shows no
// other connection.
func TestOwnSessionInProcesslistOnDuckDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	compareSteps(t, conns[0], conns[1], []string{
		"SELECT COMMAND, TIME, INFO, DB = DATABASE() AS db FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT COMMAND, TIME, INFO%'",
		"SELECT count(*), max(ID) = CONNECTION_ID() FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
		"SELECT count(*) FROM information_schema.processlist p WHERE p.ID = CONNECTION_ID() AND p.INFO LIKE 'SELECT count%'",
		"SELECT `PROCESSLIST`.`COMMAND` FROM `information_schema`.`PROCESSLIST` WHERE `PROCESSLIST`.ID = CONNECTION_ID()",
	})
	ctx := context.Background()
	columns := func(c querier) []string {
		rows, err := c.QueryContext(ctx, "SELECT * FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		names, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	if want, got := columns(conns[0]), columns(conns[1]); !slices.Equal(want, got) {
		t.Errorf("PROCESSLIST's columns:\n  MariaDB: %v\n  DuckDB:  %v", want, got)
	}
	var id int64
	if err := conns[1].QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	for _, show := range []string{"SHOW PROCESSLIST", "show full processlist"} {
		rows, err := conns[1].QueryContext(ctx, show)
		if err != nil {
			t.Fatalf("%s: %v", show, err)
		}
		var got [][8]any
		for rows.Next() {
			var r [8]any
			if err := rows.Scan(&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6], &r[7]); err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
		rows.Close()
		if len(got) != 1 || fmt.Sprint(got[0][0]) != fmt.Sprint(id) && string(got[0][0].([]byte)) != fmt.Sprint(id) || string(got[0][4].([]byte)) != "Query" ||
			string(got[0][7].([]byte)) != show {
			t.Errorf("%s: %q; want one row: Id %d, Command Query, Info %q", show, got, id, show)
		}
	}
}

// TestSleepOnDuckDBAsMariaDB: SLEEP(seconds) on the embedded DuckDB waits and answers 0 as
// MariaDB does (0 for NULL and a negative too), and a KILL QUERY from another connection ends
// the wait with 1317 on both (tests of cancellation and timeouts use it; DuckDB has no such
// function: 1305).
func TestSleepOnDuckDBAsMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	compareSteps(t, conns[0], conns[1], []string{"SELECT SLEEP(0.05), SLEEP(NULL), SLEEP(-1), SLEEP(0) AS z"})
	ctx := context.Background()
	for i, c := range conns {
		var id int64
		if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			var v int
			done <- c.QueryRowContext(ctx, "SELECT SLEEP(60)").Scan(&v)
		}()
		killer := []*sql.DB{maria, duck}[i]
		// A KILL QUERY before the sleep starts finds nothing to end: kill until it ends.
		var killed error
		for deadline := time.Now().Add(20 * time.Second); killed == nil; {
			if time.Now().After(deadline) {
				t.Fatalf("side %d: SLEEP(60) still running 20 s after the first KILL QUERY", i)
			}
			if _, err := killer.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id)); err != nil {
				t.Fatalf("KILL QUERY %d: %v", id, err)
			}
			select {
			case killed = <-done:
				if killed == nil {
					killed = errors.New("no error")
				}
			case <-time.After(250 * time.Millisecond):
			}
		}
		if got := errNumber(killed); got != 1317 {
			t.Errorf("side %d: SLEEP(60) killed: %v (error %d); want 1317", i, killed, got)
		}
	}
}
