package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNowKeptWhenATransactionRunsAgainOnDuckDB: a MySQL client's transaction that wrote NOW()
// (and an ON UPDATE CURRENT_TIMESTAMP column) and then had a statement refused keeps the times
// it wrote, as on MariaDB, where the refused statement alone is undone. On DuckDB the undo runs
// the kept writes again in a new transaction, whose NOW() was later: the rows read back after
// the refusal and after COMMIT had other times than before it.
func TestNowKeptWhenATransactionRunsAgainOnDuckDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	ctx := context.Background()
	conns := oneConnEach(t, maria, duck)
	for side, c := range conns {
		name := [2]string{"MariaDB", "DuckDB"}[side]
		must := execOn(t, name, c)
		times := func() string {
			t.Helper()
			var a, u string
			if err := c.QueryRowContext(ctx, "select cast(at as char), cast(u as char) from tn where k = 1").Scan(&a, &u); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return a + " " + u
		}
		must("create table tn (k int primary key, at datetime(6), n int, u datetime(6) default '2000-01-01' on update current_timestamp(6))")
		must("begin")
		must("insert into tn (k, at, n) values (1, now(6), 0)")
		must("update tn set n = 1 where k = 1")
		before := times()
		time.Sleep(1100 * time.Millisecond) // a later second: a NOW() read again differs
		if _, err := c.ExecContext(ctx, "insert into tn (k, at, n) values (1, now(6), 2)"); errNumber(err) != 1062 {
			t.Fatalf("%s: the duplicate: %v, want 1062", name, err)
		}
		if got := times(); got != before {
			t.Errorf("%s: after the refused statement: %s, before it %s", name, got, before)
		}
		must("commit")
		if got := times(); got != before {
			t.Errorf("%s: after COMMIT: %s, before the refused statement %s", name, got, before)
		}
		must("begin")
		must("update tn set n = 3 where k = 1")
		if got := times(); got == before {
			t.Errorf("%s: the next transaction's update wrote the last one's time %s", name, got)
		}
		must("commit")
	}
}

// TestNowIsEachStatementsStartOnDuckDB: NOW() is its statement's start and SYSDATE() the time
// of its call, in a transaction and out of one, as on MariaDB; the times a transaction's
// statements wrote stay theirs when a later statement is refused and when it rolls back to a
// savepoint. On DuckDB NOW() was one time for a whole transaction (its first statement's), and
// SYSDATE() was NOW(). Compared by what the times are to each other, not by their values.
func TestNowIsEachStatementsStartOnDuckDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	ctx := context.Background()
	conns := oneConnEach(t, maria, duck)
	var facts [2][]string
	for side, c := range conns {
		name := [2]string{"MariaDB", "DuckDB"}[side]
		must := execOn(t, name, c)
		times := func(q string) []time.Time {
			t.Helper()
			rows, err := c.QueryContext(ctx, q)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, q, err)
			}
			defer rows.Close()
			var out []time.Time
			for rows.Next() {
				cols, _ := rows.Columns()
				vals := make([]string, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatalf("%s: %s: %v", name, q, err)
				}
				for i, v := range vals {
					if cols[i] == "s" {
						continue // SLEEP's 0
					}
					at, err := time.Parse("2006-01-02 15:04:05.999999", v)
					if err != nil {
						t.Fatalf("%s: %s: %v", name, q, err)
					}
					out = append(out, at)
				}
			}
			return out
		}
		// how two times stand: the same, apart by the sleep between them at least, or neither
		apart := func(what string, a, b time.Time) {
			d := b.Sub(a)
			fact := what + ": apart by less than the sleep"
			switch {
			case d == 0:
				fact = what + ": the same"
			case d >= 200*time.Millisecond:
				fact = what + ": apart by the sleep"
			}
			facts[side] = append(facts[side], fact)
		}
		one := "select cast(now(6) as char) n1, cast(sysdate(6) as char) d1, sleep(0.2) s, cast(now(6) as char) n2, cast(sysdate(6) as char) d2"
		for _, inTx := range []bool{false, true} {
			if inTx {
				must("begin")
			}
			v := times(one)
			apart(fmt.Sprintf("in a transaction %v: NOW() around a sleep", inTx), v[0], v[2])
			apart(fmt.Sprintf("in a transaction %v: SYSDATE() around a sleep", inTx), v[1], v[3])
		}
		must("commit")
		must("create table tnow (k int primary key, at datetime(6), d datetime(6) default '2000-01-01', up datetime(6) default '2000-01-01' on update current_timestamp(6))")
		must("insert into tnow (k) values (0)")
		must("begin")
		first := times("select cast(now(6) as char)")
		must("insert into tnow (k, at, d) values (1, now(6), sysdate(6))")
		times("select sleep(0.2) s")
		must("insert into tnow (k, at, d) values (2, now(6), sysdate(6))")
		must("update tnow set at = now(6) where k = 0")
		second := times("select cast(now(6) as char)")
		apart("a transaction's NOW() in two statements around a sleep", first[0], second[0])
		rows := func() []time.Time {
			return times("select cast(at as char) a, cast(d as char) b, cast(up as char) c from tnow where k > 0 or at is not null order by k")
		}
		before := rows()
		apart("the NOW() two INSERTs wrote around a sleep", before[3], before[6])
		apart("the SYSDATE() two INSERTs wrote around a sleep", before[4], before[7])
		apart("an UPDATE's NOW() and ON UPDATE column", before[0], before[2])
		for _, step := range []string{"insert into tnow (k) values (1)", "savepoint s", "update tnow set at = now(6) where k = 1", "rollback to savepoint s", "commit"} {
			times("select sleep(0.2) s")
			if _, err := c.ExecContext(ctx, step); err != nil && errNumber(err) != 1062 {
				t.Fatalf("%s: %s: %v", name, step, err)
			}
			if got := rows(); !strings.HasPrefix(step, "update") && !slices.Equal(got, before) {
				t.Errorf("%s: after %s: %v, before it %v", name, step, got, before)
			}
		}
	}
	if !slices.Equal(facts[0], facts[1]) {
		t.Errorf("the times stand apart on DuckDB as\n%s\nand on MariaDB as\n%s", strings.Join(facts[1], "\n"), strings.Join(facts[0], "\n"))
	}
}

// execOn is a step runner on c (named name in a failure) that ends the test on an error.
func execOn(t *testing.T, name string, c *sql.Conn) func(stmt string) {
	return func(stmt string) {
		t.Helper()
		if _, err := c.ExecContext(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %s: %v", name, stmt, err)
		}
	}
}
