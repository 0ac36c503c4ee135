package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/mytest"
)

// TestNormalSQLModeAsMariaDB: a SET sql_mode of a drawn list (mode names in any case, repeated,
// empty items, combination modes, unknown names, numbers) reads back as MariaDB reads it back,
// and is refused where MariaDB refuses it (1231).
func TestNormalSQLModeAsMariaDB(t *testing.T) {
	dsn, _ := mytest.NewDatabase(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rapid.Check(t, func(rt *rapid.T) {
		v, number := drawSQLMode(rt)
		want, wantErr := mariadbSQLMode(conn, v, number)
		got, err := normalSQLMode(v, number)
		if (err != nil) != wantErr {
			rt.Fatalf("sql_mode = %q: proxy error %v, MariaDB refused %v", v, err, wantErr)
		}
		if err == nil && got != want {
			rt.Fatalf("sql_mode = %q:\n proxy   %s\n MariaDB %s", v, got, want)
		}
	})
}

// drawSQLMode draws a value for sql_mode, and whether it is written as a number.
func drawSQLMode(rt *rapid.T) (string, bool) {
	if rapid.IntRange(0, 9).Draw(rt, "numeric") == 0 {
		return rapid.SampledFrom([]string{"0", "1", "3", "2097152", "34359738367", "34359738368"}).Draw(rt, "number"), true
	}
	names := append(append([]string{}, sqlModeNames...), "", "BOGUS", "STRICT", " ANSI")
	items := rapid.SliceOfN(rapid.SampledFrom(names), 0, 6).Draw(rt, "items")
	for i, it := range items {
		if rapid.Bool().Draw(rt, "lower") {
			items[i] = strings.ToLower(it)
		}
	}
	return strings.Join(items, ","), false
}

// mariadbSQLMode sets sql_mode to v on conn and reads it back; refused reports a 1231.
func mariadbSQLMode(conn *sql.Conn, v string, number bool) (mode string, refused bool) {
	ctx := context.Background()
	lit := "'" + v + "'"
	if number {
		lit = v
	}
	if _, err := conn.ExecContext(ctx, "SET sql_mode = "+lit); err != nil {
		var me *gomysql.MySQLError
		if errors.As(err, &me) && me.Number == 1231 {
			return "", true
		}
		panic(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT @@sql_mode").Scan(&mode); err != nil {
		panic(err)
	}
	return mode, false
}
