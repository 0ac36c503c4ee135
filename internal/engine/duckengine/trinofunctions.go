package duckengine

import "strings"

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
	// json_extract_scalar: NULL for an object or an array (Trino's: the value must be a scalar).
	`CREATE MACRO {c}.main.json_extract_scalar(j, p) AS
		CASE WHEN json_type(j, p) IN ('OBJECT', 'ARRAY') THEN NULL ELSE json_extract_string(j, p) END`,
	`CREATE MACRO {c}.main.approx_distinct(x) AS approx_count_distinct(x)`,
	// greatest and least: NULL when any argument is (DuckDB's skip NULLs), of two to five arguments.
	`CREATE MACRO {c}.main.qfpg_trino_greatest(a, b) AS CASE WHEN a IS NULL OR b IS NULL THEN NULL ELSE greatest(a, b) END,
		(a, b, c) AS CASE WHEN a IS NULL OR b IS NULL OR c IS NULL THEN NULL ELSE greatest(a, b, c) END,
		(a, b, c, d) AS CASE WHEN a IS NULL OR b IS NULL OR c IS NULL OR d IS NULL THEN NULL ELSE greatest(a, b, c, d) END,
		(a, b, c, d, e) AS CASE WHEN a IS NULL OR b IS NULL OR c IS NULL OR d IS NULL OR e IS NULL THEN NULL ELSE greatest(a, b, c, d, e) END`,
	`CREATE MACRO {c}.main.qfpg_trino_least(a, b) AS CASE WHEN a IS NULL OR b IS NULL THEN NULL ELSE least(a, b) END,
		(a, b, c) AS CASE WHEN a IS NULL OR b IS NULL OR c IS NULL THEN NULL ELSE least(a, b, c) END,
		(a, b, c, d) AS CASE WHEN a IS NULL OR b IS NULL OR c IS NULL OR d IS NULL THEN NULL ELSE least(a, b, c, d) END,
		(a, b, c, d, e) AS CASE WHEN a IS NULL OR b IS NULL OR c IS NULL OR d IS NULL OR e IS NULL THEN NULL ELSE least(a, b, c, d, e) END`,
	// array_join(a, d[, n]): a's elements as text joined by d, a NULL skipped or written as n.
	`CREATE MACRO {c}.main.array_join(a, d) AS array_to_string(a, d),
		(a, d, n) AS array_to_string(list_transform(a, x -> coalesce(CAST(x AS VARCHAR), n)), d)`,
	`CREATE MACRO {c}.main.current_timezone() AS current_setting('TimeZone')`,
	`CREATE MACRO {c}.main.array_max(a) AS list_max(a)`,
	`CREATE MACRO {c}.main.array_min(a) AS list_min(a)`,
	`CREATE MACRO {c}.main.nan() AS 'NaN'::DOUBLE`,
	`CREATE MACRO {c}.main.infinity() AS 'Infinity'::DOUBLE`,
	`CREATE MACRO {c}.main.is_nan(x) AS isnan(x)`,
	`CREATE MACRO {c}.main.is_infinite(x) AS isinf(x)`,
	`CREATE MACRO {c}.main.is_finite(x) AS isfinite(x)`,
	// date_add(unit, n, x): x moved by n units, a date staying a date (DuckDB's date_add(x,
	// interval) is another function).
	`CREATE MACRO {c}.main.qfpg_trino_date_add (u, n, x DATE) AS (x + (n || ' ' || u)::INTERVAL)::DATE,
		(u, n, x) AS x + (n || ' ' || u)::INTERVAL`,
	// element_at(array, i) (from the end for a negative i, NULL past either end) and
	// element_at(map, key) (NULL for a key not there): DuckDB's subscript, on both; an array's
	// index 0 fails as in Trino (ArrayElementAtFunction: INVALID_FUNCTION_ARGUMENT, 2202E here),
	// where DuckDB answers NULL. typeof ends in ] for a list or an array, not for a map.
	`CREATE MACRO {c}.main.qfpg_trino_element_at(a, i) AS CASE WHEN i::VARCHAR = '0' AND typeof(a) LIKE '%]'
		THEN error('` + raisedPrefix + `2202E SQL array indices start at 1') ELSE a[i] END`,
	// a / b and a % b (guardDivision): by a zero, Infinity, -Infinity or NaN (Java's answers)
	// when either operand is a double or a real (the remainder's type says), else
	// DIVISION_BY_ZERO; NULL for a NULL operand. least(NaN, 'Infinity') is Infinity (DuckDB
	// orders NaN last) of the operands' type; the string is made a number only where it runs.
	`CREATE MACRO {c}.main.qf_trino_divide(a, b) AS CASE WHEN b = 0 THEN
		CASE WHEN a IS NULL THEN NULL WHEN typeof(a % b) IN ('DOUBLE', 'FLOAT')
			THEN least(a % b, 'Infinity') * sign(a) * (1 - 2 * signbit(b)::TINYINT)
			ELSE error('` + raisedPrefix + `22012 division by zero') END
		ELSE a / b END`,
	// a / b of decimals whose types the rewrite read (trinoDecimalQuotient): a and b are the
	// unscaled operands, a shifted so that the integer quotient has one digit more than the
	// scale s; that digit rounds it half up (away from zero), and the text 'Me-s' is read as a
	// decimal without a double in between. A zero b fails as every Trino division by zero.
	`CREATE MACRO {c}.main.qf_trino_decimal_quotient(a, b, s) AS CAST(sign(a) * sign(b) *
		(({c}.main.qf_trino_divide(abs(a), abs(b)) + 5) // 10) AS VARCHAR) || 'e-' || s`,
	`CREATE MACRO {c}.main.qf_trino_mod(a, b) AS CASE WHEN b = 0 AND a IS NOT NULL AND typeof(a % b) NOT IN ('DOUBLE', 'FLOAT')
		THEN error('` + raisedPrefix + `22012 division by zero') ELSE a % b END`,
	// a[i] (trinoSubscript): an array's index out of its bounds fails as in Trino
	// (ArraySubscriptOperator.checkIndex: INVALID_FUNCTION_ARGUMENT, 2202E here), where DuckDB
	// answers NULL (and counts a negative index from the end). A map's key, or a NULL index or
	// array, is DuckDB's subscript: typeof ends in ] for a list or an array, not for a map. The
	// length is its JSON's, which binds for a map too (len and cardinality take one kind only).
	`CREATE MACRO {c}.main.qf_trino_subscript(a, i) AS CASE
		WHEN typeof(a) NOT LIKE '%]' OR TRY_CAST(i AS BIGINT) BETWEEN 1 AND json_array_length(to_json(a)) THEN a[i]
		WHEN TRY_CAST(i AS BIGINT) = 0 THEN error('` + raisedPrefix + `2202E SQL array indices start at 1')
		WHEN TRY_CAST(i AS BIGINT) < 0 THEN error('` + raisedPrefix + `2202E Array subscript is negative: ' || i)
		WHEN TRY_CAST(i AS BIGINT) > json_array_length(to_json(a)) THEN error('` + raisedPrefix +
		`2202E Array subscript must be less than or equal to array length: ' || i || ' > ' || json_array_length(to_json(a)))
		ELSE a[i] END`,
	// replace(s, x): every x removed.
	`CREATE MACRO {c}.main.qfpg_trino_replace (s, x) AS replace(s, x, ''), (s, x, y) AS replace(s, x, y)`,
}

// jodaFields are Joda-Time's date and time fields (Trino's format_datetime) as strftime writes
// them, longest first where one begins another.
var jodaFields = []struct{ joda, strftime string }{
	{"yyyy", "%Y"}, {"yy", "%y"}, {"y", "%Y"}, {"MMMM", "%B"}, {"MMM", "%b"}, {"MM", "%m"}, {"M", "%-m"},
	{"dd", "%d"}, {"d", "%-d"}, {"HH", "%H"}, {"H", "%-H"}, {"hh", "%I"}, {"h", "%-I"}, {"mm", "%M"}, {"m", "%-M"},
	{"ss", "%S"}, {"s", "%-S"}, {"SSSSSS", "%f"}, {"SSS", "%g"}, {"a", "%p"}, {"EEEE", "%A"}, {"EEE", "%a"},
	{"DDD", "%j"}, {"D", "%-j"},
}

// strftimeOfJoda is Trino's format_datetime format f (Joda-Time's) as strftime's; ok is false
// for a field strftime has not (the call is then left as written: DuckDB has no
// format_datetime, and says so).
func strftimeOfJoda(f string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(f); {
		c := f[i]
		switch {
		case c == '\'': // quoted text; '' is a quote
			end := i + 1
			for ; end < len(f); end++ {
				if f[end] == '\'' {
					if end+1 < len(f) && f[end+1] == '\'' {
						end++
						continue
					}
					break
				}
			}
			if end >= len(f) {
				return "", false
			}
			text := f[i+1 : end]
			if end == i+1 {
				text = "'" // '' alone
			}
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(text, "''", "'"), "%", "%%"))
			i = end + 1
			continue
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			run := 1
			for i+run < len(f) && f[i+run] == c {
				run++
			}
			field := ""
			for _, jf := range jodaFields {
				if jf.joda == f[i:i+run] {
					field = jf.strftime
					break
				}
			}
			if field == "" {
				return "", false
			}
			b.WriteString(field)
			i += run
			continue
		case c == '%':
			b.WriteByte('%')
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), true
}

// trinoSubscript writes a Trino client's subscript at w.i, x[i], as qf_trino_subscript(x, i)
// (trinoFunctionSQL), the call written before the subscripted term (termStart, insertAt) and
// the closing bracket replaced; it reports whether it wrote anything: not for ARRAY's own
// bracket, a list type's (integer[]), a slice (x[1:2], DuckDB's), or a term not read back.
func (w *compatWriter) trinoSubscript() bool {
	prev := w.prevSig(w.i)
	if w.starts == nil || w.word(w.i) != "[" || prev < 0 || w.word(prev) == "array" {
		return false
	}
	start, end := w.termStart(prev), w.bracketEnd(w.i)
	if start < 0 || w.starts[start] < 0 || end < 0 || end == w.sig(w.i+1, 0) { // integer[]: a type
		return false
	}
	depth := 0
	for j := w.sig(w.i+1, 0); j >= 0 && j < end; j = w.sig(j+1, 0) {
		switch w.word(j) {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ":":
			if depth == 0 {
				return false
			}
		}
	}
	w.insertAt(w.starts[start], "qf_trino_subscript(")
	w.emit(", ")
	w.replace(end, end, ")")
	w.i++
	return true
}

// valuesRows writes the rows of Trino's VALUES at w.i (VALUES 1, 2 is two rows; DuckDB reads
// only parenthesized rows): each item not already a parenthesized row is put in parentheses,
// ROW(a, b) written (a, b).
func (w *compatWriter) valuesRows() {
	if w.after == nil {
		w.after = map[int]string{}
	}
	start, depth := w.sig(w.i+1, 0), 0
	for j := start; ; j = w.sig(j+1, 0) {
		word := w.word(j)
		if depth == 0 && (j < 0 || word == "," || word == ")" || word == ";" || valuesEnds[word]) {
			if start >= 0 && start != j {
				last := w.prevSig(j)
				if j < 0 {
					last = w.prevSig(len(w.toks))
				}
				switch {
				case w.word(start) == "(" && w.callEnd(start) == last:
				case w.word(start) == "row" && w.word(w.sig(start+1, 0)) == "(" && w.callEnd(w.sig(start+1, 0)) == last:
					w.replace(start, start, "")
				default:
					w.after[w.prevSig(start)] += " ("
					w.after[last] += ")"
				}
			}
			if word != "," {
				return
			}
			start = w.sig(j+1, 0)
			continue
		}
		switch word {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		}
	}
}

// valuesEnds are the words that end a VALUES list.
var valuesEnds = map[string]bool{"order": true, "limit": true, "offset": true, "fetch": true, "union": true,
	"intersect": true, "except": true, "on": true, "returning": true}
