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
		}
	}
	return edits
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
