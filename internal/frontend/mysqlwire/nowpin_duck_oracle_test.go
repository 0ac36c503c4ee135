package mysqlwire

import (
	"context"
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
		must := func(stmt string) {
			t.Helper()
			if _, err := c.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %s: %v", name, stmt, err)
			}
		}
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
