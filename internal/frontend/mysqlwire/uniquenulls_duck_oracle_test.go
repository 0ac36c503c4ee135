package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// TestUniqueKeysWithNullsLikeMariaDB: random statements of uniqueNullsVerbs, one to five rows,
// into a table with an AUTO_INCREMENT id, a UNIQUE column and a composite UNIQUE key, whose key
// values are often NULL (NULLs never collide in a UNIQUE key) and duplicate one another within
// the statement and rows already in the table, get from the proxy on the embedded DuckDB what
// MariaDB gives: the error number or the OK packet (insert id, affected rows), LAST_INSERT_ID()
// and the rows in the table, so the ids later statements get show the ids an ignored row spent
// or gave back. DuckDB's INSERT OR IGNORE of several rows with NULL in a UNIQUE key kept one of
// them.
func TestUniqueKeysWithNullsLikeMariaDB(t *testing.T) {
	testlong.RapidChecks(t, 2, 100)
	maria, duck := mariaAndDuck(t)
	ctx := context.Background()
	tables := 0
	rapid.Check(t, func(rt *rapid.T) {
		conns, table, created, closeConns := checkTable(rt, ctx, maria, duck, &tables, "un",
			"CREATE TABLE %s (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, s VARCHAR(3) NOT NULL, u INT UNIQUE, a INT, b INT, UNIQUE KEY ab (a, b))")
		defer closeConns()
		history := []string{created}
		lastKnown := true
		for range rapid.IntRange(1, 5).Draw(rt, "statements") {
			verb := rapid.SampledFrom(uniqueNullsVerbs).Draw(rt, "verb")
			omit := rapid.Bool().Draw(rt, "omit")
			key := func(label string) string {
				return rapid.SampledFrom([]string{"NULL", "NULL", "1", "2"}).Draw(rt, label)
			}
			var rows []string
			generates := omit
			selected := strings.HasSuffix(verb, "SELECT")
			for r := range rapid.IntRange(1, 5).Draw(rt, "rows") {
				vals := []string{"'" + string(rune('a'+r)) + "'", key("u"), key("a"), key("b")}
				if !omit {
					id := rapid.SampledFrom([]string{"NULL", "NULL", "0", "2", "9"}).Draw(rt, "id")
					generates = generates || id == "NULL" || id == "0"
					vals = append([]string{id}, vals...)
				}
				rows = append(rows, rowText(vals, r, selected))
			}
			text, _ := strings.CutSuffix(verb, " SELECT")
			if text == "UPSERT" {
				text = "INSERT"
			}
			columns := "id, s, u, a, b"
			if omit {
				columns = "s, u, a, b"
			}
			text += " INTO " + table + " (" + columns + ")"
			if selected {
				// the rows of a derived table, in the order n gives them
				text += " SELECT " + columns + " FROM (" + strings.Join(rows, " UNION ALL ") + ") x ORDER BY n"
			} else {
				text += " VALUES " + strings.Join(rows, ", ")
			}
			if strings.HasPrefix(verb, "UPSERT") {
				text += " ON DUPLICATE KEY UPDATE s = concat(" + table + ".s, 'x')" // x.s too, after a SELECT
			}
			if strings.HasPrefix(verb, "UPSERT") || strings.HasPrefix(verb, "INSERT IGNORE") {
				// A generated id these may not insert (a row updated, or ignored) leaves MariaDB's
				// LAST_INSERT_ID() after a refusal where the refusal left it.
				generates = false
			}
			var got []string
			for _, name := range []string{"MariaDB", "DuckDB"} {
				got = append(got, keysOutcome(ctx, rt, name, conns[name], table, text, lastKnown || generates))
			}
			lastKnown = !strings.HasPrefix(got[0], "error") && (lastKnown || generates)
			if got[0] != got[1] {
				rt.Fatalf("%s\n%s:\nMariaDB: %s\nDuckDB:  %s", strings.Join(history, "\n"), text, got[0], got[1])
			}
			history = append(history, text+": "+got[0])
		}
	})
}

// uniqueNullsVerbs are the statements TestUniqueKeysWithNullsLikeMariaDB draws ("UPSERT": INSERT
// ... ON DUPLICATE KEY UPDATE; "... SELECT": its rows from a SELECT).
var uniqueNullsVerbs = []string{"INSERT", "INSERT IGNORE", "INSERT IGNORE SELECT", "REPLACE", "REPLACE SELECT", "UPSERT", "UPSERT SELECT"}

// rowText is row r's values: a VALUES row, or when selected a SELECT of them after its number
// n, named in the first.
func rowText(vals []string, r int, selected bool) string {
	if !selected {
		return "(" + strings.Join(vals, ", ") + ")"
	}
	if r > 0 {
		return "SELECT " + strconv.Itoa(r) + ", " + strings.Join(vals, ", ")
	}
	names := []string{"id", "s", "u", "a", "b"}[5-len(vals):]
	for i := range vals {
		vals[i] += " AS " + names[i]
	}
	return "SELECT 0 AS n, " + strings.Join(vals, ", ")
}

// keysOutcome is what statement text answered on c and what the table holds after it.
func keysOutcome(ctx context.Context, rt *rapid.T, name string, c *sql.Conn, table, text string, lastKnown bool) string {
	return statementOutcome(ctx, rt, name, c, text, lastKnown, "SELECT id, s, u, a, b FROM "+table+" ORDER BY id", func(rows *sql.Rows) (string, error) {
		var id int64
		var s string
		var u, a, b sql.NullInt64
		err := rows.Scan(&id, &s, &u, &a, &b)
		return fmt.Sprintf(" (%d %s %s %s %s)", id, s, nullInt(u), nullInt(a), nullInt(b)), err
	})
}

func nullInt(v sql.NullInt64) string {
	if !v.Valid {
		return "-"
	}
	return strconv.FormatInt(v.Int64, 10)
}

// TestBackquotedColumnsKeepTheirLengthLikeMariaDB: an INSERT, INSERT IGNORE, INSERT ... SELECT
// and UPDATE naming their columns in backquotes (as every ORM writes them) get MariaDB's check
// of a VARCHAR(3)'s length through the proxy on DuckDB: 1406 in strict mode, the value cut under
// IGNORE. The names, double-quoted in DuckDB's text, were read as strings, and 'toolong' went
// in whole.
func TestBackquotedColumnsKeepTheirLengthLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "CREATE TABLE `bq` (`id` INT PRIMARY KEY, `s` VARCHAR(3) NOT NULL)")
	for _, stmt := range []string{
		"INSERT INTO `bq` (`id`, `s`) VALUES (1, 'toolong')",
		"INSERT IGNORE INTO `bq` (`id`, `s`) VALUES (2, 'toolong')",
		"INSERT INTO `bq` (`id`, `s`) SELECT 3, 'toolong'",
		"INSERT IGNORE INTO `bq` (`id`, `s`) SELECT 4, 'toolong'",
		"INSERT INTO `bq` (`id`, `s`) VALUES (5, 'ok')",
		"UPDATE `bq` SET `s` = 'toolong' WHERE `id` = 5",
		"UPDATE IGNORE `bq` SET `s` = 'toolong' WHERE `id` = 5",
	} {
		var got []string
		for _, db := range []*sql.DB{maria, duck} {
			_, err := db.Exec(stmt)
			out := "ok"
			if err != nil {
				var me *gomysql.MySQLError
				if !errors.As(err, &me) {
					t.Fatalf("%s: %v", stmt, err)
				}
				out = fmt.Sprintf("error %d", me.Number)
			}
			got = append(got, out+" "+typedValues(t, db, "SELECT `id`, `s` FROM `bq` ORDER BY `id`"))
		}
		if got[0] != got[1] {
			t.Errorf("%s:\nMariaDB: %s\nDuckDB:  %s", stmt, got[0], got[1])
		}
	}
}
