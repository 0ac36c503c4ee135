package mysqlwire

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/mysqlmode"
	"github.com/queryflux/queryflux/internal/testlong"
)

// sqlModeSteps are the forms of SET sql_mode clients send at connect (Connector/J, SQLAlchemy,
// Django, Laravel) and read back, in one connection: each answers on PostgreSQL what it answers
// on MariaDB (a SET by its error number, a read by its rows).
var sqlModeSteps = []string{
	"select @@sql_mode",
	"exec SET sql_mode='STRICT_TRANS_TABLES'",
	"select @@sql_mode, @@session.sql_mode, @@SQL_MODE, @@LOCAL.sql_mode",
	"exec SET SESSION sql_mode = 'only_full_group_by,strict_trans_tables,,NO_ZERO_DATE'",
	"select @@sql_mode",
	"exec SET @@sql_mode = 'TRADITIONAL'",
	"select @@sql_mode",
	"exec SET @@session.sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')",
	"select @@sql_mode",
	"exec SET sql_mode = (SELECT REPLACE(@@sql_mode, 'STRICT_ALL_TABLES,', ''))",
	"select @@sql_mode",
	"exec SET sql_mode = ''",
	"select @@sql_mode, length(@@sql_mode)",
	"exec SET sql_mode = 2097152",
	"select @@sql_mode",
	"exec SET sql_mode = 'STRICT_TRANS_TABLES,BOGUS'",
	"exec SET sql_mode = NULL",
	"select @@sql_mode",
	"exec SET LOCAL sql_mode = NO_ENGINE_SUBSTITUTION",
	"select @@sql_mode",
	"exec begin",
	"exec SET sql_mode = 'NO_ZERO_DATE'",
	"exec rollback",
	"select @@sql_mode",
	"exec SET sql_mode = DEFAULT",
	"select @@sql_mode",
	"exec SET NAMES utf8mb4, sql_mode = 'STRICT_ALL_TABLES'",
	"select @@sql_mode",
	"exec SET autocommit=1, sql_mode = concat(@@sql_mode, ',STRICT_TRANS_TABLES')",
	"select @@sql_mode, 7 div 2",
	"exec SET sql_mode = ? <- NO_ZERO_DATE,STRICT_TRANS_TABLES",
	"select @@sql_mode",
	"exec SET SESSION sql_mode = ? <- traditional",
	"select @@session.sql_mode",
	"exec SET @@sql_mode = ? <- BOGUS",
	"exec SET sql_mode = ? <- 0",
	"select @@sql_mode",
	"exec SET sql_mode = concat(?, ',NO_ENGINE_SUBSTITUTION') <- STRICT_ALL_TABLES",
	"select @@sql_mode",
	"exec SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
	"select @@sql_mode, @@session.tx_isolation",
}

// TestSQLModeOnPostgreSQLAsMariaDB: SET sql_mode in the forms clients send, and @@sql_mode read
// back, answer on PostgreSQL as on MariaDB (before: 1105 `unrecognized configuration parameter
// "sql_mode"`, a syntax error at @@ or at CONCAT's parenthesis); a client's connection given
// back starts the next one from MariaDB's default.
func TestSQLModeOnPostgreSQLAsMariaDB(t *testing.T) {
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	maria, _ := newMariaDB(t)
	conns := oneConnEach(t, maria, pg)
	for _, step := range sqlModeSteps {
		var got [2]string
		for i, c := range conns {
			got[i] = stepAnswer(t, c, step)
		}
		if got[0] != got[1] {
			t.Errorf("%s:\n MariaDB    %s\n PostgreSQL %s", step, got[0], got[1])
		}
	}
	conns[1].Close()
	pg.SetMaxOpenConns(1)
	if got := dumpRows(t, pg, "select @@sql_mode"); !strings.Contains(got, mysqlmode.Default) {
		t.Errorf("a new client's @@sql_mode: %s, want MariaDB's default", got)
	}
}

// TestSQLModesPostgreSQLCannotKeep: a mode under which MariaDB would answer otherwise than
// PostgreSQL (ANSI_QUOTES, EMPTY_STRING_IS_NULL, ...; a combination naming one) is refused
// with 1231 naming it, and the session's sql_mode stays as it was.
func TestSQLModesPostgreSQLCannotKeep(t *testing.T) {
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	c := oneConnEach(t, pg, pg)[0]
	ctx := context.Background()
	if _, err := c.ExecContext(ctx, "SET sql_mode = 'NO_ZERO_DATE'"); err != nil {
		t.Fatal(err)
	}
	for stmt, mode := range map[string]string{ //determinism:ok each statement is checked alone
		"SET sql_mode = 'EMPTY_STRING_IS_NULL'":                         "EMPTY_STRING_IS_NULL",
		"SET sql_mode = concat(@@sql_mode, ',pad_char_to_full_length')": "PAD_CHAR_TO_FULL_LENGTH",
		"SET sql_mode = 'MYSQL40'":                                      "HIGH_NOT_PRECEDENCE",
		"SET sql_mode = 'ALLOW_INVALID_DATES'":                          "ALLOW_INVALID_DATES",
		"SET sql_mode = 'ORACLE'":                                       "PIPES_AS_CONCAT",
		"SET GLOBAL sql_mode = 'NO_ZERO_DATE'":                          "GLOBAL",
	} {
		_, err := c.ExecContext(ctx, stmt)
		if err == nil || !strings.Contains(err.Error(), mode) {
			t.Errorf("%s: %v, want a refusal naming %s", stmt, err, mode)
		}
	}
	if got := dumpRows(t, c, "select @@sql_mode"); got != `@@sql_mode="NO_ZERO_DATE" | ` {
		t.Errorf("@@sql_mode after the refusals: %s", got)
	}
}

// TestAnySQLModeOnPostgreSQLAsMariaDB: a drawn sql_mode (names in any case, repeated, empty
// items, combinations, unknown names, numbers) set through the proxy on PostgreSQL reads back
// as MariaDB reads it back, and is refused where MariaDB refuses it; one PostgreSQL cannot keep
// is refused naming it.
func TestAnySQLModeOnPostgreSQLAsMariaDB(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	maria, _ := newMariaDB(t)
	conns := oneConnEach(t, maria, pg)
	rapid.Check(t, func(rt *rapid.T) {
		v, number := drawSQLMode(rt)
		want, refused := setAndRead(conns[0], v, number)
		got, err := setAndRead(conns[1], v, number)
		if refused != nil {
			if err == nil || errNumber(err) != 1231 {
				rt.Fatalf("sql_mode = %q: MariaDB %v, proxy %v", v, refused, err)
			}
			return
		}
		if err != nil {
			if errNumber(err) != 1231 || !cannotKeep(want, err) {
				rt.Fatalf("sql_mode = %q: MariaDB %q, proxy %v", v, want, err)
			}
			return
		}
		if got != want {
			rt.Fatalf("sql_mode = %q:\n proxy   %s\n MariaDB %s", v, got, want)
		}
	})
}

// cannotKeep reports whether err names a mode of mode that PostgreSQL cannot keep.
func cannotKeep(mode string, err error) bool {
	for _, m := range []string{"ANSI", "ANSI_QUOTES", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES", "HIGH_NOT_PRECEDENCE", "PAD_CHAR_TO_FULL_LENGTH", "EMPTY_STRING_IS_NULL", "ALLOW_INVALID_DATES"} {
		if strings.Contains(","+mode+",", ","+m+",") && strings.Contains(err.Error(), "'"+m+"'") {
			return true
		}
	}
	return false
}

// drawSQLMode draws a value for sql_mode, and whether it is written as a number.
func drawSQLMode(rt *rapid.T) (string, bool) {
	if rapid.IntRange(0, 9).Draw(rt, "numeric") == 0 {
		return rapid.SampledFrom([]string{"0", "1", "4", "2097152", "34359738367", "34359738368"}).Draw(rt, "number"), true
	}
	names := append(append([]string{}, mysqlmode.Names...), "", "BOGUS", "STRICT", " ANSI")
	items := rapid.SliceOfN(rapid.SampledFrom(names), 0, 6).Draw(rt, "items")
	for i, it := range items {
		if rapid.Bool().Draw(rt, "lower") {
			items[i] = strings.ToLower(it)
		}
	}
	return strings.Join(items, ","), false
}

// setAndRead sets sql_mode to v on c and reads it back.
func setAndRead(c *sql.Conn, v string, number bool) (string, error) {
	ctx := context.Background()
	lit := "'" + v + "'"
	if number {
		lit = v
	}
	if _, err := c.ExecContext(ctx, "SET sql_mode = "+lit); err != nil {
		return "", err
	}
	var mode string
	err := c.QueryRowContext(ctx, "SELECT @@sql_mode").Scan(&mode)
	return mode, err
}
