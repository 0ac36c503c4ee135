package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// refusedRow is one row of a generated INSERT into (id AUTO_INCREMENT, s VARCHAR(3) NOT
// NULL, u INT UNIQUE): its id ("" generated, else the explicit value), s and u as SQL.
type refusedRow struct{ id, s, u string }

// TestAutoIncrementOfRefusedRowsLikeMariaDB: random INSERTs and INSERT IGNOREs, one row or
// several, some of whose rows are refused (a duplicate of the UNIQUE column or of an explicit
// id, a NULL for the NOT NULL column, a value too long for it) at any row, get from the
// proxy on the embedded DuckDB what MariaDB (innodb_autoinc_lock_mode 1) gives: each
// statement's error number or OK packet (insert id, rows), LAST_INSERT_ID() after it, and
// the rows in the table, so the ids later statements get show every id a refused statement
// spent. The sequence goes on after a refusal, in autocommit.
func TestAutoIncrementOfRefusedRowsLikeMariaDB(t *testing.T) {
	testlong.RapidChecks(t, 4, 100)
	maria, duck := mariaAndDuck(t)
	ctx := context.Background()
	tables := 0
	rapid.Check(t, func(rt *rapid.T) {
		conns, table, created, closeConns := checkTable(rt, ctx, maria, duck, &tables, "air",
			"CREATE TABLE %s (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, s VARCHAR(3) NOT NULL, u INT UNIQUE)")
		defer closeConns()
		history := []string{created}
		// After a refusal MariaDB's LAST_INSERT_ID() is the first id of the rows written
		// before the refused one; here it stays as it was (not compared until an id is
		// generated again).
		lastKnown := true
		for range rapid.IntRange(1, 6).Draw(rt, "statements") {
			ignore := rapid.IntRange(0, 3).Draw(rt, "ignore") == 0
			omit := rapid.Bool().Draw(rt, "omit")
			// One kind of refusal a statement: which of two a row refused both ways names
			// first is another matter.
			refusal := rapid.SampledFrom([]string{"NULL", "'toolong'", "u", "u"}).Draw(rt, "refusal")
			if ignore && refusal == "NULL" {
				// IGNORE makes MariaDB store the column's implicit default ('', warning 1048)
				// for a NULL in a NOT NULL column, which the proxy on DuckDB still refuses.
				refusal = "u"
			}
			var rows []string
			generates := omit
			// Where the refusal is not a duplicate, no explicit id is one either.
			taken, err := tableIDs(ctx, conns["MariaDB"], table)
			if err != nil {
				rt.Fatal(err)
			}
			for range rapid.IntRange(1, 4).Draw(rt, "rows") {
				r := refusedRow{s: "'a'", u: "NULL"}
				if rapid.IntRange(0, 2).Draw(rt, "refused") == 0 {
					switch refusal {
					case "u":
						r.u = strconv.Itoa(rapid.IntRange(1, 4).Draw(rt, "u"))
					default:
						r.s = refusal
					}
				}
				if !omit {
					r.id = rapid.SampledFrom([]string{"NULL", "NULL", "0", "3", "7", "20"}).Draw(rt, "id")
					if id, err := strconv.ParseInt(r.id, 10, 64); err == nil && id > 0 && refusal != "u" {
						if slices.Contains(taken, id) {
							r.id = "NULL"
						}
						taken = append(taken, id)
					}
					generates = generates || r.id == "NULL" || r.id == "0"
					rows = append(rows, "("+r.id+", "+r.s+", "+r.u+")")
				} else {
					rows = append(rows, "("+r.s+", "+r.u+")")
				}
			}
			text := "INSERT "
			if ignore {
				text += "IGNORE "
			}
			text += "INTO " + table
			if omit {
				text += " (s, u)"
			} else {
				text += " (id, s, u)"
			}
			text += " VALUES " + strings.Join(rows, ", ")
			if ignore {
				// Its generated ids may all be ignored, which leaves MariaDB's LAST_INSERT_ID()
				// after a refusal where the refusal left it.
				generates = false
			}
			var got []string
			for _, name := range []string{"MariaDB", "DuckDB"} {
				got = append(got, refusedOutcome(ctx, rt, name, conns[name], table, text, lastKnown || generates))
			}
			lastKnown = !strings.HasPrefix(got[0], "error") && (lastKnown || generates)
			if got[0] != got[1] {
				rt.Fatalf("%s\n%s:\nMariaDB: %s\nDuckDB:  %s", strings.Join(history, "\n"), text, got[0], got[1])
			}
			history = append(history, text+": "+got[0])
		}
	})
}

// refusedOutcome is what statement text answered on c and what the table holds after it.
func refusedOutcome(ctx context.Context, rt *rapid.T, name string, c *sql.Conn, table, text string, lastKnown bool) string {
	return statementOutcome(ctx, rt, name, c, text, lastKnown, "SELECT id, s, coalesce(u, 0) FROM "+table+" ORDER BY id", func(rows *sql.Rows) (string, error) {
		var id, u int64
		var s string
		err := rows.Scan(&id, &s, &u)
		return fmt.Sprintf(" (%d %q %d)", id, s, u), err
	})
}

// statementOutcome is what statement text answered on c (its error number, or its OK packet
// and, when lastKnown, LAST_INSERT_ID()), and each row of query after it as row writes it.
func statementOutcome(ctx context.Context, rt *rapid.T, name string, c *sql.Conn, text string, lastKnown bool, query string, row func(*sql.Rows) (string, error)) string {
	res, err := c.ExecContext(ctx, text)
	var out string
	if err != nil {
		var me *gomysql.MySQLError
		if !errors.As(err, &me) {
			rt.Fatalf("%s: %s: %v", name, text, err)
		}
		out = fmt.Sprintf("error %d", me.Number)
	} else {
		id, _ := res.LastInsertId()
		n, _ := res.RowsAffected()
		out = fmt.Sprintf("insert id %d, %d rows", id, n)
		if lastKnown {
			var last uint64
			if err := c.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
				rt.Fatalf("%s: LAST_INSERT_ID(): %v", name, err)
			}
			out += fmt.Sprintf(", LAST_INSERT_ID() %d", last)
		}
	}
	rows, err := c.QueryContext(ctx, query)
	if err != nil {
		rt.Fatalf("%s: %v", name, err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := row(rows)
		if err != nil {
			rt.Fatalf("%s: %v", name, err)
		}
		out += r
	}
	if err := rows.Err(); err != nil {
		rt.Fatalf("%s: %v", name, err)
	}
	return out
}
