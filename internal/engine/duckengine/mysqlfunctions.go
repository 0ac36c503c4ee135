package duckengine

import (
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

// mysqlEdit is text written in place of the tokens from one index to to.
type mysqlEdit struct {
	to   int
	text string
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
		edits[from] = mysqlEdit{to, text}
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
					edit(i, i, "strftime")
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
		case "like":
			edit(i, i, "ILIKE")
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

// regexpEdit writes name [NOT] REGEXP 'pattern' (the operator at toks[i]; name a column,
// t.col, or a string; the pattern a string or a parameter) as [NOT] regexp_matches(name,
// 'pattern', 'i'); other forms are left as written.
func regexpEdit(toks []sqltok.Token, i int, edit func(from, to int, text string)) {
	not := ""
	left := prevSignificant(toks, i)
	if left >= 0 && toks[left].IsWord("not") {
		not, left = "NOT ", prevSignificant(toks, left)
	}
	pat := nextSignificant(toks, i+1)
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
	edit(start, pat, not+"regexp_matches("+l+", "+p+", 'i')")
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
