package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// TestCatalogChangedUnderTheProxyOnPostgreSQL: the proxy keeps what it read of a table's
// columns (its generated key and its place, its boolean columns); the table changed directly
// on PostgreSQL between two statements (as another worker, or a migration tool, changes it)
// does not leave the next statement wrong: each step's answer (insert id, rows, the rows read)
// is MariaDB's after the same change there. Before: the key's old place left NULL in the new
// one (1048), the old key's name was returned (1054), a former boolean column's 1 written as
// true (1305).
func TestCatalogChangedUnderTheProxyOnPostgreSQL(t *testing.T) {
	maria, _ := newMariaDB(t)
	f, pool := pgClusterPool(t)
	pg := openDB(t, f.addr, testUser, "", "public", "")
	ctx := context.Background()
	type step struct {
		maria, pg string // a change of the table, on each directly ("" for none)
		sql       string // then the client's statement through each
	}
	steps := []step{
		{maria: "CREATE TABLE sc (id INT AUTO_INCREMENT PRIMARY KEY, ok BOOLEAN, name VARCHAR(10))",
			pg:  "CREATE TABLE sc (id SERIAL PRIMARY KEY, ok BOOLEAN, name VARCHAR(10))",
			sql: "INSERT INTO sc VALUES (NULL, 1, 'a')"},
		{sql: "SELECT id, name FROM sc WHERE ok = 1"},
		// the table made again: the key second, ok a number
		{maria: "DROP TABLE sc", pg: "DROP TABLE sc"},
		{maria: "CREATE TABLE sc (name VARCHAR(10), id INT AUTO_INCREMENT PRIMARY KEY, ok INT)",
			pg:  "CREATE TABLE sc (name VARCHAR(10), id SERIAL PRIMARY KEY, ok INT)",
			sql: "INSERT INTO sc VALUES ('b', NULL, 2), ('c', 0, 1)"},
		{sql: "SELECT id, name, ok FROM sc WHERE ok = 1"},
		{sql: "INSERT INTO sc (name, ok) VALUES ('d', 1)"},
		// the key renamed
		{maria: "ALTER TABLE sc CHANGE id k INT AUTO_INCREMENT", pg: "ALTER TABLE sc RENAME COLUMN id TO k",
			sql: "INSERT INTO sc (name, ok) VALUES ('e', 0)"},
		{sql: "INSERT INTO sc VALUES ('f', NULL, 3)"},
		// a boolean column again
		{maria: "ALTER TABLE sc ADD COLUMN flag BOOLEAN", pg: "ALTER TABLE sc ADD COLUMN flag BOOLEAN",
			sql: "INSERT INTO sc (name, flag) VALUES ('g', 1)"},
		{sql: "SELECT k, name, ok, flag FROM sc WHERE flag = 1 OR ok = 1 ORDER BY k"},
		// a table of no boolean column made again with its key second
		{maria: "CREATE TABLE sd (id INT AUTO_INCREMENT PRIMARY KEY, v INT)", pg: "CREATE TABLE sd (id SERIAL PRIMARY KEY, v INT)",
			sql: "INSERT INTO sd VALUES (NULL, 1)"},
		{maria: "DROP TABLE sd", pg: "DROP TABLE sd"},
		{maria: "CREATE TABLE sd (v INT, id INT AUTO_INCREMENT PRIMARY KEY)", pg: "CREATE TABLE sd (v INT, id SERIAL PRIMARY KEY)",
			sql: "INSERT INTO sd VALUES (2, NULL), (3, 0)"},
		{sql: "SELECT id, v FROM sd ORDER BY id"},
	}
	for i, s := range steps {
		if s.maria != "" {
			if _, err := maria.ExecContext(ctx, s.maria); err != nil {
				t.Fatalf("MariaDB: %s: %v", s.maria, err)
			}
			if _, err := pool.Exec(ctx, s.pg); err != nil {
				t.Fatalf("PostgreSQL: %s: %v", s.pg, err)
			}
		}
		if s.sql == "" {
			continue
		}
		got := [2]string{changedStepAnswer(t, maria, s.sql), changedStepAnswer(t, pg, s.sql)}
		if got[0] != got[1] {
			t.Errorf("step %d: %s:\nMariaDB:    %s\nPostgreSQL: %s", i, s.sql, got[0], got[1])
		}
	}
}

// changedStepAnswer is what db answers sqlText: a SELECT's rows (dumpRows), another
// statement's insert id and row count, or its error.
func changedStepAnswer(t *testing.T, db *sql.DB, sqlText string) string {
	if strings.HasPrefix(sqlText, "SELECT") {
		return dumpRows(t, db, sqlText)
	}
	res, err := db.ExecContext(context.Background(), sqlText)
	if err != nil {
		return "error: " + err.Error()
	}
	id, _ := res.LastInsertId()
	n, _ := res.RowsAffected()
	return fmt.Sprintf("insert id %d, %d rows", id, n)
}
