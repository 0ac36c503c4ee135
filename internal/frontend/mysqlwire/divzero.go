package mysqlwire

import (
	"sort"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Division by zero in a SELECT, as MariaDB answers it under its default sql_mode
// (ERROR_FOR_DIVISION_BY_ZERO): the value is NULL and each division evaluated is a Warning
// 1365 "Division by 0" (the EOF's warning count, SHOW WARNINGS, @@warning_count; mysql2's
// warningStatus and PyMySQL's warning_count read it). PostgreSQL failed the statement (22012),
// DuckDB answered NULL without a warning. The proxy answers the class it can count without
// evaluating anything: a division (/, DIV, %, MOD, MOD(x, 0)) whose divisor is a literal zero
// (0, 0.0, -0, (0), '0'). Each such divisor is sent as NULLIF(0, 0), a NULL of an integer,
// so every engine answers NULL; those in the select list of a plain SELECT (no aggregate, no
// GROUP BY, DISTINCT, UNION or subquery, whose evaluations MariaDB counts otherwise) are a
// warning per row. A divisor that is a column or an expression is the engine's, as before
// (PostgreSQL's 22012 is answered as MariaDB's strict-mode error, 1365 "Division by 0").

// divZeroMessage is MariaDB's text of ER_DIVISION_BY_ZERO.
const divZeroMessage = "Division by 0"

// maxErrorCount is MariaDB's max_error_count: SHOW WARNINGS lists at most that many, while the
// warning count counts them all.
const maxErrorCount = 64

// aggregates are the functions whose argument MariaDB evaluates once per row read, not per row
// answered.
var aggregates = map[string]bool{"count": true, "sum": true, "avg": true, "min": true, "max": true, "group_concat": true,
	"bit_and": true, "bit_or": true, "bit_xor": true, "std": true, "stddev": true, "stddev_pop": true, "stddev_samp": true,
	"variance": true, "var_pop": true, "var_samp": true, "json_arrayagg": true, "json_objectagg": true}

// zeroDivisions rewrites sql's divisions by a literal zero (rewritten "" when there are none or
// sql is not a SELECT) and counts those of a plain SELECT's select list (perRow: warnings per
// row answered; 0 when MariaDB would count them otherwise).
func zeroDivisions(sql string) (rewritten string, perRow int) {
	if !strings.ContainsAny(sql, "/%") && !sqltok.ContainsFold(sql, "div") && !sqltok.ContainsFold(sql, "mod") ||
		!sqltok.FirstKeywordIs(sql, sqltok.MySQL, "select") {
		return "", 0
	}
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	var edits []edit
	plain, inList, depth := true, true, 0
	item, itemZeros := 1, false // the select-list item's first token; whether it divides by zero
	endItem := func(i int) {    // toks[item:i] is a select-list item: named as written, if not aliased
		if itemZeros && i > item && !aliased(toks[item:i]) {
			last := toks[i-1]
			end := last.Pos + len(last.Text)
			edits = append(edits, edit{at: end, text: " AS `" + strings.ReplaceAll(sql[toks[item].Pos:end], "`", "``") + "`"})
		}
		item, itemZeros = i+1, false
	}
	for i, t := range toks {
		switch {
		case t.Text == "(":
			depth++
			if i+1 < len(toks) && toks[i+1].IsWord("select") || i > 0 && toks[i-1].Kind == sqltok.Word && aggregates[strings.ToLower(toks[i-1].Text)] {
				plain = false
			}
		case t.Text == ")":
			depth--
		case t.IsWord("group", "distinct", "distinctrow", "union", "into"):
			plain = false
		}
		if inList && depth == 0 && (t.Text == "," || t.Text == ";" || t.IsWord("from", "where", "limit", "order", "having", "window", "for", "lock", "into", "union")) {
			endItem(i)
			inList = t.Text == ","
		}
		if z, ok := zeroDivisor(toks, i); ok {
			edits = append(edits, edit{at: z.Pos, cut: len(z.Text), text: "NULLIF(0, 0)"})
			if inList {
				perRow++
				itemZeros = true
			}
		}
	}
	if inList {
		endItem(len(toks))
	}
	if perRow == 0 && len(edits) == 0 {
		return "", 0
	}
	if !plain {
		perRow = 0
	}
	return applyEdits(sql, edits), perRow
}

// edit replaces sql[at:at+cut] by text.
type edit struct {
	at, cut int
	text    string
}

// applyEdits is sql with edits made, which may come in any order (MOD(x, 0)'s zero is found at
// MOD, before the divisions inside x) but do not overlap.
func applyEdits(sql string, edits []edit) string {
	sort.SliceStable(edits, func(a, b int) bool { return edits[a].at < edits[b].at })
	var b strings.Builder
	at := 0
	for _, e := range edits {
		b.WriteString(sql[at:e.at])
		b.WriteString(e.text)
		at = e.at + e.cut
	}
	b.WriteString(sql[at:])
	return b.String()
}

// aliased reports whether the select-list item toks names its column (expr [AS] alias).
func aliased(toks []sqltok.Token) bool {
	n := len(toks)
	if n < 2 {
		return false
	}
	last, prev := toks[n-1], toks[n-2]
	if !(last.Kind == sqltok.QuotedIdent || last.Kind == sqltok.String || last.Kind == sqltok.Word && !last.IsWord("null", "true", "false", "unknown")) {
		return false
	}
	return prev.IsWord("as") || prev.Kind == sqltok.Number || prev.Kind == sqltok.String || prev.Kind == sqltok.QuotedIdent || prev.Text == ")" ||
		prev.Kind == sqltok.Word && !prev.IsWord("is", "not", "and", "or", "xor", "div", "mod", "like", "in", "between", "regexp", "rlike", "binary", "interval", "case", "when", "then", "else", "distinct")
}

// zeroDivisor reports whether toks[i] divides (/, %, DIV, MOD, or MOD's opening parenthesis)
// by a literal zero, and returns that zero's token.
func zeroDivisor(toks []sqltok.Token, i int) (sqltok.Token, bool) {
	t := toks[i]
	j, end := i+1, -1 // end: the token that must follow the divisor (MOD's closing parenthesis)
	call := t.IsWord("mod") && j < len(toks) && toks[j].Text == "("
	switch {
	case call:
		if j, end = twoArguments(toks, j); j < 0 {
			return sqltok.Token{}, false
		}
	case i > 0 && (divides(t) || t.IsWord("div", "mod")):
	default:
		return sqltok.Token{}, false
	}
	for j < len(toks) && toks[j].Kind == sqltok.Operator && strings.Trim(toks[j].Text, "+-") == "" {
		j++
	}
	open := 0
	for j < len(toks) && toks[j].Text == "(" {
		open, j = open+1, j+1
	}
	if j >= len(toks) || !isZeroLiteral(toks[j]) {
		return sqltok.Token{}, false
	}
	for k := 1; k <= open; k++ {
		if j+k >= len(toks) || toks[j+k].Text != ")" {
			return sqltok.Token{}, false
		}
	}
	next := j + open + 1
	switch {
	case call:
		if next != end {
			return sqltok.Token{}, false
		}
	case next < len(toks) && (toks[next].Text == "^" || toks[next].Text == "." || toks[next].Text == "("):
		return sqltok.Token{}, false // the divisor goes on: 0 ^ x binds tighter than the division
	}
	return toks[j], true
}

// divides reports whether t is / or %, with the signs the scanner joins to it (1/-0).
func divides(t sqltok.Token) bool {
	return t.Kind == sqltok.Operator && (t.Text[0] == '/' || t.Text[0] == '%') && strings.Trim(t.Text[1:], "+-") == ""
}

// twoArguments is where the second argument of the call whose opening parenthesis is toks[open]
// starts, and its closing parenthesis, when it has exactly two arguments; -1 otherwise.
func twoArguments(toks []sqltok.Token, open int) (second, end int) {
	depth, comma := 0, -1
	for k := open; k < len(toks); k++ {
		switch toks[k].Text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				if comma < 0 {
					return -1, -1
				}
				return comma + 1, k
			}
		case ",":
			if depth == 1 {
				if comma >= 0 {
					return -1, -1
				}
				comma = k
			}
		}
	}
	return -1, -1
}

// isZeroLiteral reports whether t is a number, or a string of a number, that is zero.
func isZeroLiteral(t sqltok.Token) bool {
	s := t.Text
	switch t.Kind {
	case sqltok.Number:
	case sqltok.String:
		if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
			return false
		}
		s = strings.TrimSpace(s[1 : len(s)-1])
	default:
		return false
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") || s == "" {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && f == 0
}

// divZeroWarnings are n warnings 1365, as SHOW WARNINGS lists them (at most maxErrorCount).
func divZeroWarnings(n int) []diagnostic {
	ws := make([]diagnostic, min(n, maxErrorCount))
	for i := range ws {
		ws[i] = diagnostic{Level: "Warning", Code: mysql.ER_DIVISION_BY_ZERO, Message: divZeroMessage}
	}
	return ws
}

// warnsDivisionByZero reports whether the session's sql_mode has ERROR_FOR_DIVISION_BY_ZERO:
// MariaDB's default, unless the client set sql_mode on the engine (then the engine is asked).
func (h *session) warnsDivisionByZero() bool {
	if !h.onEngine["sql_mode"] {
		return true
	}
	mode, ok := h.engineValue("SELECT @@sql_mode", 0)
	return !ok || strings.Contains(strings.ToUpper(mode), "ERROR_FOR_DIVISION_BY_ZERO")
}
