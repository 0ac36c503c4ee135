package duckengine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine/enginetest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// mysqlRows runs stmt (with args) as a MySQL client's on e: its column names and its rows, each
// value as the Arrow text of it.
func mysqlRows(t *testing.T, e query.Engine, stmt string, args ...any) ([]string, [][]string, error) {
	t.Helper()
	return enginetest.TextRows(e, &query.Request{SQL: stmt, Args: args, Protocol: query.ProtocolMySQL})
}

// TestMySQLCatalogStatementsOnDuckDB: the forms of MySQL's catalog statements (FROM and IN,
// qualified names, LIKE and WHERE, DESCRIBE with a column or a pattern) answer with MySQL's
// columns; EXPLAIN of a query is still DuckDB's plan; a missing table is 1146's message, and
// a SHOW this engine does not answer is 1235 naming it (before: DuckDB's parser error).
func TestMySQLCatalogStatementsOnDuckDB(t *testing.T) {
	e := open(t)
	if _, _, err := mysqlRows(t, e, "CREATE TABLE `a_t` (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, `odd``name` DATE)"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := mysqlRows(t, e, "CREATE VIEW b_v AS SELECT id FROM a_t"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ stmt, names, rows string }{
		{"SHOW TABLES", "Tables_in_duck", "a_t|b_v"},
		{"show full tables from duck where Table_type = 'VIEW';", "Tables_in_duck,Table_type", "b_v,VIEW"},
		{"SHOW TABLES IN `duck` LIKE 'a\\_%'", "Tables_in_duck", "a_t"},
		{"SHOW SCHEMAS", "Database", "duck"},
		{"SHOW COLUMNS IN a_t FROM duck", "Field,Type,Null,Key,Default,Extra", "id,int(11),NO,PRI,(null),|name,text,NO,,(null),|odd`name,date,YES,,(null),"},
		{"SHOW FIELDS FROM duck.a_t WHERE Field <> 'id'", "Field,Type,Null,Key,Default,Extra", "name,text,NO,,(null),|odd`name,date,YES,,(null),"},
		{"SHOW FULL COLUMNS FROM a_t LIKE 'n%'", "Field,Type,Collation,Null,Key,Default,Extra,Privileges,Comment",
			"name,text,utf8mb4_general_ci,NO,,(null),,select,insert,update,references,"},
		{"DESCRIBE a_t name", "Field,Type,Null,Key,Default,Extra", "name,text,NO,,(null),"},
		{"DESC `a_t` 'odd%'", "Field,Type,Null,Key,Default,Extra", "odd`name,date,YES,,(null),"},
		{"EXPLAIN a_t", "Field,Type,Null,Key,Default,Extra", "id,int(11),NO,PRI,(null),|name,text,NO,,(null),|odd`name,date,YES,,(null),"},
		{"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'duck' AND table_name = 'a_t'", "COUNT(*)", "1"},
		{"SELECT table_name, table_type FROM INFORMATION_SCHEMA.TABLES WHERE table_schema = DATABASE() ORDER BY 1", "table_name,table_type", "a_t,BASE TABLE|b_v,VIEW"},
		{"SELECT column_name, data_type, column_type, column_key, is_nullable, ordinal_position FROM information_schema.columns " +
			"WHERE table_schema = 'duck' AND table_name = 'a_t' ORDER BY ordinal_position", "column_name,data_type,column_type,column_key,is_nullable,ordinal_position",
			"id,int,int(11),PRI,NO,1|name,text,text,,NO,2|odd`name,date,date,,YES,3"},
		{"SELECT schema_name FROM information_schema.schemata", "schema_name", "duck"},
		{"SHOW CREATE TABLE a_t", "Table,Create Table", "a_t,CREATE TABLE `a_t` (\n  `id` int(11) NOT NULL,\n  `name` text NOT NULL,\n  `odd``name` date DEFAULT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"},
	} {
		names, rows, err := mysqlRows(t, e, c.stmt)
		if err != nil {
			t.Errorf("%s: %v", c.stmt, err)
			continue
		}
		var got []string
		for _, r := range rows {
			got = append(got, strings.Join(r, ","))
		}
		if n, r := strings.Join(names, ","), strings.Join(got, "|"); n != c.names || r != c.rows {
			t.Errorf("%s:\n columns %s\n rows    %q\nwant\n columns %s\n rows    %q", c.stmt, n, r, c.names, c.rows)
		}
	}
	if names, _, err := mysqlRows(t, e, "EXPLAIN SELECT 'x'"); err != nil || len(names) == 0 || names[0] == "Field" {
		t.Errorf("EXPLAIN of a query: columns %q (%v), want DuckDB's plan", names, err)
	}
	for stmt, want := range map[string]struct{ code, msg string }{
		"SHOW COLUMNS FROM no_such":    {sqlstate.UndefinedTable, "Table 'no_such' doesn't exist"},
		"DESCRIBE no_such":             {sqlstate.UndefinedTable, "Table 'no_such' doesn't exist"},
		"SHOW CREATE TABLE no_such":    {sqlstate.UndefinedTable, "Table 'no_such' doesn't exist"},
		"SHOW PLUGINS":                 {sqlstate.FeatureNotSupported, "doesn't yet support 'SHOW PLUGINS' on DuckDB"},
		"show full processlist":        {sqlstate.FeatureNotSupported, "doesn't yet support 'SHOW FULL PROCESSLIST' on DuckDB"},
		"SHOW INDEX FROM no_such":      {sqlstate.UndefinedTable, "Table 'no_such' doesn't exist"},
		"SHOW CREATE USER duck":        {sqlstate.FeatureNotSupported, "doesn't yet support 'SHOW CREATE USER DUCK' on DuckDB"},
		"SHOW COLUMNS FROM a_t LIKE 1": {sqlstate.FeatureNotSupported, "doesn't yet support 'SHOW COLUMNS FROM A_T'"},
	} {
		_, _, err := mysqlRows(t, e, stmt)
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != want.code || !strings.Contains(qe.Message, want.msg) || strings.Contains(qe.Message, "LINE") {
			t.Errorf("%s: %v, want %s %q", stmt, err, want.code, want.msg)
		}
	}
}

// TestMySQLLimitParamsOnDuckDB: LIMIT ?, ? (mysql2's execute, a server-side prepared statement)
// binds offset then count, as MySQL does, with other parameters before and after it; before,
// DuckDB refused the LIMIT #,# syntax.
func TestMySQLLimitParamsOnDuckDB(t *testing.T) {
	e := open(t)
	for _, c := range []struct {
		stmt string
		args []any
		want string
	}{
		{"SELECT x FROM range(10) t(x) ORDER BY x LIMIT ?, ?", []any{int64(2), int64(3)}, "2|3|4"},
		{"SELECT x FROM range(10) t(x) WHERE x >= ? ORDER BY x LIMIT ? , /* c */ ?", []any{int64(5), int64(1), int64(2)}, "6|7"},
		{"SELECT x FROM range(10) t(x) ORDER BY x LIMIT 8, ?", []any{int64(5)}, "8|9"},
		{"SELECT x FROM (SELECT x FROM range(10) t(x) ORDER BY x LIMIT ?, 2) s WHERE x <> ? ORDER BY x", []any{int64(3), int64(4)}, "3"},
		{"SELECT x, '?' AS q FROM range(3) t(x) ORDER BY x LIMIT ?, ?", []any{int64(1), int64(1)}, "1,?"},
	} {
		_, rows, err := mysqlRows(t, e, c.stmt, c.args...)
		var got []string
		for _, r := range rows {
			got = append(got, strings.Join(r, ","))
		}
		if err != nil || strings.Join(got, "|") != c.want {
			t.Errorf("%s %v: %q (%v), want %q", c.stmt, c.args, got, err, c.want)
		}
	}
}

// TestMySQLFunctionsOnDuckDB: UNIX_TIMESTAMP() and UNIX_TIMESTAMP(x) answer whole seconds in UTC
// (the session time zone the MySQL frontend reports), LAST_INSERT_ID() 0 (no AUTO_INCREMENT
// value generated), each named as the client wrote it.
func TestMySQLFunctionsOnDuckDB(t *testing.T) {
	e := open(t)
	names, rows, err := mysqlRows(t, e, "SELECT UNIX_TIMESTAMP('2020-01-01 00:00:00'), unix_timestamp(DATE '2000-03-01'), LAST_INSERT_ID(), UNIX_TIMESTAMP() > 1700000000")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(names, ",")+"|"+strings.Join(rows[0], ","),
		"UNIX_TIMESTAMP('2020-01-01 00:00:00'),unix_timestamp(DATE '2000-03-01'),LAST_INSERT_ID(),UNIX_TIMESTAMP() > 1700000000|1577836800,951868800,0,true"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
