package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// TestInsertIgnoreLikeMariaDB: random INSERT IGNORE statements (VALUES of 1 to 4 rows, as text
// or a prepared statement's parameters, or a SELECT) giving NOT NULL columns NULL, repeating a
// key of the table or of an earlier row, with ids generated, explicit or left out, get from the
// proxy on the embedded DuckDB what they get from MariaDB: the OK packet's insert id and rows,
// the warnings' codes (SHOW WARNINGS), LAST_INSERT_ID() and the rows in the table. Before: a
// NULL into a NOT NULL column failed (MariaDB stores the empty string or 0 with warning 1048),
// and a row left out as a duplicate gave no warning 1062.
func TestInsertIgnoreLikeMariaDB(t *testing.T) {
	testlong.RapidChecks(t, 5, 100)
	maria, duck := mariaAndDuck(t)
	ctx := context.Background()
	execBoth(t, maria, duck, "CREATE TABLE igsrc (k INT, s VARCHAR(5), n INT, u INT)",
		"INSERT INTO igsrc VALUES (1, NULL, 1, 1), (2, 'a', NULL, 2), (3, 'b', 3, 1), (4, NULL, NULL, NULL), (5, 'c', 5, NULL), (6, 'a', 6, 3)")
	tables := 0
	rapid.Check(t, func(rt *rapid.T) {
		conns, table, created, closeConns := checkTable(rt, ctx, maria, duck, &tables, "ig",
			"CREATE TABLE %s (id INT NOT NULL AUTO_INCREMENT, s VARCHAR(5) NOT NULL, n INT NOT NULL, u INT, PRIMARY KEY (id), UNIQUE KEY (u))")
		defer closeConns()
		history := []string{created}
		for range rapid.IntRange(1, 5).Draw(rt, "statements") {
			text, args := ignoreStatement(rt, table)
			var got []string
			for _, name := range []string{"MariaDB", "DuckDB"} {
				got = append(got, ignoreSeen(ctx, rt, conns[name], name, table, text, args))
			}
			if got[0] != got[1] {
				rt.Fatalf("%s\n%s %v:\nMariaDB: %s\nDuckDB:  %s", strings.Join(history, "\n"), text, args, got[0], got[1])
			}
			history = append(history, fmt.Sprintf("%s %v: %s", text, args, got[0]))
		}
	})
}

// ignoreStatement draws an INSERT IGNORE into table and its arguments.
func ignoreStatement(rt *rapid.T, table string) (string, []any) {
	idCol := rapid.SampledFrom([]string{"omit", "null", "explicit"}).Draw(rt, "ids")
	cols := "(s, n, u)"
	if idCol != "omit" {
		cols = "(id, s, n, u)"
	}
	if rapid.IntRange(0, 3).Draw(rt, "select") == 0 {
		id := ""
		switch idCol {
		case "null":
			id = "NULL, "
		case "explicit":
			id = "k, "
		}
		return fmt.Sprintf("INSERT IGNORE INTO %s %s SELECT %ss, n, u FROM igsrc WHERE k <= %d", table, cols, id, rapid.IntRange(1, 6).Draw(rt, "source rows")), nil
	}
	params := rapid.Bool().Draw(rt, "params")
	var rows []string
	var args []any
	for range rapid.IntRange(1, 4).Draw(rt, "rows") {
		var vals []any
		switch idCol {
		case "null":
			vals = append(vals, nil)
		case "explicit":
			vals = append(vals, rapid.IntRange(1, 6).Draw(rt, "id"))
		}
		vals = append(vals,
			rapid.SampledFrom([]any{nil, "a", "b"}).Draw(rt, "s"),
			rapid.SampledFrom([]any{nil, 1, 2}).Draw(rt, "n"),
			rapid.SampledFrom([]any{nil, 1, 2, 3, 4}).Draw(rt, "u"))
		var texts []string
		for _, v := range vals {
			switch {
			case params:
				texts = append(texts, "?")
				args = append(args, v)
			case v == nil:
				texts = append(texts, "NULL")
			case fmt.Sprint(v) == "a" || fmt.Sprint(v) == "b":
				texts = append(texts, "'"+fmt.Sprint(v)+"'")
			default:
				texts = append(texts, fmt.Sprint(v))
			}
		}
		rows = append(rows, "("+strings.Join(texts, ", ")+")")
	}
	return fmt.Sprintf("INSERT IGNORE INTO %s %s VALUES %s", table, cols, strings.Join(rows, ", ")), args
}

// ignoreSeen runs text on c and is what a client sees of it: the OK packet's insert id and
// rows, the warnings' codes, LAST_INSERT_ID() and the table's rows.
func ignoreSeen(ctx context.Context, rt *rapid.T, c *sql.Conn, name, table, text string, args []any) string {
	res, err := c.ExecContext(ctx, text, args...)
	if err != nil {
		return "error " + mysqlErrno(err)
	}
	id, _ := res.LastInsertId()
	n, _ := res.RowsAffected()
	codes, err := warningCodes(ctx, c)
	if err != nil {
		rt.Fatalf("%s: SHOW WARNINGS: %v", name, err)
	}
	var last uint64
	if err := c.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
		rt.Fatalf("%s: LAST_INSERT_ID(): %v", name, err)
	}
	rows, err := c.QueryContext(ctx, "SELECT id, s, n, u FROM "+table+" ORDER BY id")
	if err != nil {
		rt.Fatalf("%s: %v", name, err)
	}
	defer rows.Close()
	var contents []string
	for rows.Next() {
		var id, n int64
		var s string
		var u sql.NullInt64
		if err := rows.Scan(&id, &s, &n, &u); err != nil {
			rt.Fatalf("%s: %v", name, err)
		}
		contents = append(contents, fmt.Sprintf("%d|%s|%d|%v", id, s, n, u))
	}
	return fmt.Sprintf("insert id %d, %d rows, warnings %v, LAST_INSERT_ID() %d, table %s", id, n, codes, last, strings.Join(contents, ";"))
}

// warningCodes are the levels and codes SHOW WARNINGS lists on c.
func warningCodes(ctx context.Context, c *sql.Conn) ([]string, error) {
	rows, err := c.QueryContext(ctx, "SHOW WARNINGS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var codes []string
	for rows.Next() {
		var level, msg string
		var code int
		if err := rows.Scan(&level, &code, &msg); err != nil {
			return nil, err
		}
		codes = append(codes, fmt.Sprintf("%s %d", level, code))
	}
	return codes, rows.Err()
}
