package duckengine_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine/duckengine"
)

// TestMySQLTransactionTimeCostsNoStatement: a MySQL client's transaction whose writes write
// the time (NOW(), an ON UPDATE CURRENT_TIMESTAMP column) gives DuckDB as many texts as the
// same transaction writing a constant, and none of them reads the time: the time a run again
// must write again costs no statement of its own. Before, any kept write containing "update"
// or "now" read DuckDB's transaction time with a SELECT of its own.
func TestMySQLTransactionTimeCostsNoStatement(t *testing.T) {
	e := open(t)
	run := mysqlSession(t, e)
	if got := run("create table tn (id int primary key, n int, at datetime(6) on update current_timestamp(6))"); got != "" {
		t.Fatal(got)
	}
	// a SELECT of the time alone (a count's or a catalog's text may name it too)
	readsTime := regexp.MustCompile(`(?is)^\s*select\b(.*)$`)
	timeWords := regexp.MustCompile(`(?i)current_timestamp|now\(|transaction_timestamp|qf_now`)
	texts := func(at string, stmts ...string) int {
		n := 0
		stop := duckengine.SeeTexts(e.(*duckengine.Engine), func(sqlText string) {
			n++
			if m := readsTime.FindStringSubmatch(sqlText); m != nil && timeWords.MatchString(m[1]) && !regexp.MustCompile(`(?i)\bfrom\b`).MatchString(m[1]) {
				t.Errorf("a text read the time: %s", sqlText)
			}
		})
		defer stop()
		for _, q := range append(append([]string{"begin"}, stmts...), "commit", "delete from tn") {
			q = strings.ReplaceAll(q, "AT", at)
			if got := run(q); got != "" {
				t.Fatalf("%s: %s", q, got)
			}
		}
		return n
	}
	for _, tx := range [][]string{
		{"insert into tn (id, n, at) values (1, 1, AT)", "insert into tn (id, n, at) values (2, 2, AT)"},
		{"insert into tn (id, n, at) values (1, 1, AT)", "update tn set n = n + 1 where id = 1", "update tn set at = AT where id = 1"},
	} {
		for range 2 { // the second time with the table's columns known
			constant, now := texts("cast('2020-01-02 03:04:05.678901' as datetime(6))", tx...), texts("now(6)", tx...)
			if now != constant {
				t.Errorf("%s: writing NOW() gave DuckDB %d texts, writing a constant %d", tx, now, constant)
			}
		}
	}
}

// TestMySQLTransactionTimeKeptWhenRunAgain: the times a transaction's writes wrote with NOW(),
// with an ON UPDATE CURRENT_TIMESTAMP column and with DEFAULT CURRENT_TIMESTAMP columns stay as
// they were when a later statement is refused (its undo runs the writes again in another
// DuckDB transaction), and when the transaction rolls back to a savepoint. (NOW() read back is
// each statement's own: mysqlwire's TestNowIsEachStatementsStartOnDuckDB.)
func TestMySQLTransactionTimeKeptWhenRunAgain(t *testing.T) {
	run := mysqlSession(t, open(t))
	runSteps(t, run, []struct{ sql, want string }{
		{"create table tk (id int primary key, n int, at datetime(6), up datetime(6) on update current_timestamp(6), cr datetime(6) default current_timestamp(6), ts timestamp default current_timestamp)", ""},
		{"insert into tk (id, n) values (1, 1)", ""},
		{"begin", ""},
		{"insert into tk (id, n, at) values (2, 2, now(6)), (3, 3, null)", ""},
		{"update tk set n = 10 where id = 1", ""},
	})
	read := func() string {
		return run("select cast(at as varchar), cast(up as varchar), cast(cr as varchar), cast(ts as varchar) from tk where id > 1 or up is not null order by id")
	}
	before := read()
	if strings.Contains(before, "error") || strings.Count(before, "(null)") != 4 {
		t.Fatalf("read back: %s", before)
	}
	for _, step := range []struct{ sql, want string }{
		{"insert into tk (id, n) values (2, 0)", "error: 23"},
		{"savepoint s", ""},
		{"update tk set n = 11 where id = 1", ""},
		{"rollback to savepoint s", ""},
		{"commit", ""},
	} {
		runSteps(t, run, []struct{ sql, want string }{step})
		if after := read(); after != before && !strings.HasPrefix(step.sql, "update") { // its own time, until ROLLBACK TO
			t.Errorf("after %s:\n got %s\nwant %s", step.sql, after, before)
		}
	}
}
