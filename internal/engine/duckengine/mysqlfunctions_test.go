package duckengine

import "testing"

// TestMySQLFunctionRewrites: a MySQL client's GROUP_CONCAT ... SEPARATOR, DATE_FORMAT,
// DATEDIFF, AVG, CAST AS SIGNED and LIKE as DuckDB reads them; a SHOW's LIKE is left to the
// catalog statement.
func TestMySQLFunctionRewrites(t *testing.T) {
	for in, want := range map[string]string{
		"select group_concat(name order by name separator ';') from t":              "select group_concat(name , ';' order by name ) from t",
		`select GROUP_CONCAT(DISTINCT x SEPARATOR "-") from t`:                      "select GROUP_CONCAT(DISTINCT x , '-') from t",
		"select date_format(d, '%Y-%m-%d %H:%i:%s %M %e'), datediff(a, b)":          "select strftime(d, '%Y-%m-%d %H:%M:%S %B %-d'), qf_mysql_datediff(a, b)",
		"select avg(qty), avg(distinct qty) from t":                                 "select qf_mysql_avg(qty), avg(distinct qty) from t",
		"select cast(x as signed), cast(y as unsigned integer), convert(z, signed)": "select cast(x as BIGINT), cast(y as UBIGINT), CAST(z AS BIGINT)",
		"select * from t where a like 'x%' and b not like ?":                        "select * from t where a ILIKE 'x%' and b not ILIKE ?",
		"show tables like 'x%'": "show tables like 'x%'",
	} {
		if got := mysqlCompat(in); got != want {
			t.Errorf("mysqlCompat(%q) = %q, want %q", in, got, want)
		}
	}
}
