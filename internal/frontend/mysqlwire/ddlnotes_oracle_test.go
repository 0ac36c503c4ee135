package mysqlwire

import (
	"database/sql"
	"encoding/json"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// ddlNoteSteps are DDL statements whose IF [NOT] EXISTS finds nothing to do (and some that
// do something), each followed by what a client reads of its notes.
var ddlNoteSteps = []string{
	"exec create table wn (id int)",
	"exec drop table if exists nosuch1",
	"show warnings",
	"select @@warning_count",
	"exec drop table if exists nosuch1, wn, `nosuch 2`",
	"show warnings",
	"show count(*) warnings",
	"exec create table wn (id int)",
	"exec create table if not exists wn (id int)",
	"show warnings",
	"exec create table if not exists wn2 (id int)",
	"show warnings",
	"exec drop view if exists vn",
	"show warnings",
	"exec drop table if exists wn2",
	"show warnings",
	"exec drop table if exists wn2 ;",
	"show warnings",
}

// ddlNoteDatabaseSteps are a database's (DuckDB has no DROP DATABASE): a note is kept past a
// statement that uses no table.
var ddlNoteDatabaseSteps = []string{
	"exec drop database if exists qf_nosuch_mywire41",
	"show warnings",
	"select 1",
	"show warnings",
}

// TestDDLNotesAsMariaDB: on PostgreSQL and DuckDB a DROP ... IF EXISTS of what is missing, a
// CREATE ... IF NOT EXISTS of what exists, are answered with MariaDB's note (1051, 1050, 4092,
// 1008) in SHOW WARNINGS, SHOW COUNT(*) WARNINGS and @@warning_count (before: none), and a
// statement that did its work with none.
func TestDDLNotesAsMariaDB(t *testing.T) {
	_, duck := mariaAndDuck(t)
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	for name, db := range map[string]*sql.DB{"DuckDB": duck, "PostgreSQL": pg} {
		t.Run(name, func(t *testing.T) {
			dsn, _ := mytest.NewDatabase(t)
			maria, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { maria.Close() })
			conns := oneConnEach(t, maria, db)
			steps := ddlNoteSteps
			if name == "PostgreSQL" {
				steps = append(steps[:len(steps):len(steps)], ddlNoteDatabaseSteps...)
			}
			compareSteps(t, conns[0], conns[1], steps)
		})
	}
}

// TestDDLNotesCountedForPyMySQL: PyMySQL reads a statement's warning count in its OK packet
// (and then asks SHOW WARNINGS): through the proxy on PostgreSQL it reads MariaDB's.
func TestDDLNotesCountedForPyMySQL(t *testing.T) {
	py := frontendtest.PythonWith(t, "pymysql")
	_, name := mytest.NewDatabase(t)
	f := pgCluster(t)
	stmts := []string{"create table wn (id int)", "drop table if exists nosuch1", "create table if not exists wn (id int)",
		"drop table if exists wn", "drop table if exists wn", "create table if not exists wn (id int)"}
	in, _ := json.Marshal(stmts)
	run := func(host, port, user, db, dbName string) string {
		cmd := exec.Command(py, "testdata/python_ddlnotes.py", host, port, user, db)
		cmd.Stdin = strings.NewReader(string(in))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python_ddlnotes.py: %v\n%s", err, out)
		}
		return strings.ReplaceAll(string(out), dbName+".", "db.")
	}
	want := run("127.0.0.1", "3306", "root", name, name)
	host, port, _ := net.SplitHostPort(f.addr)
	if got := run(host, port, testUser, "", "public"); got != want {
		t.Errorf("PyMySQL through the proxy on PostgreSQL:\n%s\nMariaDB:\n%s", got, want)
	}
}
