package mysqlwire

import (
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/testlong"
)

// indexesDDL adds to keysDDL the tables whose SHOW COLUMNS Key depends on more than one key:
// no primary key but unique keys of NOT NULL columns (InnoDB's primary key is the first), a
// column first in a composite unique key and in a plain index (MUL), a one-column unique key
// of a nullable column (UNI).
var indexesDDL = []string{
	"CREATE TABLE np2 (a INT NOT NULL, b INT NOT NULL, c INT NOT NULL, d INT, UNIQUE (a, b), UNIQUE (c))",
	"CREATE INDEX np2_d ON np2 (d)",
	"CREATE TABLE np3 (a INT, b INT NOT NULL, c INT NOT NULL, UNIQUE (a), UNIQUE (b), UNIQUE (c))",
	"CREATE TABLE np4 (a INT NOT NULL, b INT, UNIQUE (b, a))",
	"CREATE INDEX np4_a ON np4 (a)",
}

// TestIndexesAndColumnKeysOnPostgreSQLAsOnMariaDB: SHOW INDEX (SHOW KEYS, SHOW INDEXES), SHOW
// COLUMNS' Key and information_schema.STATISTICS of a PostgreSQL cluster's tables through the
// proxy are MariaDB's for the same tables (before: SHOW INDEX was 1235, STATISTICS 42P01 and
// Key had no MUL nor InnoDB's primary key of a table without one). Cardinality is each
// engine's estimate and is not compared.
func TestIndexesAndColumnKeysOnPostgreSQLAsOnMariaDB(t *testing.T) {
	testlong.Skip(t, "internal/engine/pgengine.TestMySQLIndexesOnPostgreSQL")
	maria, _ := newMariaDB(t)
	execAll(t, maria, append(keysDDLFor("mariadb"), indexesDDL...))
	pg := openDB(t, pgCluster(t, append(keysDDLFor("postgres"), indexesDDL...)...).addr, testUser, "", "public", "")
	same := func(q string, sorted bool, mask ...int) {
		t.Helper()
		got, want := maskedLines(t, pg, q, sorted, mask), maskedLines(t, maria, q, sorted, mask)
		if got != want {
			t.Errorf("%s on PostgreSQL:\n%s\non MariaDB:\n%s", q, got, want)
		}
	}
	for _, table := range []string{"parent_t", "child_t", "g", "np2", "np3", "np4"} {
		same("SHOW INDEX FROM "+table, false, 6)
		same("SHOW COLUMNS FROM "+table, false)
	}
	same("SHOW KEYS IN g WHERE Key_name = 'b'", false, 6)
	same("show indexes from `np3`", false, 6)
	same("SELECT TABLE_NAME, NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NULLABLE, INDEX_TYPE, SUB_PART, PACKED, INDEX_COMMENT "+
		"FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE()", true)
	// Laravel's hasIndex and Knex's: an alias, a qualified column, a parameter-free filter.
	same("select s.index_name as name, s.column_name from information_schema.statistics s "+
		"where s.table_schema = database() and s.table_name = 'child_t' and s.non_unique = 1", true)
	same("SELECT COUNT(*) FROM `information_schema`.`statistics` WHERE table_schema = DATABASE() AND statistics.index_name = 'PRIMARY'", false)
}

// maskedLines is q's rows, a line each, values joined by |, the columns numbered mask blanked;
// sorted (ignoring case) when sorted.
func maskedLines(t *testing.T, db *sql.DB, q string, sorted bool, mask []int) string {
	t.Helper()
	var lines []string
	for _, r := range queryStrings(t, db, q) {
		for _, m := range mask {
			r[m] = "-"
		}
		lines = append(lines, strings.Join(r, "|"))
	}
	if sorted {
		slices.SortFunc(lines, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	}
	return strings.Join(lines, "\n")
}
