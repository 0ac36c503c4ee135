package mysqlwire

import (
	"encoding/json"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// databaseDDLSteps create and drop database db (a name no other test uses), in each form and
// on each side of existing, with what a client reads after each: the errors' numbers, the rows
// affected (CREATE 1, DROP the tables and views dropped), the notes, and SHOW DATABASES.
func databaseDDLSteps(db string) []string {
	return []string{
		"exec create database if not exists " + db,
		"show warnings",
		"show databases where `Database` = '" + db + "'",
		"exec create database " + db,
		"show warnings",
		"exec create database if not exists " + db,
		"show warnings",
		"select @@warning_count",
		"exec create schema if not exists `" + db + "` default character set utf8mb4",
		"show warnings",
		"exec create table " + db + ".t (id int)",
		"exec create table " + db + ".u (id int)",
		"exec create view " + db + ".v as select 1 as one",
		"exec insert into " + db + ".t values (1)",
		"select id from " + db + ".t",
		"exec drop database " + db,
		"show databases where `Database` = '" + db + "'",
		"exec drop database if exists " + db,
		"show warnings",
		"show count(*) warnings",
		"exec drop schema " + db + ";",
		"show warnings",
		"exec create database " + db + " character set utf8mb4 collate utf8mb4_general_ci",
		"exec drop database if exists " + db,
		"show warnings",
		"show databases where `Database` = '" + db + "'",
	}
}

// TestDatabaseStatementsAsMariaDB: on PostgreSQL a MySQL client's database is a schema (SHOW
// DATABASES lists the schemas): CREATE DATABASE [IF NOT EXISTS] with MariaDB's options creates
// one, DROP DATABASE [IF EXISTS] drops it with its tables, and the answers are MariaDB's (1007,
// 1008, their notes, CREATE's one row, DROP's count of tables). Before: the IF forms and the
// options were syntax errors (1064), CREATE DATABASE created a PostgreSQL database SHOW
// DATABASES never listed, and DROP DATABASE dropped that.
func TestDatabaseStatementsAsMariaDB(t *testing.T) {
	maria, name := newMariaDB(t)
	db := name + "_made"
	t.Cleanup(func() { _, _ = maria.Exec("drop database if exists " + db) })
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	conns := oneConnEach(t, maria, pg)
	compareSteps(t, conns[0], conns[1], databaseDDLSteps(db))
}

// TestDatabaseStatementsOnDuckDB: a DuckDB engine's databases are its catalogs, given by the
// proxy's configuration. CREATE DATABASE IF NOT EXISTS of one and DROP DATABASE IF EXISTS of
// one it lacks answer MariaDB's notes, CREATE of one that exists 1007, DROP of a missing one
// 1008, as MariaDB answers them; creating or dropping a catalog is refused with 1235 (before:
// DuckDB's parser error, 1064, for every form). CREATE SCHEMA stays DuckDB's own schema.
func TestDatabaseStatementsOnDuckDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	_, name := mytest.NewDatabase(t)
	conns := oneConnEach(t, maria, duck)
	// the same statements on MariaDB, of a database that exists there (name) and one that does not
	steps := func(have string) []string {
		return []string{
			"exec create database if not exists " + have,
			"show warnings",
			"exec create database " + have,
			"exec drop database if exists qf_nosuch_mywire42",
			"show warnings",
			"exec drop database qf_nosuch_mywire42",
			"show warnings",
		}
	}
	var got [2][]string
	for i, have := range []string{name, "duck"} {
		for _, s := range steps(have) {
			got[i] = append(got[i], strings.ReplaceAll(stepAnswer(t, conns[i], s), have, "db"))
		}
	}
	if g, w := strings.Join(got[1], "\n"), strings.Join(got[0], "\n"); g != w {
		t.Errorf("DuckDB:\n%s\nMariaDB:\n%s", g, w)
	}
	for _, s := range []string{"create database qf_new_mywire42", "create database if not exists qf_new_mywire42 character set utf8mb4", "drop database duck"} {
		if got := stepAnswer(t, conns[1], "exec "+s); got != "error 1235, -1 rows" {
			t.Errorf("%s on DuckDB: %s, want 1235", s, got)
		}
	}
	for _, s := range []string{"exec create schema if not exists sch", "exec create table sch.t (id int)", "exec drop schema sch cascade"} {
		if got := stepAnswer(t, conns[1], s); !strings.HasPrefix(got, "error 0,") {
			t.Errorf("%s on DuckDB: %s", s, got)
		}
	}
}

// TestDatabaseNotesCountedForPyMySQL: PyMySQL reads the OK packet's warning count of CREATE
// DATABASE IF NOT EXISTS and DROP DATABASE IF EXISTS, and SHOW WARNINGS after them, on
// PostgreSQL as on MariaDB.
func TestDatabaseNotesCountedForPyMySQL(t *testing.T) {
	py := frontendtest.PythonWith(t, "pymysql")
	_, name := mytest.NewDatabase(t)
	db := name + "_py"
	f := pgCluster(t)
	stmts := []string{"create database if not exists " + db, "create database if not exists " + db,
		"create table " + db + ".t (id int)", "drop database if exists " + db, "drop database if exists " + db}
	in, _ := json.Marshal(stmts)
	run := func(host, port, user string) string {
		cmd := exec.Command(py, "testdata/python_ddlnotes.py", host, port, user, "")
		cmd.Stdin = strings.NewReader(string(in))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python_ddlnotes.py: %v\n%s", err, out)
		}
		return string(out)
	}
	want := run("127.0.0.1", "3306", "root")
	host, port, _ := net.SplitHostPort(f.addr)
	if got := run(host, port, testUser); got != want {
		t.Errorf("PyMySQL through the proxy on PostgreSQL:\n%s\nMariaDB:\n%s", got, want)
	}
}

// TestUseNamesWhereTablesAreOnPostgreSQL: USE of a database (a schema on PostgreSQL) is where
// the client's unqualified names resolve next, as on MariaDB: its CREATE TABLE, INSERT, SELECT
// and SHOW TABLES, DATABASE(), and a USE inside a transaction. Before, the statements after USE
// still ran in the engine's default schema (public) while DATABASE() named public too.
func TestUseNamesWhereTablesAreOnPostgreSQL(t *testing.T) {
	maria, name := newMariaDB(t)
	db, other := name+"_use", name+"_use2"
	t.Cleanup(func() {
		_, _ = maria.Exec("drop database if exists " + db)
		_, _ = maria.Exec("drop database if exists " + other)
	})
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	conns := oneConnEach(t, maria, pg)
	compareSteps(t, conns[0], conns[1], []string{
		"exec create database " + db,
		"exec create database " + other,
		"exec use " + db,
		"select database() = '" + db + "' as here",
		"exec create table t (id int)",
		"exec insert into t values (7)",
		"select id from t",
		"show tables",
		"exec use " + other,
		"select database() = '" + other + "' as here",
		"show tables",
		"select count(*) as n from " + db + ".t",
		"exec create table t (id int)",
		"exec insert into t values (8), (9)",
		"exec begin",
		"exec use " + db,
		"select id from t",
		"exec commit",
		"select count(*) as n from " + other + ".t",
		"exec drop database " + other,
		"exec drop database " + db,
	})
}
