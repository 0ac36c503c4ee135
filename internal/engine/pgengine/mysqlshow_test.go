package pgengine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/enginetest"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// mysqlRows runs stmt as a MySQL client's (its database db) on e: its column names and its
// rows, each value as the Arrow text of it.
func mysqlRows(t *testing.T, e query.Engine, db, stmt string) ([]string, [][]string, error) {
	t.Helper()
	return enginetest.TextRows(e, &query.Request{SQL: stmt, Database: db, Protocol: query.ProtocolMySQL})
}

// mysqlJoined is mysqlRows' rows, each value joined by "," and the rows by "|".
func mysqlJoined(t *testing.T, e query.Engine, db, stmt string) ([]string, string, error) {
	t.Helper()
	names, rows, err := mysqlRows(t, e, db, stmt)
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join(r, ","))
	}
	return names, strings.Join(got, "|"), err
}

// TestMySQLCatalogStatementsOnPostgreSQL: a MySQL client's catalog statements on a PostgreSQL
// cluster (before: PostgreSQL's syntax error) answer with MySQL's columns from PostgreSQL's
// catalog, a MySQL database being a schema: the forms (FROM and IN, qualified names, LIKE and
// WHERE, DESCRIBE with a column or a pattern), MySQL's types, keys, defaults and
// auto_increment; EXPLAIN of a query is still PostgreSQL's plan; a missing table is 1146's
// message, and a SHOW this engine does not answer is 1235 naming it.
func TestMySQLCatalogStatementsOnPostgreSQL(t *testing.T) {
	e := open(t)
	for _, ddl := range []string{
		"CREATE SCHEMA shop",
		"CREATE TABLE `a_t` (id SERIAL PRIMARY KEY, name VARCHAR(20) NOT NULL DEFAULT 'x', `odd``name` DATE, " +
			"d NUMERIC(10,2), ts TIMESTAMP(3), tz TIMESTAMPTZ, b BOOLEAN, u BIGINT UNIQUE, j JSONB, f DOUBLE PRECISION)",
		"CREATE VIEW b_v AS SELECT id FROM a_t",
		"CREATE TABLE shop.orders (a INT, b INT, n INT NOT NULL DEFAULT 3, PRIMARY KEY (b, a))",
	} {
		if _, _, err := mysqlRows(t, e, "", ddl); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	const cols = "Field,Type,Null,Key,Default,Extra"
	aCols := "id,int(11),NO,PRI,(null),auto_increment|name,varchar(20),NO,,x,|odd`name,date,YES,,(null),|d,decimal(10,2),YES,,(null),|" +
		"ts,datetime(3),YES,,(null),|tz,timestamp(6),YES,,(null),|b,tinyint(1),YES,,(null),|u,bigint(20),YES,UNI,(null),|" +
		"j,json,YES,,(null),|f,double,YES,,(null),"
	for _, c := range []struct{ db, stmt, names, rows string }{
		{"", "SHOW TABLES", "Tables_in_", "a_t|b_v"},
		{"public", "SHOW TABLES", "Tables_in_public", "a_t|b_v"},
		{"", "show full tables from shop where Table_type = 'BASE TABLE';", "Tables_in_shop,Table_type", "orders,BASE TABLE"},
		{"", "SHOW FULL TABLES IN `public` LIKE 'b\\_%'", "Tables_in_public,Table_type", "b_v,VIEW"},
		{"", "SHOW DATABASES LIKE '%o%'", "Database", "information_schema|shop"},
		{"", "SHOW COLUMNS IN a_t FROM public", cols, aCols},
		{"", "SHOW FIELDS FROM public.a_t WHERE `Field` IN ('id', \"u\")", cols, "id,int(11),NO,PRI,(null),auto_increment|u,bigint(20),YES,UNI,(null),"},
		{"", "SHOW FULL COLUMNS FROM a_t LIKE 'n%'", "Field,Type,Collation,Null,Key,Default,Extra,Privileges,Comment",
			"name,varchar(20),utf8mb4_general_ci,NO,,x,,select,insert,update,references,"},
		{"", "DESCRIBE a_t name", cols, "name,varchar(20),NO,,x,"},
		{"", "DESC `a_t` 'odd%'", cols, "odd`name,date,YES,,(null),"},
		{"", "EXPLAIN shop.orders", cols, "a,int(11),NO,PRI,(null),|b,int(11),NO,PRI,(null),|n,int(11),NO,,3,"},
		{"", "SHOW CREATE TABLE shop.orders", "Table,Create Table",
			"orders,CREATE TABLE `orders` (\n  `a` int(11) NOT NULL,\n  `b` int(11) NOT NULL,\n  `n` int(11) NOT NULL DEFAULT 3,\n  PRIMARY KEY (`b`,`a`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"},
		{"", "SHOW CREATE TABLE a_t", "Table,Create Table", "a_t,CREATE TABLE `a_t` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n" +
			"  `name` varchar(20) NOT NULL DEFAULT 'x',\n  `odd``name` date DEFAULT NULL,\n  `d` decimal(10,2) DEFAULT NULL,\n" +
			"  `ts` datetime(3) DEFAULT NULL,\n  `tz` timestamp(6) DEFAULT NULL,\n  `b` tinyint(1) DEFAULT NULL,\n" +
			"  `u` bigint(20) DEFAULT NULL,\n  `j` json DEFAULT NULL,\n  `f` double DEFAULT NULL,\n" +
			"  PRIMARY KEY (`id`),\n  UNIQUE KEY `u` (`u`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"},
	} {
		names, r, err := mysqlJoined(t, e, c.db, c.stmt)
		if err != nil {
			t.Errorf("%s: %v", c.stmt, err)
			continue
		}
		n := strings.Join(names, ",")
		if c.names == "Tables_in_" && strings.HasPrefix(n, c.names) && !strings.Contains(n, ",") {
			n = c.names // the engine's database, named by the test's server
		}
		if n != c.names || r != c.rows {
			t.Errorf("%s:\n columns %s\n rows    %q\nwant\n columns %s\n rows    %q", c.stmt, n, r, c.names, c.rows)
		}
	}
	if names, _, err := mysqlRows(t, e, "", "EXPLAIN SELECT 1"); err != nil || len(names) != 1 || names[0] != "QUERY PLAN" {
		t.Errorf("EXPLAIN of a query: columns %q (%v), want PostgreSQL's plan", names, err)
	}
	for stmt, want := range map[string]struct{ code, msg string }{
		"SHOW COLUMNS FROM no_such":        {sqlstate.UndefinedTable, "Table 'no_such' doesn't exist"},
		"DESCRIBE shop.no_such":            {sqlstate.UndefinedTable, "Table 'shop.no_such' doesn't exist"},
		"SHOW CREATE TABLE no_such":        {sqlstate.UndefinedTable, "Table 'no_such' doesn't exist"},
		"SHOW TRIGGERS":                    {sqlstate.FeatureNotSupported, "doesn't yet support 'SHOW TRIGGERS' on PostgreSQL"},
		"show table status like 'a%'":      {sqlstate.FeatureNotSupported, "doesn't yet support 'SHOW TABLE STATUS LIKE' on PostgreSQL"},
		"SHOW COLUMNS FROM a_t WHERE nope": {"42S22", "Unknown column 'nope' in 'WHERE'"}, // MariaDB's 1054
	} {
		_, _, err := mysqlRows(t, e, "", stmt)
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != want.code || !strings.Contains(qe.Message, want.msg) {
			t.Errorf("%s: %v, want %s %q", stmt, err, want.code, want.msg)
		}
	}
}

// TestMySQLBoolLiteralsOnPostgreSQL: a MySQL client's 1 and 0 for a boolean column are its
// truth values on a PostgreSQL cluster, in a table created after the database's boolean
// columns were read (the CREATE makes them read again).
func TestMySQLBoolLiteralsOnPostgreSQL(t *testing.T) {
	e := open(t)
	for _, c := range []struct{ stmt, want string }{
		{"CREATE TABLE bt (id INT, ok BOOLEAN)", ""},
		{"INSERT INTO bt (id, ok) VALUES (1, 1), (2, 0)", ""},
		{"SELECT id FROM bt WHERE ok = 1", "1"},
		{"SELECT id FROM bt WHERE id = 1", "1"},
		{"CREATE TABLE bt2 (id INT, flag BOOLEAN)", ""},
		{"INSERT INTO bt2 (id, flag) VALUES (3, 1)", ""},
		{"SELECT id FROM bt2 WHERE flag <> 0", "3"},
	} {
		_, rows, err := mysqlRows(t, e, "", c.stmt)
		var got []string
		for _, r := range rows {
			got = append(got, strings.Join(r, ","))
		}
		if err != nil || strings.Join(got, "|") != c.want {
			t.Errorf("%s: %q, %v; want %q", c.stmt, got, err, c.want)
		}
	}
}

// TestMySQLBoolLiteralsOfATableAnotherWorkerCreated: the boolean columns of a table created
// through another worker (or outside the proxy) after this engine read the database's boolean
// column names still take MySQL's 1 and 0.
func TestMySQLBoolLiteralsOfATableAnotherWorkerCreated(t *testing.T) {
	url := pgtest.NewDatabase(t)
	engines := make([]query.Engine, 2)
	for i := range engines {
		e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		engines[i] = e
	}
	this, other := engines[0], engines[1]
	for _, c := range []struct {
		e          query.Engine
		stmt, want string
		args       []any
	}{
		{this, "CREATE TABLE bt (id INT, ok BOOLEAN)", "", nil},
		{this, "SELECT id FROM bt WHERE id = 1", "", nil}, // the names read: ok
		{other, "CREATE TABLE bt3 (id INT, live BOOLEAN)", "", nil},
		{other, "INSERT INTO bt3 (id, live) VALUES (3, 1)", "", nil},
		{other, "CREATE TABLE bt4 (id SERIAL PRIMARY KEY, live BOOLEAN)", "", nil},
		{this, "INSERT INTO bt4 (live) VALUES (1)", "", nil},
		{this, "SELECT id FROM bt4 WHERE live = 1", "1", nil},
		{this, "INSERT INTO bt3 (id, live) VALUES (4, 1), (5, 0)", "", nil},
		{this, "SELECT id FROM bt3 WHERE live = 1 ORDER BY id", "3|4", nil},
		{this, "UPDATE bt3 SET live = 0 WHERE id = 3", "", nil},
		{this, "SELECT count(*) FROM bt3 WHERE live = 0", "2", nil},
		{other, "CREATE TABLE bt5 (id INT, shown BOOLEAN)", "", nil},
		{this, "INSERT INTO bt5 (id, shown) VALUES (?, 1)", "", []any{int64(6)}},
		{this, "SELECT id FROM bt5 WHERE shown = 1 AND id = ?", "6", []any{int64(6)}},
	} {
		_, rows, err := enginetest.TextRows(c.e, &query.Request{SQL: c.stmt, Args: c.args, Protocol: query.ProtocolMySQL})
		var got []string
		for _, r := range rows {
			got = append(got, strings.Join(r, ","))
		}
		if err != nil || strings.Join(got, "|") != c.want {
			t.Errorf("%s: %q, %v; want %q", c.stmt, got, err, c.want)
		}
	}
}
