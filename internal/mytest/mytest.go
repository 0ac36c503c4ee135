// Package mytest gives each test a fresh MariaDB/MySQL database on the server named by
// QUERYFLUX_TEST_MYSQL (default: root@127.0.0.1:3306, empty password) and drops it afterwards.
// Under CI=true an unreachable server fails the test; elsewhere it skips with the reason.
//
// Test-only; it touches the network and the real clock.
package mytest

import (
	"database/sql"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// ServerDSN is the go-sql-driver DSN of the test server (no database).
func ServerDSN() string {
	if d := os.Getenv("QUERYFLUX_TEST_MYSQL"); d != "" {
		return d
	}
	return "root@tcp(127.0.0.1:3306)/"
}

// NewDatabase creates a fresh database and returns a DSN for it; it is dropped when t ends.
func NewDatabase(t testing.TB) (dsn string, name string) {
	t.Helper()
	cfg, err := mysql.ParseDSN(ServerDSN())
	if err != nil {
		t.Fatalf("mytest: QUERYFLUX_TEST_MYSQL: %v", err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err == nil {
		err = db.Ping()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mytest: MariaDB at %s unreachable: %v", cfg.Addr, err)
		}
		t.Skipf("mytest: MariaDB at %s unreachable: %v", cfg.Addr, err)
	}
	defer db.Close()
	name = pgtest.NewName("qf_test_")
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("mytest: create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err == nil {
			_, err = db.Exec("DROP DATABASE IF EXISTS " + name)
			db.Close()
		}
		if err != nil {
			t.Errorf("mytest: drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN(), name
}

// RowWriter are the statements that create, in a test database, a table "written" and a
// function write_row(i) that inserts i into it and returns it: a statement that calls it for
// each row it sends takes a while to end once killed, as it rolls its writes back.
var RowWriter = []string{
	"CREATE TABLE written (i INT) ENGINE=InnoDB",
	"CREATE FUNCTION write_row(i INT) RETURNS INT MODIFIES SQL DATA BEGIN INSERT INTO written VALUES (i); RETURN i; END",
}

// Quote writes v as PyMySQL, mysqlclient and mysql2 write a string parameter into the
// statement's text: quoted, with backslash, both quotes, NUL, newline, carriage return and
// Ctrl-Z escaped by a backslash.
func Quote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, `"`, `\"`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(v) + "'"
}
