package duckengine

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestExpandDDL: what DuckDB takes one object at a time becomes one statement per object, names
// kept as written (quoted, qualified); anything else is left to DuckDB, and what cannot be done
// faithfully is refused by name.
func TestExpandDDL(t *testing.T) {
	for _, c := range []struct{ sql, want string }{
		{"drop table if exists a, b, c", "DROP TABLE IF EXISTS a; DROP TABLE IF EXISTS b; DROP TABLE IF EXISTS c | DROP TABLE"},
		{`DROP VIEW s."V 1", t CASCADE;`, `DROP VIEW s."V 1" CASCADE; DROP VIEW t CASCADE | DROP VIEW`},
		{"drop table a", "-"},
		{"drop function f, g", "-"},
		{"truncate table a, b", "TRUNCATE a; TRUNCATE b | TRUNCATE TABLE"},
		{"TRUNCATE ONLY a CONTINUE IDENTITY RESTRICT", "TRUNCATE a | TRUNCATE TABLE"},
		{"truncate a", "-"},
		{"truncate a, b restart identity", "error: RESTART IDENTITY"},
		{"alter table pgbench_accounts add primary key (aid)", `ALTER TABLE pgbench_accounts ALTER COLUMN aid SET NOT NULL; CREATE UNIQUE INDEX "pgbench_accounts_pkey" ON pgbench_accounts (aid) | ALTER TABLE`},
		{`ALTER TABLE s."T" ADD CONSTRAINT k PRIMARY KEY (a, "B")`, `ALTER TABLE s."T" ALTER COLUMN a SET NOT NULL; ALTER TABLE s."T" ALTER COLUMN "B" SET NOT NULL; CREATE UNIQUE INDEX k ON s."T" (a, "B") | ALTER TABLE`},
		{"alter table t add primary key (a) include (b)", "-"},
		{"alter table t add column c int", "-"},
		{"select 1", "-"},
		{"create table pgbench_tellers(tid int not null,bid int,filler char(84)) with (fillfactor=100)", "create table pgbench_tellers(tid int not null,bid int,filler char(84))  | CREATE TABLE"},
		{`CREATE UNLOGGED TABLE IF NOT EXISTS s."T" (a int) WITH (fillfactor = 90, autovacuum_enabled = false);`, `CREATE UNLOGGED TABLE IF NOT EXISTS s."T" (a int) ; | CREATE TABLE`},
		{"create table t (a int)", "-"},
		{"create table t as select 1 with data", "-"},
		{"create table t (a int) with (fillfactor=100", "-"},
	} {
		stmts, tag, ok, err := expandDDL(&query.Request{SQL: c.sql, Protocol: query.ProtocolPostgres})
		got := "-"
		switch {
		case err != nil:
			got = "error: " + err.Error()
		case ok:
			got = strings.Join(stmts, "; ") + " | " + tag
		}
		if got != c.want && !(strings.HasPrefix(c.want, "error: ") && strings.HasPrefix(got, "error: ") && strings.Contains(got, c.want[7:])) {
			t.Errorf("%s:\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
}
