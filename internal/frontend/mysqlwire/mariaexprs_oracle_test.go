package mysqlwire

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// exprsTable holds integers, decimals, doubles, text and NULLs to divide, sum, test and sort.
var exprsTable = []string{"create table ex (id int primary key, a int, b bigint, s smallint, d decimal(6,2), f double precision, v varchar(10))",
	"insert into ex values (1, 7, 2, 3, 1.5, 2.5, 'u'), (2, null, null, null, null, null, null), (3, -3, 4, 1, -0.25, 0.1, 'é'), (4, 0, 9, -2, 10.75, -4, 'u')",
	"create table bx (id int primary key, ok boolean, g int)",
	"insert into bx values (1, true, 1), (2, false, 1), (3, null, 2), (4, true, 2), (5, true, 2)"}

// exprsSteps are statements whose answers MariaDB and PostgreSQL differed on: MySQL's / (a
// decimal division of integers too, its scale the dividend's plus 4; a division inside another
// operation is rounded to its scale, where MariaDB keeps nine digits until the end: left), SUM and AVG as
// MariaDB's decimals, SUM of a comparison, MySQL's functions, and NULLs sorted first in an
// ascending order. A step "exec ..." is compared by its error number and rows affected.
var exprsSteps = []string{
	"select 7/2, -7/2, 7.0/2, 1/3, 2/3, -2/3, 7/2.00, 10/4*2, 2*7/4, 7/-2, 7/2 > 3, 1/0",
	"select id, a/2, a/b, d/2, d/a, s/2, a/b/2, (a/b)/4, 1 + a/b, a/(b - b) from ex order by id",
	"select id, f/2, a/f, f/a, avg(f) over () from ex where id < 4 order by id",
	"select id from ex where a/2 > 3 or a/b < -0.5 order by id",
	"select sum(a)/count(*), avg(a), avg(d), avg(s), avg(distinct a), sum(a), sum(d), sum(b), sum(s), sum(distinct a) from ex",
	"select sum(v = 'u'), sum(a > 1), sum(a is null), sum((a < 0)), sum(f) from ex",
	"select a, sum(b), sum(b) over (), avg(d) from ex group by a, d, b order by a",
	"exec begin",
	"select id, f/2, a/2 from ex order by id",
	"exec update ex set a = a / 2 where id = 1",
	"exec update ex set d = d / 3 where id = 4",
	"select id, a, d from ex order by id",
	"exec commit",
	"select id, if(a > 1, a, b), ifnull(a, 0), if(a, 'y', 'n'), if(a is null, 'none', v), ifnull(v, 'z') from ex order by id",
	"select id, lcase(v), ucase(v), length(v), length('é'), instr(v, 'u'), locate('u', v), greatest(a, 1), least(a, b), truncate(d, 1) from ex order by id",
	"select substring_index('a.b.c', '.', 2), substring_index('a.b.c', '.', -2), substring_index('a.b.c', '.', 0), datediff('2024-03-01', '2024-02-01')",
	"values select group_concat(v order by id separator '|'), group_concat(a order by a desc), group_concat(id, ':', v order by id) from ex",
	"select id, a from ex order by a, id",
	"select id, a from ex order by a desc, id",
	"select id, d from ex order by d asc",
	"select id, a, row_number() over (order by a, id) from ex order by id",
	"select * from (select a, count(*) c from ex group by a order by null) s order by a",
	"select a, count(*) from ex group by a order by a desc",
	"select id, cast(a as signed), CAST(a + 1 AS SIGNED INTEGER), cast(n as signed) from ex, (select 12345678901 n) k order by id",
	// MariaDB's SIGNED is an INT when its operand is short (a SMALLINT, a DECIMAL(6,2)), its
	// UNSIGNED a BIGINT UNSIGNED: the proxy's BIGINT (values compared only).
	"values select id, cast(d as signed), convert(s, signed), cast(b as unsigned), cast(cast(7 as char) as signed) + 1 from ex order by id",
	"select id, cast(a * 100 as char), cast(v as char), cast(v as char(1)), concat(cast(id as char), '-', v), convert(d, char) from ex order by id",
	"select cast('2024-01-02 03:04:05' as datetime), cast('2024-01-02 03:04:05.123456' as datetime(3)), cast(2.5 as double)",
	"select id from ex where cast(a as char) = '7' or cast(v as char(3)) = 'é' order by id",
	"select sum(ok), avg(ok), sum(distinct ok), avg(DISTINCT bx.ok), count(ok), sum(ok = true), sum(not ok) from bx",
	"select g, sum(ok), avg(ok) from bx group by g order by g",
	"select b.g, sum(b.ok) s from bx as b where b.id > 1 group by b.g having sum(b.ok) > 0 order by s",
	"select id, sum(ok) over (order by id) from bx order by id",
	"values select min(ok), max(ok) from bx",
}

// TestMariaDBExpressionsOnPostgreSQL: through go-sql-driver, each of exprsSteps answers on
// PostgreSQL the values and column types (go-sql-driver's names) MariaDB answers, in one
// connection each (the transaction's steps in one).
func TestMariaDBExpressionsOnPostgreSQL(t *testing.T) {
	pg := openDB(t, pgCluster(t).addr, testUser, "", "", "")
	maria, _ := newMariaDB(t)
	conns := oneConnEach(t, maria, pg)
	for _, s := range exprsTable {
		for _, c := range conns {
			if _, err := c.ExecContext(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, step := range exprsSteps {
		var got [2]string
		for i, c := range conns {
			if stmt, ok := cutExec(step); ok {
				got[i] = stepAnswer(t, c, "exec "+stmt)
				continue
			}
			if stmt, ok := strings.CutPrefix(step, "values "); ok { // GROUP_CONCAT: MariaDB's TEXT, the proxy's VARCHAR (left); SIGNED's type
				got[i] = dumpRows(t, c, stmt)
				continue
			}
			rows, err := c.QueryContext(context.Background(), step)
			if err != nil {
				got[i] = "error " + strconv.Itoa(int(errNumber(err))) + " " + err.Error()
				continue
			}
			got[i] = rowsText(t, rows)
		}
		if got[0] != got[1] {
			t.Errorf("%s:\n MariaDB    %s\n PostgreSQL %s", step, got[0], got[1])
		}
	}
}

func cutExec(step string) (string, bool) { return strings.CutPrefix(step, "exec ") }
