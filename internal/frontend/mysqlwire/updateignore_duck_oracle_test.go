package mysqlwire

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// TestUpdateIgnoreLikeMariaDB: random UPDATE IGNORE statements that set a UNIQUE key's column
// (or the primary key) to a constant, a shift of its own value or another column's, over all
// rows or those a WHERE picks, as text or a prepared statement's parameters, get from the
// proxy on the embedded DuckDB what they get from MariaDB: the rows changed (the OK packet's
// affected rows), the warnings' codes and the rows in the table. MariaDB leaves a row whose new key another row has as it was and updates
// the rest, in primary key order (a WHERE that MariaDB reads through the UNIQUE key's index
// orders them by that key: left out). Before: DuckDB refused the statement (1062).
func TestUpdateIgnoreLikeMariaDB(t *testing.T) {
	testlong.RapidChecks(t, 6, 100)
	maria, duck := mariaAndDuck(t)
	ctx := context.Background()
	tables := 0
	rapid.Check(t, func(rt *rapid.T) {
		conns, table, created, closeConns := checkTable(rt, ctx, maria, duck, &tables, "ui",
			"CREATE TABLE %s (id INT NOT NULL, u INT, w INT, PRIMARY KEY (id), UNIQUE KEY (u))")
		defer closeConns()
		var rows []string
		keys := rapid.SliceOfNDistinct(rapid.IntRange(1, 8), 1, 6, rapid.ID[int]).Draw(rt, "keys")
		for i, k := range keys {
			id, u := i+1, "NULL"
			if rapid.IntRange(0, 4).Draw(rt, "null u") > 0 {
				u = fmt.Sprint(k)
			}
			rows = append(rows, fmt.Sprintf("(%d, %s, %d)", id, u, id%3))
		}
		fill := "INSERT INTO " + table + " VALUES " + strings.Join(rows, ", ")
		for name, c := range conns {
			if _, err := c.ExecContext(ctx, fill); err != nil {
				rt.Fatalf("%s: %s: %v", name, fill, err)
			}
		}
		history := []string{created, fill}
		for range rapid.IntRange(1, 4).Draw(rt, "statements") {
			params := rapid.Bool().Draw(rt, "params")
			k := rapid.IntRange(1, 3).Draw(rt, "k")
			set := rapid.SampledFrom([]string{"u = u + %d", "u = u - %d", "u = %d", "id = id + %d", "u = w + %d", "u = u + %d, w = w + 1", "w = %d"}).Draw(rt, "set")
			where := rapid.SampledFrom([]string{"", " WHERE id > %d", " WHERE w = %d", " WHERE id <> %d"}).Draw(rt, "where")
			var args []any
			arg := func(format string, v int) string {
				if format == "" {
					return ""
				}
				if params {
					args = append(args, v)
					return strings.Replace(format, "%d", "?", 1)
				}
				return fmt.Sprintf(format, v)
			}
			text := "UPDATE IGNORE " + table + " SET " + arg(set, k) + arg(where, rapid.IntRange(0, 4).Draw(rt, "where value"))
			var got []string
			for _, name := range []string{"MariaDB", "DuckDB"} {
				c := conns[name]
				res, err := c.ExecContext(ctx, text, args...)
				if err != nil {
					got = append(got, "error "+mysqlErrno(err))
					continue
				}
				n, _ := res.RowsAffected()
				codes, err := warningCodes(ctx, c)
				if err != nil {
					rt.Fatalf("%s: SHOW WARNINGS: %v", name, err)
				}
				contents, err := tableRows(ctx, c, "(SELECT id AS k, u AS v, w FROM "+table+") AS r")
				if err != nil {
					rt.Fatalf("%s: %v", name, err)
				}
				got = append(got, fmt.Sprintf("%d rows, warnings %v, table %s", n, codes, contents))
			}
			if got[0] != got[1] {
				rt.Fatalf("%s\n%s %v:\nMariaDB: %s\nDuckDB:  %s", strings.Join(history, "\n"), text, args, got[0], got[1])
			}
			history = append(history, fmt.Sprintf("%s %v: %s", text, args, got[0]))
		}
	})
}
