package mysqlwire

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// keysDDL are tables with the keys ORMs reflect: a unique key PostgreSQL names itself and a
// named one, a foreign key PostgreSQL names itself with an action and a named one with
// another, a plain index covering a foreign key's column, one not, and a foreign key with no
// index of its own (InnoDB's KEY for it). %AI% is each engine's auto-increment column, %IX%
// the index MariaDB declares in CREATE TABLE and PostgreSQL by CREATE INDEX.
var keysDDL = []string{
	"CREATE TABLE parent_t (id INT PRIMARY KEY, code VARCHAR(10) NOT NULL, name VARCHAR(20), UNIQUE (code), CONSTRAINT uq_name UNIQUE (name, code))",
	"CREATE TABLE child_t (id %AI%, parent_id INT, other_id INT, note VARCHAR(10), " +
		"FOREIGN KEY (parent_id) REFERENCES parent_t (id) ON DELETE CASCADE, CONSTRAINT fk_other FOREIGN KEY (note) REFERENCES parent_t (code) ON UPDATE SET NULL)",
	"CREATE INDEX note_idx ON child_t (note, other_id)",
	"CREATE UNIQUE INDEX ux ON child_t (other_id, id)",
	"CREATE TABLE g (a INT, b INT, FOREIGN KEY (a) REFERENCES parent_t (id) ON UPDATE RESTRICT%IX%)",
	"INSERT INTO parent_t VALUES (1, 'x', 'y')",
	"INSERT INTO child_t (parent_id) VALUES (1), (NULL)",
}

// keysDDLFor is keysDDL as engine (mariadb or postgres) reads it.
func keysDDLFor(engine string) []string {
	ai, ix, more := "INT AUTO_INCREMENT PRIMARY KEY", ", KEY (b)", ""
	if engine == "postgres" {
		ai, ix, more = "SERIAL PRIMARY KEY", "", "CREATE INDEX ON g (b)"
	}
	var out []string
	for _, s := range keysDDL {
		out = append(out, strings.NewReplacer("%AI%", ai, "%IX%", ix).Replace(s))
		if more != "" && strings.HasPrefix(s, "CREATE TABLE g ") {
			out = append(out, more)
		}
	}
	return out
}

// TestShowCreateTableKeysOnPostgreSQLAsOnMariaDB: SHOW CREATE TABLE of a PostgreSQL cluster's
// tables through the proxy is MariaDB's text for the same tables: unique keys by MariaDB's
// names, plain indexes, the KEY InnoDB makes for a foreign key no index covers, foreign keys
// (PostgreSQL's own names as MariaDB's t_ibfk_<n>) with their actions, and the table options
// with the next AUTO_INCREMENT value (before: no KEY, no FOREIGN KEY and no options).
func TestShowCreateTableKeysOnPostgreSQLAsOnMariaDB(t *testing.T) {
	maria, _ := newMariaDB(t)
	execAll(t, maria, keysDDLFor("mariadb"))
	pg := openDB(t, pgCluster(t, keysDDLFor("postgres")...).addr, testUser, "", "public", "")
	for _, table := range []string{"parent_t", "child_t", "g"} {
		q := "SHOW CREATE TABLE " + table
		if got, want := showCreate(t, pg, q), showCreate(t, maria, q); got != want {
			t.Errorf("%s on PostgreSQL:\n%s\non MariaDB:\n%s", q, got, want)
		}
	}
}

func showCreate(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var name, text string
	if err := db.QueryRowContext(context.Background(), q).Scan(&name, &text); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return text
}

func execAll(t *testing.T, db *sql.DB, stmts []string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestSQLAlchemyReflectsKeysOnPostgreSQLAsOnMariaDB: SQLAlchemy (PyMySQL) reflects a PostgreSQL
// cluster's tables through the proxy with the unique keys, indexes and foreign keys it reads
// from MariaDB's same tables (SHOW CREATE TABLE had no KEY and no FOREIGN KEY lines, so
// autoload_with missed every index and foreign key), and SHOW CREATE TABLE is MariaDB's text,
// table options with the next AUTO_INCREMENT value included.
func TestSQLAlchemyReflectsKeysOnPostgreSQLAsOnMariaDB(t *testing.T) {
	testlong.Skip(t, "TestShowCreateTableKeysOnPostgreSQLAsOnMariaDB")
	python := frontendtest.PythonWith(t, "sqlalchemy, pymysql")
	script := []string{"testdata/sqlalchemy_reflect_keys.py", "parent_t", "child_t", "g"}
	dsn, name := mytest.NewDatabase(t)
	maria, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer maria.Close()
	execAll(t, maria, keysDDLFor("mariadb"))
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := runClientScript(t, python, "", script, cfg.Addr, cfg.User, cfg.Passwd, name)
	f := pgCluster(t, keysDDLFor("postgres")...)
	sameLines(t, "PostgreSQL", runClientScript(t, python, "", script, f.addr, testUser, "", "public"), want)
}
