package pgengine

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestMySQLConcat: a MySQL client's concat calls become PostgreSQL's NULL-propagating
// concatenation, nested ones and their arguments' own parentheses included; what is not a call
// of MariaDB's concat stays.
func TestMySQLConcat(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"select concat(v, $1) from t", "select ('' || (v) || ($1)) from t"},
		{"select CONCAT('%', $1, '%')", "select ('' || ('%') || ($1) || ('%'))"},
		{"select concat(f(a, b), concat(x, 'y'), (1, 2))", "select ('' || (f(a, b)) || (('' || (x) || ('y'))) || ((1, 2)))"},
		{"select concat(a[1], b)", "select ('' || (a[1]) || (b))"},
		{"select concat_ws(',', a, b), concat", "select concat_ws(',', a, b), concat"},
		{"select pg_catalog.concat(a, b)", "select pg_catalog.concat(a, b)"},
		{"select concat()", "select concat()"},
		{"select 'concat(a, b)', \"concat\"", "select 'concat(a, b)', \"concat\""},
		{"select concat(a, b", "select concat(a, b"}, // unclosed: PostgreSQL's error stands
	} {
		if got := mysqlFunctions(c.in); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}

// TestMySQLConcatOfAnyText: any text keeps every byte outside the concat calls, and the rewrite
// never runs twice over (a text without concat is itself).
func TestMySQLConcatOfAnyText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.SampledFrom([]string{"concat", "CONCAT", "(", ")", ",", " ", "a", "'x'", "$1", "[", "]", ".", "--c\n", "concat_ws", "if", "group_concat", "greatest", "separator", "order by", "substring_index", "length", "-1"})).Draw(t, "parts")
		in := strings.Join(parts, "")
		out := mysqlFunctions(in)
		if !mayCall(in) && out != in {
			t.Fatalf("%q became %q", in, out)
		}
		if strings.Count(out, "(")-strings.Count(out, ")") != strings.Count(in, "(")-strings.Count(in, ")") {
			t.Fatalf("%q became %q: parentheses", in, out)
		}
	})
}

// TestMySQLFunctions: MySQL's functions PostgreSQL lacks or reads otherwise, as PostgreSQL's
// text of MariaDB's answer; a call of a count of arguments no rule takes stays.
func TestMySQLFunctions(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"select if(a > 1, a, b) from t", "select (CASE WHEN a > 1 THEN a ELSE b END) from t"},
		{"select IF(a, 'x', 'y'), if((a = 1), 1, 2)", "select (CASE WHEN (a) <> 0 THEN 'x' ELSE 'y' END), (CASE WHEN (a = 1) THEN 1 ELSE 2 END)"},
		{"select if(a is null, 1, if(b in (1, 2), 2, 3))", "select (CASE WHEN a is null THEN 1 ELSE (CASE WHEN b in (1, 2) THEN 2 ELSE 3 END) END)"},
		{"select ifnull(a, 0), isnull(a), rand(), rand(1)", "select coalesce(a, 0), ((a) IS NULL), random(), rand(1)"},
		{"select length(v), lcase(v), ucase(v), instr(v, 'u'), locate('u', v), locate('u', v, 2)",
			"select octet_length(v), lower(v), upper(v), strpos(v, 'u'), strpos(v, 'u'), locate('u', v, 2)"},
		{"select greatest(a, b), least(1, a)", "select (CASE WHEN num_nulls(a, b) > 0 THEN NULL ELSE greatest(a, b) END), (CASE WHEN num_nulls(1, a) > 0 THEN NULL ELSE least(1, a) END)"},
		{"select group_concat(v)", "select string_agg(CAST((v) AS text), ',')"},
		{"select convert_tz('2001-01-01 01:00:00', 'UTC', 'UTC') is not null, CONVERT_TZ(ts, '+00:00', '-08:00')",
			"select timezone('UTC', timezone('UTC', CAST('2001-01-01 01:00:00' AS timestamp))) is not null, " +
				"timezone(CAST('-08:00' AS interval), timezone(CAST('+00:00' AS interval), CAST(ts AS timestamp)))"},
		{"select group_concat(distinct v order by v desc separator '; ')", "select string_agg(DISTINCT CAST((v) AS text), '; ' order by v desc)"},
		{"select group_concat(a, '-', b separator '')", "select string_agg((CAST((a) AS text) || CAST(('-') AS text) || CAST((b) AS text)), '')"},
		{"select substring_index(s, '.', 2), substring_index(s, '.', -1)",
			"select array_to_string((string_to_array(s, '.'))[1:2], '.'), array_to_string((string_to_array(s, '.'))[array_length(string_to_array(s, '.'), 1) - 0:], '.')"},
		{"select datediff(a, b), truncate(d, 1), curdate(), utc_timestamp()", "select (CAST(a AS date) - CAST(b AS date)), trunc(d, 1), current_date, CAST(timezone('UTC', now()) AS timestamp(0))"},
		{"drop table if exists t", "drop table if exists t"},
		{"select s.if(a, b, c), length", "select s.if(a, b, c), length"},
		{"select cast(a as signed), CAST(a+1 AS SIGNED INTEGER), cast(a as unsigned), cast(a as char), cast(v as char(3)), cast(s as datetime)",
			"select CAST(a AS bigint), CAST(a+1 AS bigint), CAST(a AS bigint), CAST(a AS text), CAST(v AS varchar(3)), CAST(s AS timestamp(0))"},
		{"select convert(a, signed), convert(s, datetime(3)), convert(v using utf8mb4), cast(cast(a as char) as signed)",
			"select CAST(a AS bigint), CAST(s AS timestamp(3)), convert(v using utf8mb4), CAST(CAST(a AS text) AS bigint)"},
		{"select cast((select a as b from t limit 1) as signed)", "select CAST((select a as b from t limit 1) AS bigint)"},
		{"select cast(d as decimal(10,2)), cast(x as date), cast(if(a, 1, 2) as char), s.cast(a as signed)",
			"select cast(d as decimal(10,2)), cast(x as date), CAST((CASE WHEN (a) <> 0 THEN 1 ELSE 2 END) AS text), s.cast(a as signed)"},
	} {
		if got := mysqlFunctions(c.in); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}

// TestMySQLNullsOrder: a MySQL client's sort keys sort NULLs as MariaDB does (first ascending,
// last descending), in a query's, a window's and an aggregate's ORDER BY; ORDER BY NULL is
// left out.
func TestMySQLNullsOrder(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"select a from t order by a", "select a from t order by a NULLS FIRST"},
		{"select a from t order by a desc, b asc, 2 limit 3", "select a from t order by a desc NULLS LAST, b asc NULLS FIRST, 2 NULLS FIRST limit 3"},
		{"select row_number() over (order by a desc) from t", "select row_number() over (order by a desc NULLS LAST) from t"},
		{"select a, count(*) from t group by a order by null", "select a, count(*) from t group by a "},
		{"select a from (select a from t order by a limit 2) s order by null;", "select a from (select a from t order by a NULLS FIRST limit 2) s ;"},
		{"select 'order by a'", "select 'order by a'"},
	} {
		if got := mysqlNullsOrder(c.in, notNullLookup{}); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}
