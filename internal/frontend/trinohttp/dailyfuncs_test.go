package trinohttp

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// dailyValue prints a scanned value for comparison: a time as Trino writes a timestamp(3).
func dailyValue(v any) string {
	if t, ok := v.(time.Time); ok {
		return t.Format("2006-01-02 15:04:05.000")
	}
	return fmt.Sprint(v)
}

// TestTrinoDailyFunctionsOnEveryEngine: what a Trino user writes daily, answered on MariaDB,
// PostgreSQL and DuckDB as Trino's documentation says Trino answers it, through trino-go-client:
// date_trunc of every unit (of a timestamp(3) a timestamp, of a date a date), try_cast (NULL for
// a text its type does not read), format_datetime's Joda patterns, numeric typed literals (real
// '1.5'), greatest and least (NULL when an argument is), and on MariaDB, which has no arrays, Trino's NOT_SUPPORTED naming them.
func TestTrinoDailyFunctionsOnEveryEngine(t *testing.T) {
	engines := trinoOnEveryEngine(t)
	for _, db := range engines {
		mustExec(t, db, `create table fx (id integer, s varchar(20), ts timestamp(3))`)
		mustExec(t, db, `insert into fx values (1, '42', timestamp '2024-05-17 13:45:56.789'), (2, '4x', null)`)
	}
	for _, c := range []struct{ sql, types, rows string }{
		{`select date_trunc('second', ts), date_trunc('minute', ts), date_trunc('hour', ts), date_trunc('day', ts) from fx order by id`,
			"TIMESTAMP TIMESTAMP TIMESTAMP TIMESTAMP",
			"[2024-05-17 13:45:56.000 2024-05-17 13:45:00.000 2024-05-17 13:00:00.000 2024-05-17 00:00:00.000] [<nil> <nil> <nil> <nil>]"},
		{`select date_trunc('week', ts), date_trunc('month', ts), date_trunc('quarter', ts), date_trunc('year', ts) from fx order by id`,
			"TIMESTAMP TIMESTAMP TIMESTAMP TIMESTAMP",
			"[2024-05-13 00:00:00.000 2024-05-01 00:00:00.000 2024-04-01 00:00:00.000 2024-01-01 00:00:00.000] [<nil> <nil> <nil> <nil>]"},
		{`select date_trunc('month', date '2024-05-17'), date_trunc('week', date '2024-05-17'), date_trunc('year', cast('2024-05-17' as date))`,
			"DATE DATE DATE", "[2024-05-01 00:00:00.000 2024-05-13 00:00:00.000 2024-01-01 00:00:00.000]"},
		{`select try_cast(s as bigint), try_cast('12' as integer), try_cast('x' as integer), try_cast(' 7 ' as integer) from fx order by id`,
			"", "[42 12 <nil> 7] [<nil> 12 <nil> 7]"},
		{`select try_cast('1.5' as double), try_cast('abc' as double), try_cast('2024-01-02' as date), try_cast('bad' as date), try_cast('2024-02-30' as date)`,
			"DOUBLE DOUBLE DATE DATE DATE", "[1.5 <nil> 2024-01-02 00:00:00.000 <nil> <nil>]"},
		{`select format_datetime(ts, 'yyyy-MM-dd HH:mm:ss'), format_datetime(ts, 'EEE, dd MMM yyyy'), format_datetime(ts, 'yyyy-MM-dd''T''HH:mm:ss.SSS'), ` +
			`format_datetime(ts, 'h:mm a'), format_datetime(ts, 'yy/M/d H''h''') from fx order by id`,
			"VARCHAR VARCHAR VARCHAR VARCHAR VARCHAR",
			"[2024-05-17 13:45:56 Fri, 17 May 2024 2024-05-17T13:45:56.789 1:45 PM 24/5/17 13h] [<nil> <nil> <nil> <nil> <nil>]"},
		{`select greatest(1, null), least(2, 3), greatest(id, 1), least(id, null, 3) from fx order by id`, "", "[<nil> 2 1 <nil>] [<nil> 2 2 <nil>]"},
		{`select real '1.5', double '2.5', tinyint '3'`, "REAL DOUBLE", "[1.5 2.5 3]"},
		{`select real '1.5' * 2, bigint '7', decimal '-1.50'`, "", "[3 7 -1.50]"},
	} {
		for name, db := range engines {
			rows, err := db.Query(c.sql)
			if err != nil {
				t.Errorf("%s: %s: %v", name, c.sql, err)
				continue
			}
			cts, _ := rows.ColumnTypes()
			var types []string
			for _, ct := range cts {
				types = append(types, ct.DatabaseTypeName())
			}
			var out []string
			for _, r := range scanAll(t, rows) {
				var vals []string
				for _, v := range r {
					vals = append(vals, dailyValue(v))
				}
				out = append(out, "["+strings.Join(vals, " ")+"]")
			}
			if got := strings.Join(out, " "); got != c.rows || !strings.HasPrefix(strings.Join(types, " "), c.types) {
				t.Errorf("%s: %s:\n got %v %s\nwant %s %s", name, c.sql, types, got, c.types, c.rows)
			}
		}
	}
	// arrays: PostgreSQL's and DuckDB's answer, MariaDB's NOT_SUPPORTED naming what it lacks
	q := `select cardinality(split(s, ',')), element_at(split('a,b,c', ','), -1), contains(array[1, 2], 2) from fx where id = 1`
	for name, db := range engines {
		rows, err := db.Query(q)
		if name == "mariadb" {
			if trinoErrorName(err) != "NOT_SUPPORTED" || !strings.Contains(fmt.Sprint(err), "arrays (cardinality(...)) are not supported on a MariaDB engine") {
				t.Errorf("%s: %s: %v (%s), want NOT_SUPPORTED naming arrays", name, q, err, trinoErrorName(err))
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %s: %v", name, q, err)
			continue
		}
		if got := fmt.Sprint(scanAll(t, rows)); got != "[[1 c true]]" {
			t.Errorf("%s: %s: %s, want [[1 c true]]", name, q, got)
		}
	}
}
