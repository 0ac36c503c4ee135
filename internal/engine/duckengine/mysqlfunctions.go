package duckengine

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// MySQL's functions and operators an application's statements use that DuckDB reads otherwise
// or lacks, written for DuckDB by mysqlCompat:
//   - GROUP_CONCAT(x [ORDER BY ...] SEPARATOR 's') is DuckDB's GROUP_CONCAT(x, 's' [ORDER BY
//     ...]) (DuckDB's parser stopped at SEPARATOR);
//   - DATE_FORMAT(d, 'format') is strftime(d, format), the format's specifiers as strftime
//     writes them (%i minutes, %s seconds, %M the month's name, ...);
//   - DATEDIFF(a, b) is the days from b to a (DuckDB's takes a unit first);
//   - AVG of an integer is a DECIMAL with 4 decimals (MySQL's div_precision_increment), not a
//     DOUBLE (PyMySQL reads Decimal('5.3333'));
//   - CAST(x AS SIGNED | UNSIGNED [INTEGER]) is a BIGINT or UBIGINT, CONVERT(x, type) a CAST;
//   - LIKE is ILIKE: MySQL's default collations compare strings without regard to case.

// mysqlEdit is text written in place of the tokens from one index to to, and text written
// before them (a call opened around an operand: intervalEdits).
type mysqlEdit struct {
	to     int // -1: nothing replaced, only before written
	text   string
	before string
}

// mysqlFunctionEdits are the edits of toks (a MySQL client's statement, not a SHOW) for the
// functions above, by the index of the first token each replaces.
func mysqlFunctionEdits(toks []sqltok.Token) map[int]mysqlEdit {
	var edits map[int]mysqlEdit
	if first := nextSignificant(toks, 0); first < len(toks) && toks[first].IsWord("show") {
		return nil // SHOW ... LIKE is a pattern on names (mysqlshow)
	}
	edit := func(from, to int, text string) {
		if edits == nil {
			edits = map[int]mysqlEdit{}
		}
		edits[from] = mysqlEdit{to, text, edits[from].before}
	}
	insert := func(at int, text string) {
		if edits == nil {
			edits = map[int]mysqlEdit{}
		}
		e, ok := edits[at]
		if !ok {
			e.to = -1
		}
		e.before += text
		edits[at] = e
	}
	for i, t := range toks {
		if t.Kind != sqltok.Word {
			continue
		}
		switch strings.ToLower(t.Text) {
		case "group_concat":
			separatorEdits(toks, i, edit)
		case "date_format":
			if args := callArgs(toks, i); len(args) == 2 && args[1][0] == args[1][1] {
				if v, ok := mysqlString(toks, args[1][0]); ok {
					edit(i, i, "qf_mysql_date_format")
					edit(args[1][0], args[1][0], duckString(strftimeFormat(v)))
				}
			}
		case "avg":
			if args := callArgs(toks, i); len(args) == 1 && !toks[args[0][0]].IsWord("distinct", "all") {
				edit(i, i, "qf_mysql_avg")
			}
		case "convert": // CONVERT(x, type): CAST(x AS type)
			if args := callArgs(toks, i); len(args) == 2 {
				edit(i, i, "CAST")
				comma := nextSignificant(toks, args[0][1]+1)
				edit(comma, comma, " AS")
			}
		case "datediff":
			if len(callArgs(toks, i)) == 2 {
				edit(i, i, "qf_mysql_datediff")
			}
		case "signed", "unsigned":
			if prev := prevSignificant(toks, i); prev >= 0 && (toks[prev].IsWord("as") || toks[prev].Text == ",") {
				typ, end := "BIGINT", i
				if strings.EqualFold(t.Text, "unsigned") {
					typ = "UBIGINT"
				}
				if next := nextSignificant(toks, i+1); next < len(toks) && toks[next].IsWord("integer", "int") {
					end = next
				}
				edit(i, end, typ)
			}
		case "like": // LIKE BINARY: by case, DuckDB's LIKE by bytes (Django's contains, startswith; mysqlbinary.go)
			if next := nextSignificant(toks, i+1); next < len(toks) && toks[next].IsWord("binary") {
				if not := prevSignificant(toks, i); not >= 0 && toks[not].IsWord("not") {
					edit(not, next, binaryLike(toks, not, true))
				} else {
					edit(i, next, binaryLike(toks, i, false))
				}
			} else {
				edit(i, i, "ILIKE")
			}
		case "timestampdiff": // TIMESTAMPDIFF(unit, a, b): the whole units from a to b
			if args := callArgs(toks, i); len(args) == 3 && args[0][0] == args[0][1] {
				if u, ok := timestampUnits[strings.ToLower(toks[args[0][0]].Text)]; ok {
					edit(i, args[0][0], "qf_mysql_timestampdiff('"+u+"'")
				}
			}
		case "str_to_date": // STR_TO_DATE(s, 'format'): a DATE, or a DATETIME with time fields
			if args := callArgs(toks, i); len(args) == 2 && args[1][0] == args[1][1] {
				if v, ok := mysqlString(toks, args[1][0]); ok {
					f, timed := strptimeFormat(v)
					name := "qf_mysql_str_to_date"
					if !timed {
						name = "qf_mysql_str_to_date_only"
					}
					edit(i, i, name)
					edit(args[1][0], args[1][0], duckString(f))
				}
			}
		case "length", "octet_length": // MySQL's LENGTH counts bytes (DuckDB's, characters)
			if len(callArgs(toks, i)) == 1 {
				edit(i, i, "qf_mysql_length")
			}
		case "concat": // CONCAT(a, b, ...): NULL when any is (DuckDB's concat skips NULLs; its || does not)
			concatEdits(toks, i, edit)
		case "sleep": // SLEEP(seconds): 0, after the wait (a KILL QUERY ends it: 1317)
			if len(callArgs(toks, i)) == 1 {
				edit(i, i, "qf_mysql_sleep")
			}
		case "to_days":
			if len(callArgs(toks, i)) == 1 {
				edit(i, i, "qf_mysql_to_days")
			}
		case "truncate": // TRUNCATE(x, d): DuckDB's trunc (TRUNCATE is its statement's keyword)
			if len(callArgs(toks, i)) == 2 && i != nextSignificant(toks, 0) {
				edit(i, i, "trunc")
			}
		case "div", "mod": // a DIV b: integer division; a MOD b: the remainder
			prev, next := prevSignificant(toks, i), nextSignificant(toks, i+1)
			if prev >= 0 && next < len(toks) && operandEnd(toks[prev]) && operandStart(toks[next]) {
				edit(i, i, map[string]string{"div": "//", "mod": "%"}[strings.ToLower(t.Text)])
			}
		case "date_add", "date_sub", "adddate", "subdate":
			// DATE_ADD(x, INTERVAL n unit): MySQL's type, a DATE for a DATE and whole days (a
			// DATETIME with a time unit), text for text (DuckDB's date_sub is another function,
			// and DuckDB adds no interval to a string).
			if args := callArgs(toks, i); len(args) == 2 && toks[args[1][0]].IsWord("interval") {
				unit := strings.ToLower(toks[args[1][1]].Text)
				kind := "time"
				if unit == "day" || unit == "week" || unit == "month" || unit == "quarter" || unit == "year" {
					kind = "days"
				}
				op := "add"
				if f := strings.ToLower(t.Text); f == "date_sub" || f == "subdate" {
					op = "sub"
				}
				edit(i, i, "qf_mysql_date_"+op+"_"+kind)
			}
		case "regexp", "rlike": // a [NOT] REGEXP 'p': regexp_matches, without regard to case (MySQL's collations)
			regexpEdit(toks, i, edit)
		case "year", "month", "day", "dayofmonth", "dayofyear", "quarter", "hour", "minute", "second",
			"dayofweek", "weekday", "dayname", "monthname", "last_day", "time":
			// A date's part: of MySQL's text of a date too, as MySQL's INT (mysqlDateParts).
			if len(callArgs(toks, i)) == 1 && !typePosition(toks, i) {
				edit(i, i, "qf_mysql_"+strings.ToLower(t.Text))
			}
		case "week": // WEEK(d [, mode]): the modes strftime counts (mysqlWeekModes), others left to DuckDB's error
			switch args := callArgs(toks, i); {
			case len(args) == 1:
				edit(i, i, "qf_mysql_week")
			case len(args) == 2 && args[1][0] == args[1][1] && mysqlWeekModes[toks[args[1][0]].Text] != "":
				edit(i, i, mysqlWeekModes[toks[args[1][0]].Text])
				comma := nextSignificant(toks, args[0][1]+1)
				edit(comma, args[1][1], "")
			}
		case "char_length", "character_length": // MySQL's INT (DuckDB's BIGINT)
			if len(callArgs(toks, i)) == 1 {
				edit(i, i, "qf_mysql_char_length")
			}
		case "hex", "bin":
			if len(callArgs(toks, i)) == 1 {
				edit(i, i, "qf_mysql_"+strings.ToLower(t.Text))
			}
		case "field", "elt": // FIELD(s, a, b, ...), ELT(n, a, b, ...): the list as one argument
			listEdits(toks, i, edit)
		case "insert": // INSERT(s, pos, len, new), not the statement
			if len(callArgs(toks, i)) == 4 && i != nextSignificant(toks, 0) {
				edit(i, i, "qf_mysql_insert")
			}
		case "now", "current_timestamp", "localtimestamp", "localtime", "sysdate", "utc_timestamp":
			nowEdits(toks, i, edit)
		case "from_unixtime": // MySQL's DATETIME in UTC (Trino's from_unixtime, a TIMESTAMP WITH TIME ZONE), or its text in a format
			switch args := callArgs(toks, i); {
			case len(args) == 1:
				edit(i, i, "qf_mysql_from_unixtime")
			case len(args) == 2 && args[1][0] == args[1][1]:
				if v, ok := mysqlString(toks, args[1][0]); ok {
					edit(i, i, "qf_mysql_from_unixtime_format")
					edit(args[1][0], args[1][0], duckString(strftimeFormat(v)))
				}
			}
		case "sql_calc_found_rows", "sql_no_cache", "sql_cache", "sql_small_result", "sql_big_result", "sql_buffer_result", "high_priority":
			// SELECT's modifiers, left out (SQL_CALC_FOUND_ROWS's count: foundrows.go)
			if prev := prevSignificant(toks, i); prev >= 0 && toks[prev].IsWord("select", "distinct", "all", "sql_calc_found_rows",
				"sql_no_cache", "sql_cache", "sql_small_result", "sql_big_result", "sql_buffer_result", "high_priority") {
				edit(i, i, "")
			}
		case "straight_join":
			// SELECT STRAIGHT_JOIN ... (a modifier: the optimizer's join order) is left out;
			// a STRAIGHT_JOIN b is a JOIN b: the same rows, in DuckDB's order
			if prev := prevSignificant(toks, i); prev >= 0 && toks[prev].IsWord("select", "distinct", "all", "distinctrow", "sql_calc_found_rows",
				"sql_no_cache", "sql_cache", "sql_small_result", "sql_big_result", "sql_buffer_result", "high_priority") {
				edit(i, i, "")
			} else {
				edit(i, i, "JOIN")
			}
		case "use", "force", "ignore":
			if end := indexHintEnd(toks, i); end > 0 {
				edit(i, end, "") // an index hint: the optimizer's choice, the same rows
			}
		case "collate": // x COLLATE utf8mb4_bin: DuckDB's comparison by case; a _ci collation, NOCASE
			if name := nextSignificant(toks, i+1); name < len(toks) && toks[name].Kind == sqltok.Word {
				switch n := strings.ToLower(toks[name].Text); {
				case binaryName(n): // mysqlbinary.go
					edit(i, name, "COLLATE C")
					if prev := prevSignificant(toks, i); prev >= 0 {
						bytewiseNeighbours(toks, operandBefore(toks, prev), name, edit)
					}
				case strings.HasSuffix(n, "_ci"):
					edit(i, name, "COLLATE NOCASE")
				}
			}
		case "datetime": // CAST(x AS DATETIME[(n)]), CONVERT(x, DATETIME): MySQL's fractional digits
			if prev := prevSignificant(toks, i); prev >= 0 && (toks[prev].IsWord("as") || toks[prev].Text == ",") {
				typ, end := datetimeType(toks, i)
				edit(i, end, typ)
			}
		case "interval": // x + INTERVAL n unit: DATE_ADD(x, INTERVAL n unit), MySQL's type of it
			intervalEdits(toks, i, edit, insert)
		case "binary": // BINARY x: x by bytes (mysqlbinary.go)
			binaryOperator(toks, i, edit)
		case "alter":
			if i == nextSignificant(toks, 0) {
				alterUniqueEdit(toks, i, edit)
			}
		case "drop": // DROP INDEX i ON t: DuckDB's index names are its schema's, it takes none
			if index := nextSignificant(toks, i+1); i == nextSignificant(toks, 0) && index < len(toks) && toks[index].IsWord("index") {
				name := nextSignificant(toks, index+1)
				on := nextSignificant(toks, name+1)
				if on < len(toks) && toks[on].IsWord("on") {
					end := on
					for j := on + 1; j < len(toks); j++ {
						if toks[j].Significant() && toks[j].Text != ";" {
							end = j
						}
					}
					edit(on, end, "")
				}
			}
		}
	}
	return edits
}

// mysqlDateParts are MySQL's functions of a date that DuckDB has, or answers otherwise, with
// their DuckDB expression of a DATE or TIMESTAMP d: each is a macro qf_mysql_<name> of a
// DATE, a TIMESTAMP, or text, which MySQL reads as a date (DuckDB could not choose between its
// overloads for a string), NULL when it is none; a number MySQL's INT (DuckDB's BIGINT).
// DAYOFWEEK counts from 1, Sunday, and WEEKDAY from 0, Monday (DuckDB's both from 0, Sunday);
// WEEK(d) is MySQL's default mode 0, the weeks from the first Sunday (DuckDB's is ISO's).
var mysqlDateParts = map[string]string{
	"year": "year({d})", "month": "month({d})", "day": "day({d})", "dayofmonth": "day({d})", "dayofyear": "dayofyear({d})",
	"quarter": "quarter({d})", "dayofweek": "dayofweek({d}) + 1", "weekday": "isodow({d}) - 1",
	"week": "strftime({d}, '%U')", "dayname": "dayname({d})", "monthname": "monthname({d})", "last_day": "last_day({d})",
}

// mysqlTimeParts are MySQL's functions of a time of day, as mysqlDateParts; their text may be a
// time alone ('10:11:12').
var mysqlTimeParts = map[string]string{"hour": "hour({d})", "minute": "minute({d})", "second": "second({d})", "time": "{d}"}

// mysqlWeekModes are the WEEK(d, mode) modes answered, each with its macro: 0 (WEEK(d)'s), 3
// (ISO's weeks) and 5 (the weeks from the first Monday).
var mysqlWeekModes = map[string]string{"0": "qf_mysql_week", "3": "qf_mysql_week_iso", "5": "qf_mysql_week_monday"}

// mysqlFunctionSQL creates the macros mysqlFunctionEdits calls, in the catalog named {c}.
var mysqlFunctionSQL = func() []string {
	var out []string
	macro := func(name, d, of string) {
		cast := func(x string) string {
			if name == "dayname" || name == "monthname" || name == "last_day" || name == "time" {
				return x
			}
			return "CAST(" + x + " AS INTEGER)"
		}
		out = append(out, "CREATE MACRO {c}.main.qf_mysql_"+name+" (x VARCHAR) AS "+cast(strings.ReplaceAll(d, "{d}", of))+
			", (x) AS "+cast(strings.ReplaceAll(d, "{d}", "x")))
	}
	for name, d := range mysqlDateParts {
		macro(name, d, "try_cast(x AS TIMESTAMP)")
	}
	for name, d := range mysqlTimeParts {
		macro(name, d, "coalesce(CAST(try_cast(x AS TIMESTAMP) AS TIME), try_cast(x AS TIME))")
	}
	return append(out,
		`CREATE MACRO {c}.main.qf_mysql_week_iso (x VARCHAR) AS CAST(week(try_cast(x AS TIMESTAMP)) AS INTEGER), (x) AS CAST(week(x) AS INTEGER)`,
		`CREATE MACRO {c}.main.qf_mysql_week_monday (x VARCHAR) AS CAST(strftime(try_cast(x AS TIMESTAMP), '%W') AS INTEGER),
			(x) AS CAST(strftime(x, '%W') AS INTEGER)`,
		`CREATE MACRO {c}.main.qf_mysql_date_format (x VARCHAR, f) AS strftime(try_cast(x AS TIMESTAMP), f), (x, f) AS strftime(x, f)`,
		// FIELD(s, list): s's place in the list, 0 when it is not there or NULL; ELT(n, list):
		// the list's nth, NULL past its ends (listEdits writes the list).
		// Strings compare without regard to case, as MySQL's default collations compare them.
		`CREATE MACRO {c}.main.qf_mysql_field (s VARCHAR, l VARCHAR[]) AS CAST(CASE WHEN s IS NULL THEN 0
			ELSE coalesce(list_position(list_transform(l, e -> lower(e)), lower(s)), 0) END AS INTEGER),
			(s, l) AS CAST(CASE WHEN s IS NULL THEN 0 ELSE coalesce(list_position(l, s), 0) END AS INTEGER)`,
		`CREATE MACRO {c}.main.qf_mysql_elt(n, l) AS CASE WHEN n >= 1 THEN l[n] END`,
		// CONVERT_TZ(dt, from, to): dt read in the zone from, written in the zone to; a zone is
		// named (Europe/Paris, UTC: ICU's) or an offset ('+02:00', which ICU does not name).
		// A DATETIME keeps its digits; text is a DATETIME.
		`CREATE MACRO {c}.main.qf_mysql_tz_minutes(z) AS CASE WHEN regexp_full_match(z, '[+-][0-9]{1,2}:[0-9]{2}')
			THEN (CASE WHEN z[1] = '-' THEN -1 ELSE 1 END) * (CAST(split_part(substr(z, 2), ':', 1) AS INTEGER) * 60 +
			CAST(split_part(z, ':', 2) AS INTEGER)) END`,
		`CREATE MACRO {c}.main.qf_mysql_convert_tz(x, f, t) AS CASE WHEN {c}.main.qf_mysql_tz_minutes(t) IS NOT NULL
			THEN CASE WHEN {c}.main.qf_mysql_tz_minutes(f) IS NOT NULL THEN x - to_minutes({c}.main.qf_mysql_tz_minutes(f)) ELSE timezone('UTC', timezone(f, x)) END
				+ to_minutes({c}.main.qf_mysql_tz_minutes(t))
			ELSE timezone(t, CASE WHEN {c}.main.qf_mysql_tz_minutes(f) IS NOT NULL THEN timezone('UTC', x - to_minutes({c}.main.qf_mysql_tz_minutes(f))) ELSE timezone(f, x) END) END`,
		`CREATE MACRO {c}.main.convert_tz (x TIMESTAMP_S, f, t) AS CAST({c}.main.qf_mysql_convert_tz(CAST(x AS TIMESTAMP), f, t) AS TIMESTAMP_S),
			(x TIMESTAMP_MS, f, t) AS CAST({c}.main.qf_mysql_convert_tz(CAST(x AS TIMESTAMP), f, t) AS TIMESTAMP_MS),
			(x VARCHAR, f, t) AS CAST({c}.main.qf_mysql_convert_tz(CAST(x AS TIMESTAMP), f, t) AS TIMESTAMP_S),
			(x, f, t) AS {c}.main.qf_mysql_convert_tz(CAST(x AS TIMESTAMP), f, t)`,
		// INSERT(s, pos, len, new): s with len characters from pos replaced by new (the rest
		// for a negative len), s itself for a pos outside it.
		`CREATE MACRO {c}.main.qf_mysql_insert(s, p, n, r) AS CASE WHEN p < 1 OR p > length(s) THEN s
			ELSE substr(s, 1, p - 1) || r || CASE WHEN n < 0 THEN '' ELSE substr(s, p + n) END END`,
		// CONV(n, from, to): n's text read in base from (up to its first other character, at
		// most 2^64-1) written in base to, a negative n as its 64-bit two's complement unless
		// to is negative; NULL for a base outside 2..36. OCT(n) is CONV(n, 10, 8).
		`CREATE MACRO {c}.main.qf_mysql_conv_digits(s) AS list_transform(string_split(s, ''), c -> instr('`+convDigits+`', c) - 1)`,
		`CREATE MACRO {c}.main.qf_mysql_conv_value(ds, f) AS list_reduce([0::HUGEINT] ||
			ds[1:coalesce(list_position(list_transform(ds, d -> d < 0 OR d >= f), true), len(ds) + 1) - 1],
			(a, d) -> least(a * f + d, 18446744073709551615))`,
		`CREATE MACRO {c}.main.qf_mysql_conv_text(u, t) AS CASE WHEN u < t THEN substr('`+convDigits+`', u::INTEGER + 1, 1)
			ELSE to_base((u // t)::BIGINT, t) || substr('`+convDigits+`', (u % t)::INTEGER + 1, 1) END`,
		`CREATE MACRO {c}.main.qf_mysql_conv_signed(neg, v, t) AS CASE
			WHEN t < 0 THEN CASE WHEN neg AND v > 0 THEN '-' ELSE '' END || {c}.main.qf_mysql_conv_text(v, -t)
			WHEN neg AND v > 0 THEN {c}.main.qf_mysql_conv_text(18446744073709551616 - v, t)
			ELSE {c}.main.qf_mysql_conv_text(v, t) END`,
		`CREATE MACRO {c}.main.conv(n, f, t) AS CASE WHEN abs(f) BETWEEN 2 AND 36 AND abs(t) BETWEEN 2 AND 36 AND trim(CAST(n AS VARCHAR)) <> '' THEN
			{c}.main.qf_mysql_conv_signed(starts_with(trim(CAST(n AS VARCHAR)), '-'),
				{c}.main.qf_mysql_conv_value({c}.main.qf_mysql_conv_digits(upper(ltrim(trim(CAST(n AS VARCHAR)), '-'))), abs(f)), t) END`,
		`CREATE MACRO {c}.main.oct(n) AS {c}.main.conv(n, 10, 8)`,
		// FROM_UNIXTIME(n): whole seconds a DATETIME without a fraction, as MySQL's.
		`CREATE MACRO {c}.main.qf_mysql_from_unixtime (x INTEGER) AS CAST(timezone('UTC', to_timestamp(x)) AS TIMESTAMP_S),
			(x BIGINT) AS CAST(timezone('UTC', to_timestamp(x)) AS TIMESTAMP_S), (x) AS timezone('UTC', to_timestamp(x))`,
		`CREATE MACRO {c}.main.qf_mysql_from_unixtime_format(x, f) AS strftime(timezone('UTC', to_timestamp(x)), f)`,
		`CREATE MACRO {c}.main.found_rows() AS CAST(getvariable('qf_found_rows') AS BIGINT)`, // foundrows.go
		// HEX and BIN of a number are CONV's, HEX's rounded to an integer first; HEX of text or
		// bytes is DuckDB's (the bytes' digits).
		`CREATE MACRO {c}.main.qf_mysql_hex (x VARCHAR) AS hex(x), (x BLOB) AS hex(x), (x) AS {c}.main.conv(round(x), 10, 16)`,
		`CREATE MACRO {c}.main.qf_mysql_bin(x) AS {c}.main.conv(x, 10, 2)`,
		`CREATE MACRO {c}.main.qf_mysql_char_length (x BLOB) AS CAST(octet_length(x) AS INTEGER), (x) AS CAST(length(CAST(x AS VARCHAR)) AS INTEGER)`,
	)
}()

// convDigits are CONV's digits, 0 to Z.
const convDigits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// typePosition reports whether the word at toks[i] (YEAR and TIME are types too) stands where
// a type does, after a column's name or CAST's AS, or is a qualified name.
func typePosition(toks []sqltok.Token, i int) bool {
	prev := prevSignificant(toks, i)
	if prev < 0 {
		return false
	}
	p := toks[prev]
	return p.Text == "." || p.Kind == sqltok.QuotedIdent ||
		p.Kind == sqltok.Word && !p.IsWord("select", "distinct", "all", "where", "and", "or", "not", "on", "by", "set",
			"when", "then", "else", "having", "case", "between", "return")
}

// listEdits writes FIELD(s, a, b, ...) and ELT(n, a, b, ...) at toks[i] as qf_mysql_field(s,
// [a, b, ...]) and qf_mysql_elt(n, [a, b, ...]): DuckDB's macros take no variable arguments.
func listEdits(toks []sqltok.Token, i int, edit func(from, to int, text string)) {
	args := callArgs(toks, i)
	if len(args) < 2 {
		return
	}
	for _, a := range args {
		if a[0] < 0 {
			return
		}
	}
	edit(i, i, "qf_mysql_"+strings.ToLower(toks[i].Text))
	comma := nextSignificant(toks, args[0][1]+1)
	edit(comma, comma, ", [")
	closing := nextSignificant(toks, args[len(args)-1][1]+1)
	edit(closing, closing, "])")
}

// nowEdits writes NOW(), CURRENT_TIMESTAMP[()], LOCALTIMESTAMP[()], LOCALTIME[()], SYSDATE()
// and UTC_TIMESTAMP() at toks[i] as MySQL's DATETIME: the time in UTC (the session time zone
// the frontend reports), whole seconds (DuckDB's are a TIMESTAMP WITH TIME ZONE with
// microseconds), or the fractional digits of a literal argument (NOW(3)).
func nowEdits(toks []sqltok.Token, i int, edit func(from, to int, text string)) {
	now := mysqlNow
	name := strings.ToLower(toks[i].Text)
	if name == "sysdate" {
		now = mysqlSysdate // the call's time, not the statement's (mysqlnowpin.go)
	}
	if end := noArgCall(toks, i); end >= 0 {
		edit(i, end, "CAST(date_trunc('second', "+now+") AS TIMESTAMP_S)")
		return
	}
	if args := callArgs(toks, i); len(args) == 1 && args[0][0] == args[0][1] && toks[args[0][0]].Kind == sqltok.Number {
		n, _ := strconv.Atoi(toks[args[0][0]].Text)
		typ := fractionType(n)
		unit := map[string]string{"TIMESTAMP_S": "second", "TIMESTAMP_MS": "millisecond", "TIMESTAMP": "microsecond"}[typ]
		edit(i, nextSignificant(toks, args[0][0]+1), "CAST(date_trunc('"+unit+"', "+now+") AS "+typ+")")
		return
	}
	if open := nextSignificant(toks, i+1); name != "now" && name != "sysdate" && name != "utc_timestamp" &&
		(open >= len(toks) || toks[open].Text != "(") && !typePosition(toks, i) {
		edit(i, i, "CAST(date_trunc('second', "+now+") AS TIMESTAMP_S)") // the keyword alone
	}
}

// datetimeType is DuckDB's type of MySQL's DATETIME[(n)] at toks[i], and the index of its last
// token: whole seconds (TIMESTAMP_S) without digits, milliseconds for up to 3, microseconds.
func datetimeType(toks []sqltok.Token, i int) (string, int) {
	open := nextSignificant(toks, i+1)
	digits := nextSignificant(toks, open+1)
	closing := nextSignificant(toks, digits+1)
	if closing >= len(toks) || toks[open].Text != "(" || toks[closing].Text != ")" || toks[digits].Kind != sqltok.Number {
		return "TIMESTAMP_S", i
	}
	n, _ := strconv.Atoi(toks[digits].Text)
	return fractionType(n), closing
}

// fractionType is DuckDB's timestamp type for n fractional digits of a second.
func fractionType(n int) string {
	switch {
	case n == 0:
		return "TIMESTAMP_S"
	case n <= 3:
		return "TIMESTAMP_MS"
	}
	return "TIMESTAMP"
}

// alterUniqueEdit writes ALTER TABLE t ADD [CONSTRAINT [c]] UNIQUE [KEY | INDEX] [i] (cols)
// at toks[i] (Django's unique=True and unique_together) as CREATE UNIQUE INDEX c ON t (cols),
// which DuckDB has (its ALTER TABLE adds no constraint: 1235); the index is named c, else i,
// else <table>_<first column>_key. Other forms are left to DuckDB.
func alterUniqueEdit(toks []sqltok.Token, i int, edit func(from, to int, text string)) {
	var sig []int // the statement's significant tokens, a final ; left out
	for j := i; j < len(toks); j++ {
		if toks[j].Significant() && toks[j].Text != ";" {
			sig = append(sig, j)
		}
	}
	at := 0
	word := func(w ...string) bool {
		if at < len(sig) && toks[sig[at]].IsWord(w...) {
			at++
			return true
		}
		return false
	}
	isName := func(k int) bool {
		return k < len(sig) && (toks[sig[k]].Kind == sqltok.Word || toks[sig[k]].Kind == sqltok.QuotedIdent && !toks[sig[k]].Unterminated)
	}
	name := func() string { at++; return quoteIdent(identText(toks[sig[at-1]])) }
	if !word("alter") || !word("table") || !isName(at) {
		return
	}
	last := sig[at] // the table's own name, after its database's
	table := name()
	if at+1 < len(sig) && toks[sig[at]].Text == "." && isName(at+1) {
		at, last = at+1, sig[at+1]
		table += "." + name()
	}
	index := ""
	if !word("add") {
		return
	}
	if word("constraint") && isName(at) && !toks[sig[at]].IsWord("unique") {
		index = name()
	}
	if !word("unique") {
		return
	}
	word("key", "index")
	if isName(at) && toks[sig[at]].Text != "(" && index == "" {
		index = name()
	}
	if at >= len(sig) || toks[sig[at]].Text != "(" {
		return
	}
	var cols []string
	for at++; at < len(sig) && toks[sig[at]].Text != ")"; at++ {
		switch {
		case toks[sig[at]].Text == ",":
		case isName(at):
			cols = append(cols, quoteIdent(identText(toks[sig[at]])))
		default:
			return // a prefix length, an expression: DuckDB's to read
		}
	}
	if at != len(sig)-1 || len(cols) == 0 {
		return
	}
	if index == "" {
		index = quoteIdent(identText(toks[last]) + "_" + strings.Trim(cols[0], `"`) + "_key")
	}
	edit(i, sig[at], "CREATE UNIQUE INDEX "+index+" ON "+table+" ("+strings.Join(cols, ", ")+")")
}

// intervalEdits writes x + INTERVAL n unit and x - INTERVAL n unit (the INTERVAL at toks[i];
// x a name, a string or a call) as DATE_ADD and DATE_SUB are written: MySQL's DATETIME keeps its
// digits (2024-03-05 10:11:12; DuckDB's TIMESTAMP_S + INTERVAL is a TIMESTAMP, six digits), a
// DATE stays a DATE for whole days, text stays text. Other forms are left to DuckDB.
func intervalEdits(toks []sqltok.Token, i int, edit func(from, to int, text string), insert func(at int, text string)) {
	op := prevSignificant(toks, i)
	if op < 1 || toks[op].Text != "+" && toks[op].Text != "-" {
		return
	}
	n := nextSignificant(toks, i+1)
	if n < len(toks) && toks[n].Text == "-" {
		n = nextSignificant(toks, n+1)
	}
	unit := nextSignificant(toks, n+1)
	if unit >= len(toks) || toks[unit].Kind != sqltok.Word || !(toks[n].Kind == sqltok.Number || toks[n].Kind == sqltok.String) {
		return
	}
	start, end := -1, prevSignificant(toks, op)
	switch {
	case toks[end].Text == ")":
		depth := 0
		for k := end; k >= 0; k-- {
			if toks[k].Text == ")" {
				depth++
			} else if toks[k].Text == "(" {
				if depth--; depth == 0 {
					start = k
					break
				}
			}
		}
		if name := prevSignificant(toks, start); start > 0 && name >= 0 && toks[name].Kind == sqltok.Word && operandStart(toks[name]) &&
			!toks[name].IsWord("select", "on", "by", "set", "when", "then", "else", "not", "in", "interval", "is", "like", "between", "having") {
			start = name
		}
	default:
		if _, e := plainOperand(toks, operandBefore(toks, end)); e == end {
			start = operandBefore(toks, end)
		}
	}
	if start < 0 {
		return
	}
	kind, call := "time", "qf_mysql_date_add_"
	switch strings.ToLower(toks[unit].Text) {
	case "day", "week", "month", "quarter", "year":
		kind = "days"
	}
	if toks[op].Text == "-" {
		call = "qf_mysql_date_sub_"
	}
	insert(start, call+kind+"(")
	edit(op, op, ",")
	edit(unit, unit, toks[unit].Text+")")
}

// timestampUnits are TIMESTAMPDIFF's units, as DuckDB's date_sub names them.
var timestampUnits = map[string]string{"microsecond": "microseconds", "second": "second", "minute": "minute", "hour": "hour",
	"day": "day", "week": "week", "month": "month", "quarter": "quarter", "year": "year"}

// operandEnd and operandStart report whether t may end or start an operand of an infix operator.
func operandEnd(t sqltok.Token) bool {
	return t.Text == ")" || t.Kind == sqltok.Number || t.Kind == sqltok.QuotedIdent || t.Kind == sqltok.Param ||
		t.Kind == sqltok.Word && !t.IsWord("select", "where", "and", "or", "not", "on", "by", "set", "when", "then", "else")
}

func operandStart(t sqltok.Token) bool {
	return t.Text == "(" || t.Text == "-" || t.Kind == sqltok.Number || t.Kind == sqltok.QuotedIdent || t.Kind == sqltok.Param ||
		t.Kind == sqltok.Word && !t.IsWord("from", "where", "and", "or", "group", "order", "limit")
}

// regexpEdit writes name [NOT] REGEXP [BINARY] 'pattern' (the operator at toks[i]; name a
// column, t.col, or a string; the pattern a string or a parameter) as [NOT]
// regexp_matches(name, 'pattern', 'i'), without the 'i' for BINARY (by case: Django's regex);
// other forms are left as written.
func regexpEdit(toks []sqltok.Token, i int, edit func(from, to int, text string)) {
	not := ""
	left := prevSignificant(toks, i)
	if left >= 0 && toks[left].IsWord("not") {
		not, left = "NOT ", prevSignificant(toks, left)
	}
	pat, options := nextSignificant(toks, i+1), ", 'i'"
	if pat < len(toks) && toks[pat].IsWord("binary") {
		pat, options = nextSignificant(toks, pat+1), ""
	}
	if left < 0 || pat >= len(toks) {
		return
	}
	operand := func(k int) (string, bool) {
		t := toks[k]
		switch {
		case t.Kind == sqltok.Param:
			return t.Text, true
		case t.Kind == sqltok.String:
			v, ok := mysqlString(toks, k)
			return duckString(v), ok
		case t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated:
			return quoteIdent(identText(t)), true
		case t.Kind == sqltok.Word:
			return t.Text, true
		}
		return "", false
	}
	start := left
	l, ok := operand(left)
	if !ok {
		return
	}
	if dot := prevSignificant(toks, left); dot >= 0 && toks[dot].Text == "." {
		q := prevSignificant(toks, dot)
		ql, ok := operand(q)
		if q < 0 || !ok || toks[q].Kind == sqltok.String {
			return
		}
		start, l = q, ql+"."+l
	}
	if toks[pat].Kind != sqltok.String && toks[pat].Kind != sqltok.Param {
		return
	}
	p, ok := operand(pat)
	if !ok {
		return
	}
	edit(start, pat, not+"regexp_matches("+l+", "+p+options+")")
}

// strptimeSpecifiers are STR_TO_DATE's specifiers that strptime reads otherwise.
var strptimeSpecifiers = map[byte]string{
	'i': "%M", 's': "%S", 'M': "%B", 'W': "%A", 'e': "%d", 'c': "%m", 'k': "%H", 'l': "%I",
	'h': "%I", 'T': "%H:%M:%S", 'r': "%I:%M:%S %p",
}

// strptimeFormat is MySQL's STR_TO_DATE format as strptime's, and whether it reads a time.
func strptimeFormat(f string) (string, bool) {
	var b strings.Builder
	timed := false
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		if strings.IndexByte("HhIiklSsTrfp", f[i]) >= 0 {
			timed = true
		}
		if s, ok := strptimeSpecifiers[f[i]]; ok {
			b.WriteString(s)
		} else {
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String(), timed
}

// separatorEdits moves the SEPARATOR 's' of the GROUP_CONCAT call at toks[i] to DuckDB's
// second argument, before the call's ORDER BY if it has one.
func separatorEdits(toks []sqltok.Token, i int, edit func(from, to int, text string)) {
	open := nextSignificant(toks, i+1)
	if open >= len(toks) || toks[open].Text != "(" {
		return
	}
	order, separator, depth := -1, -1, 0
	for j := open; j < len(toks); j++ {
		switch {
		case toks[j].Text == "(":
			depth++
		case toks[j].Text == ")":
			depth--
		case depth == 1 && toks[j].IsWord("order") && order < 0:
			order = j
		case depth == 1 && toks[j].IsWord("separator"):
			separator = j
		}
		if depth == 0 {
			break
		}
	}
	if separator < 0 {
		return
	}
	lit := nextSignificant(toks, separator+1)
	v, ok := mysqlString(toks, lit)
	if !ok {
		return
	}
	sep := ", " + duckString(v)
	if order > 0 && order < separator {
		edit(order, order, sep+" "+toks[order].Text)
		edit(separator, lit, "")
		return
	}
	edit(separator, lit, sep)
}

// callArgs are the top-level arguments of the call at toks[i] (its name), each as the index of
// its first and last significant token; nil when toks[i] is not called.
func callArgs(toks []sqltok.Token, i int) [][2]int {
	open := nextSignificant(toks, i+1)
	if open >= len(toks) || toks[open].Text != "(" {
		return nil
	}
	var args [][2]int
	start, last, depth := -1, -1, 0
	for j := open; j < len(toks); j++ {
		t := toks[j]
		if !t.Significant() {
			continue
		}
		switch {
		case t.Text == "(" && j != open:
			depth++
		case t.Text == ")" && depth == 0:
			if start >= 0 {
				args = append(args, [2]int{start, last})
			}
			return args
		case t.Text == ")":
			depth--
		case t.Text == "," && depth == 0:
			args = append(args, [2]int{start, last})
			start = -1
			continue
		}
		if j != open {
			if start < 0 {
				start = j
			}
			last = j
		}
	}
	return nil
}

// strftimeSpecifiers are DATE_FORMAT's specifiers that strftime writes otherwise; the others
// (%Y, %m, %d, %H, %S, %p, %j, %y, %b, %a, %f, %%) are the same.
var strftimeSpecifiers = map[byte]string{
	'i': "%M", 's': "%S", 'M': "%B", 'W': "%A", 'e': "%-d", 'c': "%-m", 'k': "%-H", 'l': "%-I",
	'h': "%I", 'T': "%H:%M:%S", 'r': "%I:%M:%S %p",
}

// strftimeFormat is MySQL's DATE_FORMAT format as strftime's.
func strftimeFormat(f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		if s, ok := strftimeSpecifiers[f[i]]; ok {
			b.WriteString(s)
		} else {
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

// mysqlString is the value of the MySQL string literal at toks[i] ('...' or "...").
func mysqlString(toks []sqltok.Token, i int) (string, bool) {
	if i >= len(toks) {
		return "", false
	}
	t := toks[i]
	if t.Kind != sqltok.String || t.Unterminated || len(t.Text) < 2 || t.Text[0] != '\'' && t.Text[0] != '"' || t.Text[len(t.Text)-1] != t.Text[0] {
		return "", false
	}
	return sqltok.MySQLStringValue(t.Text), true
}

// concatEdits writes CONCAT(a, b, ...) as ((a) || (b) || ...), MySQL's NULL when any argument
// is: only the name, the commas and the closing parenthesis are edited, so the arguments' own
// edits (and literals) stay theirs.
func concatEdits(toks []sqltok.Token, i int, edit func(from, to int, text string)) {
	args := callArgs(toks, i)
	if len(args) < 2 {
		return
	}
	for _, a := range args {
		if a[0] < 0 {
			return // an empty argument: MySQL's syntax error, left to DuckDB
		}
	}
	edit(i, nextSignificant(toks, i+1), "((")
	for _, a := range args[:len(args)-1] {
		comma := nextSignificant(toks, a[1]+1)
		edit(comma, comma, ") || (")
	}
	closing := nextSignificant(toks, args[len(args)-1][1]+1)
	edit(closing, closing, "))")
}

// indexHintEnd is the index of the last token of the index hint {USE | FORCE | IGNORE} {INDEX |
// KEY} [FOR {JOIN | ORDER BY | GROUP BY}] (names) at toks[i], 0 when there is none.
func indexHintEnd(toks []sqltok.Token, i int) int {
	j := nextSignificant(toks, i+1)
	if j >= len(toks) || !toks[j].IsWord("index", "key") {
		return 0
	}
	j = nextSignificant(toks, j+1)
	if j < len(toks) && toks[j].IsWord("for") {
		j = nextSignificant(toks, j+1)
		if j < len(toks) && toks[j].IsWord("order", "group") {
			j = nextSignificant(toks, j+1) // BY
		}
		j = nextSignificant(toks, j+1)
	}
	if j >= len(toks) || toks[j].Text != "(" {
		return 0
	}
	for depth := 0; j < len(toks); j++ {
		switch toks[j].Text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return 0
}
