package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// TestLockWaitTimeoutOnPostgreSQLAsMariaDB: a client's SET innodb_lock_wait_timeout bounds its
// row lock waits on PostgreSQL (before: 1105 unrecognized configuration parameter, and a wait
// with no bound), @@innodb_lock_wait_timeout reads it back, and a wait past it is MariaDB's
// 1205 with its message, which undoes the statement only: the transaction's earlier write
// stays and commits, as on MariaDB. 0 is MariaDB's "do not wait".
func TestLockWaitTimeoutOnPostgreSQLAsMariaDB(t *testing.T) {
	ddl := []string{"create table lw (id int primary key, n int)", "insert into lw values (1, 1), (2, 2)"}
	pg := openDB(t, pgCluster(t, ddl...).addr, testUser, "", "public", "")
	maria, _ := newMariaDB(t)
	ctx := context.Background()
	for _, s := range ddl {
		if _, err := maria.ExecContext(ctx, s); err != nil {
			t.Fatal(s, err)
		}
	}
	var got [2][]string
	for k, db := range []*sql.DB{maria, pg} {
		a, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range []struct {
			c *sql.Conn
			s string
		}{{b, "set innodb_lock_wait_timeout = 0"}, {b, "select @@innodb_lock_wait_timeout"}, {a, "begin"}, {a, "update lw set n = 10 where id = 1"},
			{b, "begin"}, {b, "update lw set n = 20 where id = 2"}, {b, "update lw set n = 30 where id = 1"}, {b, "select n from lw where id = 2"},
			{b, "commit"}, {a, "rollback"}, {b, "select n from lw order by id"},
			{b, "set session innodb_lock_wait_timeout = default"}, {b, "select @@session.innodb_lock_wait_timeout"},
		} {
			got[k] = append(got[k], st.s+": "+stmtAnswer(ctx, st.c, st.s))
		}
		a.Close()
		b.Close()
	}
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Errorf("MariaDB:\n%s\nPostgreSQL:\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
	}
}

// stmtAnswer is what the statement s on c answers: its rows' values or its error.
func stmtAnswer(ctx context.Context, c *sql.Conn, s string) string {
	rows, err := c.QueryContext(ctx, s)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v sql.NullString
		if err := rows.Scan(&v); err != nil {
			return err.Error()
		}
		out = append(out, v.String)
	}
	if err := rows.Err(); err != nil {
		return err.Error()
	}
	return fmt.Sprint(out)
}
