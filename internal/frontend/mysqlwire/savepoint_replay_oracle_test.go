package mysqlwire

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// TestSavepointsOnDuckDBLikeMariaDB: random transactions of INSERT, UPDATE, DELETE, SAVEPOINT,
// ROLLBACK TO, RELEASE and refused statements (a duplicate key, NOT NULL, a missing table, a
// savepoint the transaction lacks) answer from the proxy on the embedded DuckDB what MariaDB
// answers, statement by statement (the error number and the rows affected; the table read
// inside the transaction after each ROLLBACK TO), and end, committed or rolled back, with the
// same rows. Before: every ROLLBACK TO SAVEPOINT was refused (1235) and failed the transaction.
func TestSavepointsOnDuckDBLikeMariaDB(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
	maria, duck := mariaAndDuck(t)
	ctx := context.Background()
	tables := 0
	rapid.Check(t, func(rt *rapid.T) {
		conns := [2]*sql.Conn{}
		for i, db := range []*sql.DB{maria, duck} {
			c, err := db.Conn(ctx)
			if err != nil {
				rt.Fatal(err)
			}
			defer func() {
				_ = c.Raw(func(any) error { return driver.ErrBadConn }) // not back to the pool
				c.Close()
			}()
			conns[i] = c
		}
		tables++
		table := fmt.Sprintf("sp%d", tables)
		stmts := []string{"CREATE TABLE " + table + " (k INT PRIMARY KEY, v INT NOT NULL, w VARCHAR(10) UNIQUE)",
			"INSERT INTO " + table + " VALUES (1, 0, 'w1'), (2, 0, 'w2')",
			rapid.SampledFrom([]string{"BEGIN", "START TRANSACTION", "SET autocommit = 0"}).Draw(rt, "begin")}
		names := []string{"a", "b", "A", "`c`"}
		n := rapid.IntRange(1, 14).Draw(rt, "statements")
		for range n {
			k := rapid.IntRange(1, 5).Draw(rt, "k")
			v := rapid.IntRange(0, 2).Draw(rt, "v")
			w := rapid.IntRange(1, 5).Draw(rt, "w")
			name := rapid.SampledFrom(names).Draw(rt, "name")
			stmts = append(stmts, rapid.SampledFrom([]string{
				fmt.Sprintf("INSERT INTO %s (k, v, w) VALUES (%d, %d, 'w%d')", table, k, v, w),
				// a key of its own: MariaDB checks NOT NULL before the keys, DuckDB after
				fmt.Sprintf("INSERT INTO %s (k, v, w) VALUES (%d, NULL, 'w9')", table, k+10),
				fmt.Sprintf("UPDATE %s SET v = v + 1 WHERE k = %d", table, k),
				fmt.Sprintf("UPDATE %s SET v = v + 1 WHERE v = %d", table, v),
				fmt.Sprintf("UPDATE %s SET w = 'w%d' WHERE k = %d", table, w, k),
				fmt.Sprintf("DELETE FROM %s WHERE k = %d", table, k),
				fmt.Sprintf("DELETE FROM %s WHERE v = %d", table, v),
				"INSERT INTO " + table + "_missing VALUES (1)",
				"SAVEPOINT " + name, "SAVEPOINT " + name,
				"ROLLBACK TO SAVEPOINT " + name, "ROLLBACK TO " + name, "ROLLBACK WORK TO SAVEPOINT " + name,
				"RELEASE SAVEPOINT " + name,
			}).Draw(rt, "statement"))
		}
		stmts = append(stmts, rapid.SampledFrom([]string{"COMMIT", "ROLLBACK"}).Draw(rt, "end"))
		var history []string
		for _, stmt := range stmts {
			var got [2]string
			for i, c := range conns {
				res, err := c.ExecContext(ctx, stmt)
				var affected int64
				if err == nil {
					affected, _ = res.RowsAffected()
				}
				got[i] = fmt.Sprintf("error %d, %d rows", errNumber(err), affected)
				if strings.Contains(stmt, "ROLLBACK") && err == nil {
					contents, err := tableRows(ctx, c, table)
					got[i] += fmt.Sprintf(", then %s (%v)", contents, err)
				}
			}
			history = append(history, stmt+": "+got[0])
			if got[0] != got[1] {
				rt.Fatalf("%s\nMariaDB: %s\nDuckDB:  %s", strings.Join(history, "\n"), got[0], got[1])
			}
		}
		var final [2]string
		for i, c := range conns {
			contents, err := tableRows(ctx, c, table)
			final[i] = fmt.Sprintf("%s (%v)", contents, err)
		}
		if final[0] != final[1] {
			rt.Fatalf("%s\nrows at the end: MariaDB %s, DuckDB %s", strings.Join(history, "\n"), final[0], final[1])
		}
	})
}

// TestSavepointRulesOnDuckDBLikeMariaDB: MariaDB's rules for savepoints, step by step against
// MariaDB: caseless names, quoted names, a SAVEPOINT of a name the transaction has moves it,
// ROLLBACK TO keeps its savepoint and drops the later ones, RELEASE drops its own and the later
// ones, a name the transaction lacks is 1305 and the transaction goes on, SAVEPOINT outside a
// transaction is taken and forgotten, autocommit=0's implicit transaction, the AUTO_INCREMENT
// ids of rolled-back rows not given again, and a prepared statement kept in the log.
func TestSavepointRulesOnDuckDBLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	compareSteps(t, conns[0], conns[1], []string{
		"exec create table sr (id int auto_increment primary key, v varchar(10) unique)",
		"exec savepoint a", "exec rollback to a", "exec release savepoint a", "exec rollback to savepoint nosuch",
		"exec start transaction",
		"exec insert into sr (v) values ('one')",
		"exec savepoint a",
		"exec insert into sr (v) values ('two')",
		"exec savepoint B",
		"exec insert into sr (v) values (?) <- three",
		"exec savepoint A",
		"exec insert into sr (v) values ('four')",
		"exec rollback to savepoint b",
		"select id, v from sr order by id",
		"exec rollback to a",
		"exec rollback to b",
		"exec update sr set v = 'TWO' where v = 'two'",
		"exec savepoint `c d`",
		"exec insert into sr (v) values ('one')",
		"exec delete from sr where v = 'one'",
		"exec rollback work to savepoint `C D`",
		"select id, v from sr order by id",
		"exec release savepoint b",
		"exec rollback to `c d`",
		"exec rollback to savepoint b",
		"exec insert into sr (v) values ('five')",
		"exec commit",
		"select id, v from sr order by id",
		"exec set autocommit = 0",
		"exec insert into sr (v) values ('six')",
		"exec savepoint s",
		"exec insert into sr (v) values ('seven')",
		"exec insert into sr (v) values ('six')",
		"exec rollback to s",
		"exec commit",
		"exec set autocommit = 1",
		"select id, v from sr order by id",
	})
}

// TestSavepointAfterAStatementNotKeptOnDuckDB: a statement the log cannot run again (one that
// writes RAND()'s value) after a savepoint leaves ROLLBACK TO it as MariaDB's (the log up to
// the savepoint is whole); one before the savepoint fails its ROLLBACK TO (1235, the
// transaction aborted: roll it back), as every ROLLBACK TO did before, and the COMMIT that
// follows says nothing was committed (1213).
func TestSavepointAfterAStatementNotKeptOnDuckDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	conns := oneConnEach(t, maria, duck)
	compareSteps(t, conns[0], conns[1], []string{
		"exec create table sv (id int primary key, n int)",
		"exec set @x = 5",
		"exec begin",
		"exec insert into sv values (1, 1)",
		"exec savepoint a",
		"exec insert into sv values (2, floor(rand()))",
		"exec insert into sv values (3, 3)",
		"exec insert into sv values (3, 3)",
		"exec rollback to a",
		"exec insert into sv values (4, 4)",
		"exec insert into sv values (4, 4)",
		"exec insert into sv values (5, 5)",
		"exec commit",
		"select id, n from sv order by id",
	})
	ctx := context.Background()
	for _, step := range []struct {
		sql  string
		want uint16
	}{{"begin", 0}, {"savepoint a", 0}, {"insert into sv values (6, floor(rand()))", 0}, {"savepoint b", 0}, {"insert into sv values (7, 7)", 0},
		{"rollback to b", 1235}, {"insert into sv values (8, 8)", 1105}, {"commit", 1213}} {
		if _, err := conns[1].ExecContext(ctx, step.sql); errNumber(err) != step.want {
			t.Errorf("%s: %v, want error %d", step.sql, err, step.want)
		}
	}
	if got := dumpRows(t, conns[1], "select id from sv order by id"); got != `id="1" | id="4" | id="5" | ` {
		t.Errorf("rows: %s", got)
	}
}

// TestSavepointReplayUnderAConcurrentWriterOnDuckDB: ROLLBACK TO SAVEPOINT (and the undo of a
// refused statement) runs the transaction's kept writes again in a new DuckDB transaction,
// which sees what other clients committed since. On MariaDB the other client's INSERT into
// the range the transaction's UPDATE read would have waited (InnoDB's next-key locks) until
// the transaction ended; DuckDB takes it at once, and the UPDATE run again would change a row
// its client was never told of. So a write that changes another number of rows when run again
// ends the transaction as a deadlock does on MariaDB: 1213, the whole transaction rolled back
// (nothing of it committed), the client runs it again. Without another client's commit
// between, the same steps roll back to the savepoint as MariaDB does.
func TestSavepointReplayUnderAConcurrentWriterOnDuckDB(t *testing.T) {
	_, duck := mariaAndDuck(t)
	ctx := context.Background()
	conns := oneConnEach(t, duck, duck)
	a, b := conns[0], conns[1]
	run := func(c *sql.Conn, stmt string, want uint16) {
		t.Helper()
		if _, err := c.ExecContext(ctx, stmt); errNumber(err) != want {
			t.Fatalf("%s: %v, want error %d", stmt, err, want)
		}
	}
	rows := func() string {
		t.Helper()
		s, err := tableRows(ctx, b, "cw")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	run(a, "create table cw (k int primary key, v int, w varchar(10))", 0)
	run(a, "insert into cw values (1, 0, 'x'), (2, 0, 'x')", 0)

	// ROLLBACK TO SAVEPOINT, nobody else writing: as MariaDB.
	run(a, "begin", 0)
	run(a, "update cw set v = v + 1 where v < 10", 0)
	run(a, "savepoint s", 0)
	run(a, "insert into cw values (5, 5, 'a')", 0)
	run(a, "rollback to savepoint s", 0)
	run(a, "commit", 0)
	if got := rows(); got != "1|1|x;2|1|x" {
		t.Fatalf("rows: %s", got)
	}

	// Another client commits a row the UPDATE's WHERE takes in before ROLLBACK TO.
	run(a, "begin", 0)
	run(a, "update cw set v = v + 1 where v < 10", 0)
	run(a, "savepoint s", 0)
	run(a, "insert into cw values (5, 5, 'a')", 0)
	run(b, "insert into cw values (3, 0, 'b')", 0)
	run(a, "rollback to savepoint s", 1213)
	run(a, "insert into cw values (6, 6, 'a')", 0) // the transaction is gone: autocommit
	run(a, "commit", 0)
	if got := rows(); got != "1|1|x;2|1|x;3|0|b;6|6|a" {
		t.Errorf("after 1213: rows %s, want the other client's row and the insert after, nothing of the rolled-back transaction", got)
	}

	// The same before the undo of a refused statement: the client was told of its statement's
	// own error, so the 1213 (and the rollback) comes with its next statement, a COMMIT too.
	for _, next := range []string{"insert into cw values (7, 7, 'a')", "commit", "rollback"} {
		run(a, "begin", 0)
		run(a, "update cw set v = v + 1 where v < 10", 0)
		run(b, "insert into cw values (4, 0, 'b')", 0)
		run(a, "insert into cw values (1, 0, 'dup')", 1062)
		want := uint16(1213)
		if next == "rollback" {
			want = 0
		}
		run(a, next, want)
		run(a, "rollback", 0)
		if got := rows(); got != "1|1|x;2|1|x;3|0|b;4|0|b;6|6|a" {
			t.Errorf("%s after the refused statement: rows %s, want nothing of the transaction", next, got)
		}
		run(b, "delete from cw where k = 4", 0)
	}
}
