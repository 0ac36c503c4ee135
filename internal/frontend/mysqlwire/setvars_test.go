package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// TestSetRefusal covers the SET grammar: a SET keeping what the proxy reports is answered
// OK, any other is refused naming what it sets; SET STATEMENT ... FOR is not a SET.
func TestSetRefusal(t *testing.T) {
	refused := map[string]string{
		"SET sql_select_limit = 10": "sql_select_limit", "SET SQL_AUTO_IS_NULL = 1": "sql_auto_is_null",
		"set session sql_mode=''":                      "sql_mode",
		"SET @@session.max_statement_time = 1":         "max_statement_time",
		"set @@GLOBAL.max_connections = 10":            "GLOBAL max_connections",
		"SET GLOBAL max_connections = 10":              "GLOBAL max_connections",
		"SET autocommit = 0":                           "autocommit",
		"SET NAMES utf8mb4, autocommit=0":              "autocommit",
		"set @v = 1":                                   "user variable",
		"SET @v := (SELECT 1), @w = 2":                 "user variable",
		"SET time_zone = '+02:00'":                     "time_zone",
		"set time_zone = ?":                            "time_zone",
		"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE": "transaction",
		"SET SESSION TRANSACTION READ ONLY":            "transaction",
		"SET NAMES cp1251":                             "NAMES",
		"SET NAMES latin1 COLLATE latin1_german2_ci":   "NAMES",
		"  /* orm */ SET SESSION wait_timeout=10":      "wait_timeout",
		"# c\nset foreign_key_checks = 0;":             "foreign_key_checks",
		"SET CHARACTER SET koi8r":                      "CHARACTER SET",
		"set `sql_mode` = ''":                          "sql_mode",
	}
	for sql, name := range refused {
		if !isSetStatement(sql) {
			t.Errorf("%q: not taken for a SET", sql)
			continue
		}
		err := setRefusal(sql)
		if err == nil || !strings.Contains(err.Error(), "SET "+name+" is not supported") {
			t.Errorf("%q: got %v, want a refusal naming %s", sql, err, name)
		}
	}
	// A mode that changes how statements are read is refused as MariaDB refuses a value it does
	// not take (1231), naming the mode.
	if err := setRefusal("SET sql_mode = 'ANSI_QUOTES'"); err == nil || !strings.Contains(err.Error(), "Variable 'sql_mode' can't be set to the value of 'ANSI_QUOTES'") {
		t.Errorf("SET sql_mode = 'ANSI_QUOTES': got %v, want 1231 naming the mode", err)
	}
	for _, sql := range []string{
		"SET NAMES utf8mb4", "SET NAMES 'utf8mb4' COLLATE 'utf8mb4_unicode_ci'", "set names utf8",
		"SET autocommit=1", "SET @@session.autocommit = ON", "SET character_set_results = NULL",
		"SET CHARACTER SET utf8mb4", "set time_zone = '+00:00'", "SET collation_connection = utf8mb4_general_ci",
		"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", "SET @@tx_isolation = 'REPEATABLE-READ'",
		"SET NAMES utf8mb4; ", "SET SQL_SELECT_LIMIT=DEFAULT", "SET sql_select_limit = 18446744073709551615",
		"SET SQL_AUTO_IS_NULL = 0", "SET NAMES latin1", "SET CHARACTER SET latin1", "set names utf8mb3 collate utf8mb3_bin",
		"SET NAMES 'latin1' COLLATE 'latin1_bin'",
	} {
		if !isSetStatement(sql) {
			t.Errorf("%q: not taken for a SET", sql)
		} else if err := setRefusal(sql); err != nil {
			t.Errorf("%q: refused: %v", sql, err)
		}
	}
	for _, sql := range []string{"SELECT 1", "settle", "SET STATEMENT max_statement_time=1 FOR SELECT 1", "/* SET x=1 */ SELECT 1", "UPDATE t SET a = 1", "set"} {
		if isSetStatement(sql) && sql != "set" {
			t.Errorf("%q taken for a SET", sql)
		}
	}
}

// TestReadSetAutocommit: what a SET does to autocommit, in its spellings; autocommit=0 beside
// another refused variable, GLOBAL, or as a parameter is refused.
func TestReadSetAutocommit(t *testing.T) {
	for sql, want := range map[string]autocommitSet{
		"SET autocommit=0": autocommitOff, "set @@session.autocommit = OFF": autocommitOff,
		"SET NAMES utf8mb4, autocommit = false": autocommitOff, "SET LOCAL autocommit='0'": autocommitOff,
		"SET autocommit=1": autocommitOn, "SET autocommit = ON": autocommitOn,
		"SET NAMES utf8mb4": autocommitKept, "set time_zone = '+00:00'": autocommitKept,
	} {
		if got, err := readSet(sql); err != nil || got.autocommit != want {
			t.Errorf("%q: %v, %v; want %v", sql, got, err, want)
		}
	}
	for sql, name := range map[string]string{
		"SET GLOBAL autocommit=0": "GLOBAL autocommit", "SET autocommit = ?": "autocommit",
		"SET autocommit = 2": "autocommit", "SET autocommit=0, sql_mode=''": "sql_mode",
	} {
		if _, err := readSet(sql); err == nil || !strings.Contains(err.Error(), "SET "+name+" is not supported") {
			t.Errorf("%q: %v, want a refusal naming %s", sql, err, name)
		}
	}
}

// TestReadSetIsolation: the session isolation level a SET carries, in its spellings; SET
// TRANSACTION without SESSION, GLOBAL, other characteristics and unknown levels are refused
// unless they keep the default.
func TestReadSetIsolation(t *testing.T) {
	for sql, want := range map[string]string{
		"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED":           "READ COMMITTED",
		"set local transaction isolation level read uncommitted":           "READ UNCOMMITTED",
		"SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ WRITE": "SERIALIZABLE",
		"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ":          "REPEATABLE READ",
		"SET @@session.transaction_isolation = 'READ-COMMITTED'":           "READ COMMITTED",
		"SET SESSION transaction_isolation = 'serializable'":               "SERIALIZABLE",
		"SET tx_isolation = 'READ-UNCOMMITTED', NAMES utf8mb4":             "READ UNCOMMITTED",
		"SET NAMES utf8mb4": "",
		"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ": "",
	} {
		if got, err := readSet(sql); err != nil || got.isolation != want {
			t.Errorf("%q: %q, %v; want %q", sql, got.isolation, err, want)
		}
	}
	for sql, name := range map[string]string{
		"SET TRANSACTION ISOLATION LEVEL READ COMMITTED":        "transaction",
		"SET GLOBAL TRANSACTION ISOLATION LEVEL READ COMMITTED": "GLOBAL transaction",
		"SET @@global.tx_isolation = 'READ-COMMITTED'":          "GLOBAL tx_isolation",
		"SET SESSION TRANSACTION ISOLATION LEVEL SNAPSHOT":      "transaction",
		"SET SESSION TRANSACTION READ ONLY":                     "transaction",
		"SET transaction_isolation = 'READ-SOMETHING'":          "transaction_isolation",
		"SET tx_isolation = ?":                                  "tx_isolation",
	} {
		if _, err := readSet(sql); err == nil || !strings.Contains(err.Error(), "SET "+name+" is not supported") {
			t.Errorf("%q: %v, want a refusal naming %s", sql, err, name)
		}
	}
	if err := setRefusal("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"); err == nil {
		t.Error("a backend that cannot pin accepted a session isolation level")
	}
	if err := setRefusal("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Errorf("a backend that cannot pin refused the default isolation level: %v", err)
	}
}

// TestSetThroughCore: through a real core and MariaDB, a refused SET comes back as
// ER_NOT_SUPPORTED_YET naming the variable in both protocols (a sql_mode that changes how
// statements are read as ER_WRONG_VALUE_FOR_VAR naming the mode), a no-op SET is OK, and
// SET STATEMENT ... FOR runs its statement on the engine. (SET autocommit=0 is carried:
// autocommit_test.go.)
func TestSetThroughCore(t *testing.T) {
	f := coreServer(t, coreSetup{})
	d := openDB(t, f.addr, "alice", testPassword, f.dbName, "")
	ctx := context.Background()
	conn, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"SET NAMES utf8mb4", "SET autocommit = 1", "set time_zone = '+00:00'"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err = conn.ExecContext(ctx, "SET SESSION sql_mode = 'ANSI_QUOTES'")
	if me := (*gomysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1231 || !strings.Contains(me.Message, "'sql_mode'") || !strings.Contains(me.Message, "ANSI_QUOTES") {
		t.Fatalf("SET SESSION sql_mode = 'ANSI_QUOTES': got %v, want error 1231 naming sql_mode and the mode", err)
	}
	requireSetRefused(t, conn, "SET max_statement_time = ?", "max_statement_time", 5) // prepared
	// The refused SET reached no engine connection: the client's next statements see defaults.
	var mode string
	if err := conn.QueryRowContext(ctx, "SELECT @@session.sql_mode LIKE '%ANSI_QUOTES%'").Scan(&mode); err != nil || mode != "0" {
		t.Fatalf("ANSI_QUOTES in sql_mode: %q (%v), want 0", mode, err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SET STATEMENT max_statement_time=100 FOR SELECT 42").Scan(&n); err != nil || n != 42 {
		t.Fatalf("SET STATEMENT ... FOR SELECT 42: %d, %v", n, err)
	}
}

func requireSetRefused(t *testing.T, conn *sql.Conn, q, name string, args ...any) {
	t.Helper()
	_, err := conn.ExecContext(context.Background(), q, args...)
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1235 || !strings.Contains(me.Message, "SET "+name+" is not supported") {
		t.Fatalf("%s: got %v, want error 1235 naming %s", q, err, name)
	}
}

// TestUserVariablesHeldForTheSession: SET @v pins an engine connection and holds it until the
// client disconnects, as a named lock does: the client's later statements read @v there, inside
// and after a transaction, as on its own connection to MariaDB; another client does not see it,
// nor does a client that later gets a pooled connection.
func TestUserVariablesHeldForTheSession(t *testing.T) {
	f := coreServer(t, coreSetup{})
	d := openDB(t, f.addr, "alice", testPassword, f.dbName, "")
	ctx := context.Background()
	conn, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	at := func(c *sql.Conn, what string) string {
		t.Helper()
		var v sql.NullString
		if err := c.QueryRowContext(ctx, "SELECT @v").Scan(&v); err != nil {
			t.Fatalf("%s: SELECT @v: %v", what, err)
		}
		if !v.Valid {
			return "NULL"
		}
		return v.String
	}
	if got := at(conn, "before"); got != "NULL" {
		t.Fatalf("before SET: @v = %s", got)
	}
	if _, err := conn.ExecContext(ctx, "SET @v = 42, @w = 'x'"); err != nil {
		t.Fatal(err)
	}
	if got := at(conn, "after SET"); got != "42" {
		t.Errorf("after SET: @v = %s, want 42", got)
	}
	for _, q := range []string{"BEGIN", "SET @v = @v + 1", "COMMIT"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if got := at(conn, "after the transaction"); got != "43" {
		t.Errorf("after a transaction: @v = %s, want 43", got)
	}
	if got := at(other, "another client"); got != "NULL" {
		t.Errorf("another client sees @v = %s", got)
	}
	// A variable set by another statement than SET (the event loop takes SELECT and INSERT of
	// a client that holds none) holds a connection too.
	third, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	for _, q := range []string{"SELECT 7 INTO @v", "SELECT 1", "INSERT INTO held_v SELECT @v"} {
		if q[0] == 'I' {
			if _, err := conn.ExecContext(ctx, "CREATE TABLE held_v (v INT)"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := third.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if got := at(third, "SELECT ... INTO @v"); got != "7" {
		t.Errorf("after SELECT 7 INTO @v: @v = %s, want 7", got)
	}
	var n int
	if err := third.QueryRowContext(ctx, "SELECT v FROM held_v").Scan(&n); err != nil || n != 7 {
		t.Errorf("INSERT ... SELECT @v inserted %d (%v), want 7", n, err)
	}
	conn.Close()
	for i := range 3 { // whichever pooled connection serves it
		if got := at(other, "after the first client left"); got != "NULL" {
			t.Errorf("round %d: a later client sees @v = %s", i, got)
		}
	}
}

// TestPreparedSetOfUserVariables: a prepared SET of user variables (go-sql-driver prepares a
// statement with arguments) runs, as on MariaDB, and the client's next statements, by text and
// prepared, see the values; another client does not.
func TestPreparedSetOfUserVariables(t *testing.T) {
	f := coreServer(t, coreSetup{})
	d := openDB(t, f.addr, "alice", testPassword, f.dbName, "")
	ctx := context.Background()
	conn, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET @pv = ?, @pw = ?", 7, "x"); err != nil {
		t.Fatalf("prepared SET @pv = ?, @pw = ?: %v", err)
	}
	var v, w string
	if err := conn.QueryRowContext(ctx, "SELECT @pv, @pw").Scan(&v, &w); err != nil || v != "7" || w != "x" {
		t.Errorf("SELECT @pv, @pw: %q %q %v, want 7 x", v, w, err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT @pv + ?", 1).Scan(&v); err != nil || v != "8" {
		t.Errorf("prepared SELECT @pv + ?: %q %v, want 8", v, err)
	}
	var other sql.NullString
	if err := d.QueryRowContext(ctx, "SELECT @pv").Scan(&other); err != nil || other.Valid {
		t.Errorf("another client sees @pv = %v (%v)", other, err)
	}
}
