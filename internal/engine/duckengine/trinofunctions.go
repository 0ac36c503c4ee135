package duckengine

// Trino's functions that DuckDB has under another name, or with other arguments, for a Trino
// client's statements (the embedded DuckDB answers the Trino frontend too). Names DuckDB does
// not have are macros of the compatibility catalog, which every client's search path reaches;
// names DuckDB has with another meaning (date_add, replace with two arguments) are rewritten
// for Trino clients only (trinoFunctions, pgfunctions.go).
var trinoFunctionSQL = []string{
	`CREATE MACRO {c}.main.regexp_like(s, p) AS regexp_matches(s, p)`,
	`CREATE MACRO {c}.main.from_unixtime(x) AS to_timestamp(x)`,
	`CREATE MACRO {c}.main.to_unixtime(t) AS epoch(t)`,
	`CREATE MACRO {c}.main.day_of_week(d) AS isodow(d)`,
	`CREATE MACRO {c}.main.day_of_year(d) AS dayofyear(d)`,
	`CREATE MACRO {c}.main.last_day_of_month(d) AS last_day(d)`,
	`CREATE MACRO {c}.main.json_extract_scalar(j, p) AS json_extract_string(j, p)`,
	`CREATE MACRO {c}.main.approx_distinct(x) AS approx_count_distinct(x)`,
	`CREATE MACRO {c}.main.array_max(a) AS list_max(a)`,
	`CREATE MACRO {c}.main.array_min(a) AS list_min(a)`,
	// date_add(unit, n, x): x moved by n units, a date staying a date (DuckDB's date_add(x,
	// interval) is another function).
	`CREATE MACRO {c}.main.qfpg_trino_date_add (u, n, x DATE) AS (x + (n || ' ' || u)::INTERVAL)::DATE,
		(u, n, x) AS x + (n || ' ' || u)::INTERVAL`,
	// replace(s, x): every x removed.
	`CREATE MACRO {c}.main.qfpg_trino_replace (s, x) AS replace(s, x, ''), (s, x, y) AS replace(s, x, y)`,
}
