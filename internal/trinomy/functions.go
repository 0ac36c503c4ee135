package trinomy

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinopg"
)

// Trino's functions MariaDB lacks or names otherwise, each written as MariaDB's expression of
// the same value and type: strpos as LOCATE (a bigint), regexp_like as REGEXP (the Trino
// frontend announces it boolean: trinodecl), to_unixtime as UNIX_TIMESTAMP (a double),
// approx_distinct as an exact COUNT(DISTINCT) (Trino's estimate is within its standard error
// of it), json_extract_scalar as JSON_EXTRACT unquoted (NULL for an object, an array or a JSON
// null, as Trino's). A call with another number of arguments goes as written: MariaDB's error
// names the function.

// callForm writes a call's MariaDB expression from its arguments' MariaDB text.
type callForm struct {
	args  int
	write func(a []string) string
}

var callForms = map[string]callForm{
	"strpos":          {2, func(a []string) string { return "CAST(LOCATE(" + a[1] + ", " + a[0] + ") AS SIGNED)" }},
	"regexp_like":     {2, func(a []string) string { return "(" + a[0] + " REGEXP " + a[1] + ")" }},
	"to_unixtime":     {1, func(a []string) string { return "CAST(UNIX_TIMESTAMP(" + a[0] + ") AS DOUBLE)" }},
	"approx_distinct": {1, func(a []string) string { return "COUNT(DISTINCT " + a[0] + ")" }},
	"json_extract_scalar": {2, func(a []string) string {
		v := "JSON_EXTRACT(" + a[0] + ", " + a[1] + ")"
		return "CASE WHEN JSON_TYPE(" + v + ") IN ('OBJECT', 'ARRAY', 'NULL') THEN NULL ELSE JSON_UNQUOTE(" + v + ") END"
	}},
	"date_trunc":      {2, dateTrunc},
	"format_datetime": {2, formatDatetime},
	"try_cast":        {1, nil}, // tryCast: its argument is x AS type
}

// dateTrunc is Trino's date_trunc(unit, x) of a literal unit: x less its parts below the unit, of
// x's type (intervals of days keep a DATE a DATE, of seconds with x's fraction keep a
// DATETIME(p)'s precision); a date as written (a date literal, current_date, a cast to date)
// loses no time of day. "" (as written: MariaDB's error) for another unit.
func dateTrunc(a []string) string {
	unit, ok := literalText(a[0])
	x := "(" + a[1] + ")"
	day := "TIME_TO_SEC(" + x + ")" // the time of day's seconds, with x's fraction
	var days, seconds string
	switch strings.ToLower(unit) {
	case "second":
		seconds = day + " - FLOOR(" + day + ")"
	case "minute":
		seconds = day + " - HOUR(" + x + ") * 3600 - MINUTE(" + x + ") * 60"
	case "hour":
		seconds = day + " - HOUR(" + x + ") * 3600"
	case "day":
	case "week":
		days = "WEEKDAY(" + x + ") DAY" // Trino's weeks start on Monday
	case "month":
		days = "(DAYOFMONTH(" + x + ") - 1) DAY"
	case "quarter":
		days = "(DAYOFMONTH(" + x + ") - 1) DAY - INTERVAL ((MONTH(" + x + ") - 1) % 3) MONTH"
	case "year":
		days = "(DAYOFYEAR(" + x + ") - 1) DAY"
	default:
		return ""
	}
	if !ok {
		return ""
	}
	out := x
	if days != "" {
		out += " - INTERVAL " + days
	}
	if seconds == "" && !isDateText(a[1]) {
		seconds = day
	}
	if seconds != "" {
		out += " - INTERVAL (" + seconds + ") SECOND"
	}
	return "(" + out + ")"
}

// literalText is the text of a string literal s ('...'), ok false for anything else.
func literalText(s string) (string, bool) {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' || strings.Contains(s[1:len(s)-1], "'") {
		return "", false
	}
	return s[1 : len(s)-1], true
}

// isDateText reports whether x is a date as written: a date literal, current_date, a cast to date.
func isDateText(x string) bool {
	l := strings.ToLower(strings.TrimSpace(x))
	return strings.HasPrefix(l, "date '") || l == "current_date" || l == "current_date()" ||
		(strings.HasPrefix(l, "cast(") || strings.HasPrefix(l, "try_cast(")) && strings.HasSuffix(strings.TrimSuffix(l, ")"), " as date")
}

// formatDatetime is Trino's format_datetime(x, pattern) of a literal Joda pattern as MariaDB's
// DATE_FORMAT (fractions of a second from its microseconds); "" (as written: MariaDB's error
// naming the function) for a pattern letter it has no specifier for.
func formatDatetime(a []string) string {
	quoted := a[1]
	if len(quoted) < 2 || quoted[0] != '\'' || quoted[len(quoted)-1] != '\'' ||
		strings.Contains(strings.ReplaceAll(quoted[1:len(quoted)-1], "''", ""), "'") {
		return ""
	}
	// the pattern as the client wrote it (lexical doubled its backslashes for MariaDB)
	pattern := strings.ReplaceAll(strings.ReplaceAll(quoted[1:len(quoted)-1], "''", "'"), `\\`, `\`)
	fields, ok := trinopg.JodaFields(pattern)
	if !ok {
		return ""
	}
	x := "(" + a[0] + ")"
	var parts []string
	var f strings.Builder // the DATE_FORMAT specifiers so far
	flush := func() {
		if f.Len() > 0 {
			parts = append(parts, "DATE_FORMAT("+x+", "+mariaString(f.String())+")")
			f.Reset()
		}
	}
	for _, field := range fields {
		switch {
		case field.Letter == 0:
			f.WriteString(strings.ReplaceAll(field.Literal, "%", "%%"))
		case field.Letter == 'S': // a fraction's first digits
			flush()
			parts = append(parts, "LEFT(DATE_FORMAT("+x+", '%f'), "+strconv.Itoa(min(field.Count, 6))+")")
		default:
			spec, ok := jodaSpecifier(field.Letter, field.Count)
			if !ok {
				return ""
			}
			f.WriteString(spec)
		}
	}
	flush()
	switch len(parts) {
	case 0:
		return "''"
	case 1:
		return parts[0]
	}
	return "CONCAT(" + strings.Join(parts, ", ") + ")"
}

// jodaSpecifier is MariaDB's DATE_FORMAT specifier of a Joda pattern letter repeated n times.
func jodaSpecifier(c byte, n int) (string, bool) {
	switch c {
	case 'y', 'Y', 'x':
		if n == 2 {
			return "%y", true
		}
		return "%Y", true
	case 'M':
		return [...]string{"", "%c", "%m", "%b", "%M"}[min(n, 4)], true
	case 'd':
		return [...]string{"", "%e", "%d"}[min(n, 2)], true
	case 'H':
		return [...]string{"", "%k", "%H"}[min(n, 2)], true
	case 'h':
		return [...]string{"", "%l", "%h"}[min(n, 2)], true
	case 'm':
		if n == 1 {
			return "", false // MariaDB's minutes are two digits only
		}
		return "%i", true
	case 's':
		if n == 1 {
			return "", false
		}
		return "%s", true
	case 'a':
		return "%p", true
	case 'E':
		if n >= 4 {
			return "%W", true
		}
		return "%a", true
	case 'D':
		if n == 3 {
			return "%j", true
		}
	}
	return "", false
}

// isCallForm reports whether name is one of callForms' functions.
func isCallForm(name string) bool {
	_, ok := callForms[strings.ToLower(name)]
	return ok
}

// callsFunction reports whether toks[i] names one of callForms' functions in a call.
func callsFunction(toks []sqltok.Token, i int) bool {
	if toks[i].Kind != sqltok.Word || i+1 == len(toks) || toks[i+1].Text != "(" || i > 0 && toks[i-1].Text == "." {
		return false
	}
	_, ok := callForms[strings.ToLower(toks[i].Text)]
	return ok
}

// calls writes each call of one of callForms' functions in toks as MariaDB's expression, the
// innermost first so that an outer call's arguments hold the inner's translation.
func calls(toks []sqltok.Token, text, pre, post, gaps []string) {
	for i := len(toks) - 2; i >= 0; i-- {
		if !callsFunction(toks, i) {
			continue
		}
		end := closing(toks, i+1, "(", ")") - 1 // the closing parenthesis
		if end < 0 {
			continue
		}
		if end == i+2 {
			continue // no argument: MariaDB's error as written
		}
		var out string
		if toks[i].IsWord("try_cast") {
			out = tryCast(toks, i+2, end, text, pre, post, gaps)
		} else {
			var args []string
			for _, s := range splitAt(toks, i+2, end) {
				args = append(args, strings.TrimSpace(joined(s[0], s[1], text, pre, post, gaps)))
			}
			if form := callForms[strings.ToLower(toks[i].Text)]; len(args) == form.args {
				out = form.write(args)
			}
		}
		if out == "" {
			continue
		}
		for k := i; k <= end; k++ {
			text[k] = ""
			if k > i {
				pre[k] = ""
			}
			if k < end {
				post[k] = ""
			}
		}
		pre[i] += out
	}
}

// tryCast is Trino's try_cast(x AS type) of toks[lo:hi] (x AS type), for the types whose text
// trinopg's TryCastText reads: NULL where the cast would fail on x's text, the cast of a
// number's text to an integer type rounding (half away from zero, as Trino's cast of a number)
// and NULL outside the type; MariaDB's CAST otherwise. A string literal is read as text only
// (Trino's cast of '1.5' to an integer fails). "" for a type it does not read.
func tryCast(toks []sqltok.Token, lo, hi int, text, pre, post, gaps []string) string {
	as, depth := -1, 0
	for k := lo; k < hi; k++ {
		if depth == 0 && toks[k].IsWord("as") {
			as = k
		}
		depth += sqltok.ParenStep(toks[k])
	}
	if as <= lo || as+1 >= hi {
		return ""
	}
	x := "(" + strings.TrimSpace(joined(lo, as, text, pre, post, gaps)) + ")"
	typ := strings.TrimSpace(joined(as+1, hi, text, pre, post, gaps)) // castTypes wrote it as MariaDB's
	base := strings.ToLower(toks[as+1].Text)
	cast := "CAST(" + x + " AS " + typ + ")"
	re, bounds, ok := trinopg.TryCastText(base)
	if !ok {
		return ""
	}
	valid := "CAST(" + x + " AS CHAR) REGEXP " + mariaString(re)
	if bounds == "" || as == lo+1 && toks[lo].Kind == sqltok.String {
		return "(CASE WHEN " + valid + " THEN " + cast + " END)"
	}
	number := "CAST(" + x + " AS CHAR) REGEXP " + mariaString(trinopg.NumberText)
	rounded := "ROUND(CAST(" + x + " AS DECIMAL(65,30)))"
	return "(CASE WHEN " + valid + " THEN " + cast + " WHEN " + number + " AND " + rounded + " BETWEEN " + bounds +
		" THEN CAST(" + rounded + " AS SIGNED) END)"
}
