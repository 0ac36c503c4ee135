package mysqlwire

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// divOpsTable holds divisors that are zero in some rows.
var divOpsTable = []string{"create table dv (id int primary key, a int, b int, x decimal(6,2))",
	"insert into dv values (1, 7, 2, 7.5), (2, -7, 2, -7.5), (3, 7, -2, 2.5), (4, 5, 0, 0), (5, 0, 0, 1), (6, 9, null, null), (7, -9, 4, -0.5)"}

// divOpsSelects divide by columns and expressions that are zero in some rows, in the select
// list, an aggregate, WHERE and HAVING, and use MySQL's DIV and MOD operators.
var divOpsSelects = []string{
	"select a, b, a mod b, a % b, mod(a, b), a div b from dv order by id",
	"select x div b, x mod b, x div 2, -7 div 2, 7.5 div 2, 7 div -2, 10 mod 0.0 from dv order by id",
	"select a / b is null, x / (b - b) from dv order by id",
	"select id from dv where a div b > 1 order by id",
	"select id from dv where a / b is null order by id",
	"select count(a % b), sum(a mod b), max(a div b), count(a / b) from dv",
	"select b, sum(a) div sum(b) from dv where b is not null group by b having sum(a) mod sum(b) is null order by b",
	"select a div (b - b) from dv where a = 7 order by id",
	"select 7 div 2 * 3, 2 * 7 div 2, 1 + 7 div 2, - 7 div 2, 7 div 2 div 2",
	"select (select max(a) from dv) div b from dv order by id",
}

// divCountedSelects divide in a plain select list by what is zero in some rows: MariaDB warns
// once per division evaluated per row answered (not of a NULL's divisor, not of an untaken
// branch). An integer / is read as NULL or not: PostgreSQL divides integers as integers (left).
var divCountedSelects = []string{
	"select a / b is null, a div b, a mod b, mod(a, b), a % b from dv order by id",
	"select id, a / (b - b), x / b is null, 1 / 0 from dv where id > 2 order by id",
	"select a / b is null from dv order by a desc limit 2",
	"select a / 0, b / 0, b div 0, a / b is null from dv order by id",
	"select case when b = 0 then null else a div b end, coalesce(a div b, -1), coalesce(1, a % b) from dv order by id",
	"select id, -a div -b, (a) % (b), a div b div b from dv order by id",
}

// TestDivisionOfColumnsAsMariaDB: on PostgreSQL a divisor that is a column or an expression and
// zero in some rows answers NULL there, in the select list, an aggregate, WHERE and HAVING, as
// MariaDB answers (before: 1365 for the whole statement); MySQL's DIV and MOD operators answer
// MariaDB's values (before: 1064); a plain select list's divisions by zero are MariaDB's
// warnings (SHOW WARNINGS, @@warning_count); a write dividing by a zero column is MariaDB's
// strict error.
func TestDivisionOfColumnsAsMariaDB(t *testing.T) {
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	maria, _ := newMariaDB(t)
	conns := oneConnEach(t, maria, pg)
	var steps []string
	for _, s := range divOpsTable {
		steps = append(steps, "exec "+s)
	}
	steps = append(steps, divOpsSelects...)
	for _, s := range divCountedSelects {
		steps = append(steps, s, "show warnings", "select @@warning_count")
	}
	steps = append(steps, "exec update dv set a = a div b where id = 1", "exec update dv set a = a div b where id = 4",
		"exec update dv set a = a mod b where id = 3", "select a from dv order by id")
	compareSteps(t, conns[0], conns[1], steps)
}

// TestDivisionOfAnyExpression (rapid): expressions of columns (zero in some rows, NULL in one)
// and numbers joined by /, %, MOD(), DIV and MOD, in a select list and in a WHERE: the proxy on
// PostgreSQL answers MariaDB's values (/ outermost only: MariaDB keeps nine digits of a
// division inside another operation), rows, and for the select list MariaDB's warning count. Shrinks to the smallest expression that differs.
func TestDivisionOfAnyExpression(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	maria, _ := newMariaDB(t)
	conns := oneConnEach(t, maria, pg)
	for _, s := range divOpsTable {
		for _, c := range conns {
			if _, err := c.ExecContext(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
	}
	operands := []string{"a", "b", "x", "id", "0", "2", "-3", "(b - 2)", "abs(b)"}
	var expr func(rt *rapid.T, depth int, slash *bool) string
	expr = func(rt *rapid.T, depth int, slash *bool) string {
		if depth == 0 || depth < 3 && rapid.IntRange(0, 2).Draw(rt, "leaf") == 0 {
			return rapid.SampledFrom(operands).Draw(rt, "operand")
		}
		l, r := expr(rt, depth-1, slash), expr(rt, depth-1, slash)
		switch rapid.IntRange(0, 5).Draw(rt, "op") {
		case 0:
			return l + " div " + r
		case 1:
			return l + " mod " + r
		case 2:
			return l + " % " + r
		case 3:
			return "mod(" + l + ", " + r + ")"
		case 4:
			if depth < 3 { // a / inside another operation: MariaDB keeps nine digits of it, the proxy its scale (left)
				return "(" + l + ")"
			}
			*slash = true
			return l + " / " + r
		default:
			return "(" + l + ")"
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		var slash bool
		e := expr(rt, 3, &slash)
		item := e // a / at the top is MariaDB's decimal (its scale the dividend's plus 4) or double
		qs := []string{"select id, " + item + " from dv order by id", "select id from dv where (" + e + ") is null order by id"}
		if !slash {
			qs = append(qs, "select id from dv where "+e+" > 1 order by id", "select max("+e+"), count("+e+") from dv")
		}
		for i, q := range qs {
			want, got := queryText(t, conns[0], q), queryText(t, conns[1], q)
			if i == 0 { // a plain select list: its warnings are MariaDB's
				want += " warnings " + queryText(t, conns[0], "select @@warning_count")
				got += " warnings " + queryText(t, conns[1], "select @@warning_count")
			}
			if got != want {
				rt.Fatalf("%s:\n PostgreSQL %s\n MariaDB    %s", q, got, want)
			}
		}
	})
}

// queryText is q's rows as text, or its error's number. Column types are not compared: an
// integer expression is MariaDB's BIGINT and PostgreSQL's integer (left). A decimal zero
// MariaDB signs is read unsigned.
func queryText(t *testing.T, c *sql.Conn, q string) string {
	rows, err := c.QueryContext(context.Background(), q)
	if err != nil {
		return "error " + strconv.Itoa(int(errNumber(err)))
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals, err := rawRow(rows, len(cols))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if v == nil {
				out = append(out, "NULL")
			} else if z := strings.TrimLeft(string(v), "-0."); z == "" && v[0] == '-' {
				out = append(out, string(v[1:])) // MariaDB's negative decimal zero (-9 MOD -0.5 is -0.00): left
			} else {
				out = append(out, string(v))
			}
		}
		out = append(out, "|")
	}
	if err := rows.Err(); err != nil {
		out = append(out, "error "+strconv.Itoa(int(errNumber(err))))
	}
	return strings.Join(out, " ")
}
