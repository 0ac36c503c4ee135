package duckengine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestMySQLAutoIncrementOnDuckDB: a MySQL client's CREATE TABLE with AUTO_INCREMENT, UNSIGNED,
// display widths, KEY and table options runs on DuckDB; an INSERT without the id (or with
// NULL or 0) takes the next ones, its tag carrying the first (the OK packet's insert id); an
// explicit id, also one INSERT ... SELECT gives, moves the counter past it; LAST_INSERT_ID()
// is the request's; SHOW CREATE TABLE says AUTO_INCREMENT; a PostgreSQL client's INSERT is
// untouched. (TestAutoIncrementLikeMariaDB in mysqlwire compares random INSERTs with MariaDB.)
func TestMySQLAutoIncrementOnDuckDB(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	run := func(protocol, sql string, lastID uint64) string {
		t.Helper()
		rows, err := e.Execute(ctx, &query.Request{SQL: sql, Protocol: protocol, LastInsertID: lastID})
		if err != nil {
			return "error: " + err.Error()
		}
		defer rows.Close()
		if rows.Schema() == nil {
			return rows.Tag()
		}
		b, err := rows.Next(ctx)
		if err != nil {
			return "error: " + err.Error()
		}
		return b.Column(int(b.NumCols()) - 1).ValueStr(0) // SHOW CREATE TABLE: the statement
	}
	my, pg := query.ProtocolMySQL, query.ProtocolPostgres
	for _, c := range []struct{ protocol, sql, want string }{
		{my, "CREATE TABLE `Odd-T` (`id` INT(10) UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'pk', `v` TINYINT(1) DEFAULT NULL, " +
			"PRIMARY KEY (`id`), KEY `v` (`v`)) ENGINE=InnoDB AUTO_INCREMENT=7 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;", "CREATE TABLE"},
		{my, "INSERT INTO `Odd-T` (v) VALUES (1), (2)", "INSERT 7 2"},
		{my, "insert into `Odd-T` (`v`) values (3);", "INSERT 9 1"},
		{pg, `INSERT INTO "Odd-T" (v) VALUES (4)`, "INSERT 0 1"},
		{my, "INSERT INTO `Odd-T` VALUES (100, 5)", "INSERT explicit:100 1"},
		{my, "SHOW CREATE TABLE `Odd-T`", "CREATE TABLE `Odd-T` (\n  `id` int(10) unsigned NOT NULL AUTO_INCREMENT,\n  `v` tinyint(1) DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  KEY `v` (`v`)\n) ENGINE=InnoDB AUTO_INCREMENT=101 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"},
		{my, "CREATE TABLE IF NOT EXISTS `Odd-T` (id BIGINT AUTO_INCREMENT PRIMARY KEY)", "CREATE TABLE"},
		{my, "CREATE TABLE `Odd-T` (id BIGINT AUTO_INCREMENT PRIMARY KEY)", "error: 42P07: Table 'Odd-T' already exists"},
		{my, "INSERT INTO `Odd-T` (v) VALUES (6)", "INSERT 101 1"},
		{my, "INSERT INTO `Odd-T` VALUES (NULL, 7), (0, 8)", "INSERT 102 2"},
		{my, "INSERT INTO `Odd-T` (id, v) SELECT 500, 9", "INSERT explicit:500 1"}, // MariaDB's OK id 500, LAST_INSERT_ID() as it was
		{my, "INSERT INTO `Odd-T` (v) VALUES (10)", "INSERT 501 1"},
		{my, "SELECT LAST_INSERT_ID() + 1", "43"},
	} {
		lastID := uint64(0)
		if strings.HasPrefix(c.sql, "SELECT LAST_INSERT_ID") {
			lastID = 42
		}
		if got := run(c.protocol, c.sql, lastID); got != c.want {
			t.Errorf("%s: %q, want %q", c.sql, got, c.want)
		}
	}
}

// TestTextCaseByClientOnDuckDB: a MySQL client's text column compares without regard to case
// (MariaDB's utf8mb4_general_ci: TestMySQLTextComparesLikeMariaDB), for every client reading
// it, as the column's collation is MariaDB's; a table a PostgreSQL or Trino client creates
// compares by case, as PostgreSQL's and Trino's, for every client; and so do their literals.
func TestTextCaseByClientOnDuckDB(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	count := func(protocol, sql string) string {
		t.Helper()
		rows, err := e.Execute(ctx, &query.Request{SQL: sql, Protocol: protocol})
		if err != nil {
			return "error: " + err.Error()
		}
		defer rows.Close()
		if rows.Schema() == nil {
			return rows.Tag()
		}
		b, err := rows.Next(ctx)
		if err != nil {
			return "error: " + err.Error()
		}
		return b.Column(0).ValueStr(0)
	}
	my, pg, trino := query.ProtocolMySQL, query.ProtocolPostgres, query.ProtocolTrino
	for _, c := range []struct{ protocol, sql, want string }{
		{my, "CREATE TABLE my_t (name VARCHAR(20), raw VARCHAR(20) BINARY)", "CREATE TABLE"},
		{my, "INSERT INTO my_t VALUES ('alice', 'alice')", "INSERT 0 1"},
		{pg, "CREATE TABLE pg_t (name VARCHAR(20))", "CREATE TABLE"},
		{pg, "INSERT INTO pg_t VALUES ('alice')", "INSERT 0 1"},
		{my, "SELECT count(*) FROM my_t WHERE name = 'ALICE'", "1"},
		{pg, "SELECT count(*) FROM my_t WHERE name = 'ALICE'", "1"},
		{my, "SELECT count(*) FROM my_t WHERE raw = 'ALICE'", "0"},
		{pg, "SELECT count(*) FROM pg_t WHERE name = 'ALICE'", "0"},
		{trino, "SELECT count(*) FROM pg_t WHERE name = 'ALICE'", "0"},
		{my, "SELECT count(*) FROM pg_t WHERE name = 'ALICE'", "0"},
		{pg, "SELECT count(*) FROM pg_t WHERE name LIKE 'AL%'", "0"},
		{pg, "SELECT count(*) FROM my_t WHERE 'a' = 'A'", "0"},
		{trino, "SELECT count(*) FROM my_t WHERE 'a' = 'A'", "0"},
	} {
		if got := count(c.protocol, c.sql); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.protocol, c.sql, got, c.want)
		}
	}
}
