package mysqlwire

import (
	"database/sql"
	"encoding/json"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// divZeroTable is the table the division-by-zero statements read.
var divZeroTable = []string{"create table dz (c int)", "insert into dz values (1), (2), (0)"}

// divZeroSelects divide by a literal zero in each way MariaDB warns of, once per row answered
// (a SELECT without a table, a table's rows, a WHERE, a LIMIT), and divide by what is not zero.
var divZeroSelects = []string{
	"select 1/0",
	"select 1 % 0, mod(5, 0), 5.0/0, 1/'0', 1/(0), 1/-0, 3 / 0.00 as q",
	"select c/0 from dz order by c",
	"select c, 1/0 from dz where c > 0 order by c",
	"select 1/0 as x from dz limit 1",
	"select 7 % 3, mod(7, 2), '1/0', c from dz where c = 2",
}

// divZeroOperators are MySQL's DIV and MOD operators, which PostgreSQL's dialect does not read
// (1064 with or without a zero: left).
var divZeroOperators = []string{"select 10 mod 0.0, 1 div 0, 7 div 2"}

// TestDivisionByZeroWarnsAsMariaDB: a SELECT dividing by a literal zero answers NULL with a
// Warning 1365 "Division by 0" per division per row, as MariaDB under its default sql_mode:
// the values (go-sql-driver), SHOW WARNINGS and @@warning_count, on PostgreSQL (before: error
// 1365, "division by zero") and DuckDB (before: NULL and no warning). On PostgreSQL a write
// dividing by zero is refused with MariaDB's strict-mode error, its words too.
func TestDivisionByZeroWarnsAsMariaDB(t *testing.T) {
	_, duck := mariaAndDuck(t)
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	for name, db := range map[string]*sql.DB{"DuckDB": duck, "PostgreSQL": pg} {
		t.Run(name, func(t *testing.T) {
			maria, _ := newMariaDB(t)
			conns := oneConnEach(t, maria, db)
			var steps []string
			for _, s := range divZeroTable {
				steps = append(steps, "exec "+s)
			}
			selects := divZeroSelects
			if name == "DuckDB" {
				selects = append(selects[:len(selects):len(selects)], divZeroOperators...)
			}
			for _, s := range selects {
				steps = append(steps, s, "show warnings", "select @@warning_count")
			}
			if name == "PostgreSQL" { // DuckDB inserts NULL (left: duckengine's)
				steps = append(steps, "exec insert into dz values (1/0)", "show warnings")
			}
			compareSteps(t, conns[0], conns[1], steps)
		})
	}
}

// TestDivisionByZeroCountedForPyMySQL: PyMySQL reads the warning count in a SELECT's EOF
// (cursor's warning_count) and SHOW WARNINGS after it: through the proxy on PostgreSQL and on
// DuckDB what it reads on MariaDB.
func TestDivisionByZeroCountedForPyMySQL(t *testing.T) {
	py := frontendtest.PythonWith(t, "pymysql")
	_, name := mytest.NewDatabase(t)
	in, _ := json.Marshal(append(divZeroTable[:len(divZeroTable):len(divZeroTable)], divZeroSelects...))
	run := func(addr, user, db string) string {
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(py, "testdata/python_ddlnotes.py", host, port, user, db)
		cmd.Stdin = strings.NewReader(string(in))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python_ddlnotes.py: %v\n%s", err, out)
		}
		return string(out)
	}
	want := run("127.0.0.1:3306", "root", name)
	if got := run(pgCluster(t).addr, testUser, ""); got != want {
		t.Errorf("PyMySQL through the proxy on PostgreSQL:\n%s\nMariaDB:\n%s", got, want)
	}
	if got := run(duckServer(t), testUser, "duck"); got != want {
		t.Errorf("PyMySQL through the proxy on DuckDB:\n%s\nMariaDB:\n%s", got, want)
	}
}

// TestDivisionByZeroOfAnySelectList (rapid): select lists of divisions (/, %, MOD()) of a
// number by a zero written any way MariaDB reads one (0, 0.0, -0, (0), '0', + 0) or by a number
// that is not zero, some items aliased: the proxy on DuckDB and PostgreSQL answers MariaDB's
// column names, which values are NULL, and @@warning_count. Shrinks to the smallest list that
// differs.
func TestDivisionByZeroOfAnySelectList(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
	maria, _ := newMariaDB(t)
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	duck := openDB(t, duckServer(t), testUser, "", "duck", "")
	sides := map[string]*sql.DB{"MariaDB": maria, "DuckDB": duck, "PostgreSQL": pg}
	for _, db := range sides {
		db.SetMaxOpenConns(1) // @@warning_count is the connection's
	}
	zeros := []string{"0", "0.0", "-0", "(0)", "'0'", "+ 0", "0.00", "((0))"}
	numbers := []string{"1", "7", "2.5", "-3", "10"}
	rapid.Check(t, func(rt *rapid.T) {
		items := make([]string, rapid.IntRange(1, 4).Draw(rt, "items"))
		for i := range items {
			a := rapid.SampledFrom(numbers).Draw(rt, "a")
			b := rapid.SampledFrom(append(zeros[:len(zeros):len(zeros)], numbers...)).Draw(rt, "b")
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				items[i] = a + "/" + b
			case 1:
				items[i] = a + " % " + b
			default:
				items[i] = "mod(" + a + ", " + b + ")"
			}
			if rapid.IntRange(0, 3).Draw(rt, "alias") == 0 {
				items[i] += " as c" + strconv.Itoa(i)
			}
		}
		q := "select " + strings.Join(items, ", ")
		answer := func(db *sql.DB) string {
			rows, err := db.Query(q)
			if err != nil {
				return "error " + strconv.Itoa(int(errNumber(err)))
			}
			cols, _ := rows.Columns()
			var nulls []string
			for rows.Next() {
				vals, err := rawRow(rows, len(cols))
				if err != nil {
					rt.Fatal(err)
				}
				for i, v := range vals {
					nulls = append(nulls, cols[i]+"="+strconv.FormatBool(v == nil))
				}
			}
			rows.Close()
			var n int
			if err := db.QueryRow("select @@warning_count").Scan(&n); err != nil {
				rt.Fatal(err)
			}
			return strings.Join(nulls, " ") + " warnings " + strconv.Itoa(n)
		}
		want := answer(maria)
		for _, name := range []string{"DuckDB", "PostgreSQL"} {
			if got := answer(sides[name]); got != want {
				rt.Fatalf("%s on %s:\n got  %s\n want %s (MariaDB)", q, name, got, want)
			}
		}
	})
}
