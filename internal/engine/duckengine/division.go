package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL and Trino divide integers as integers (7/2 is 3, -7/2 is -3); MySQL, and DuckDB
// itself (what a Flight SQL client speaks here), divide exactly (3.5). DuckDB's
// integer_division is one setting for the whole database, which lock_configuration then keeps,
// so the engine opens with it on (settingIntegerDivision), as PostgreSQL's and Trino's clients
// need, and a MySQL or Flight SQL client's a / b runs as a * 1e0 / b: * and / bind alike, from
// the left, so the dividend is the same, a DOUBLE, and DuckDB divides it exactly as it did.
//
// With the setting on DuckDB divides by zero to NULL (MySQL's answer; PostgreSQL and Trino
// raise an error) and divides no INTERVAL: docs/duckdb.md says so.
const settingIntegerDivision = "integer_division"

// exactDivision is the operator / of toks (dialect d's) written "* 1e0 /"; sqlText itself
// when it divides nothing.
func exactDivision(sqlText string, d sqltok.Dialect) string {
	if !strings.Contains(sqlText, "/") {
		return sqlText
	}
	toks := sqltok.Tokenize(sqlText, d)
	var b strings.Builder
	changed := false
	for _, t := range toks {
		if isDivision(t) {
			b.WriteString(exactDivisionOperator + t.Text[1:])
			changed = true
			continue
		}
		b.WriteString(t.Text)
	}
	if !changed {
		return sqlText
	}
	return b.String()
}

const exactDivisionOperator = "* 1e0 /"

// isDivision reports whether t is the operator /, or / with the signs of its right operand
// (7 /-2 is read as one operator token "/-").
func isDivision(t sqltok.Token) bool {
	return t.Kind == sqltok.Operator && strings.HasPrefix(t.Text, "/") && strings.Trim(t.Text[1:], "+-") == ""
}

// A PostgreSQL client's division by zero fails with 22012, as in PostgreSQL, where DuckDB's
// answer is NULL: the divisor of / and % (a term: a literal, a name, a call, a parenthesized
// expression, with its casts, subscripts and powers) is passed through qfpg_nonzero, which
// raises the error for a zero. A divisor read otherwise (a parameter, whose type the statement
// gives it from the other operand; a CASE; a typed literal) is left as written: NULL there.
//
// An interval divided by a number (interval '1 hour' / 2) is multiplied by the number's
// inverse, which DuckDB takes (integer_division takes no interval), when the dividend is an
// interval as written: interval '...', x::interval, CAST(x AS interval). An interval column
// divided stays DuckDB's error (42883).

// divides reports whether q divides: a / or % operator (not one in a string, as LIKE 'a%').
func divides(q *query.Request) bool {
	if !strings.ContainsAny(q.SQL, "/%") {
		return false
	}
	for _, t := range q.Analysis().Tokens {
		if t.Kind == sqltok.Operator && (isDivision(t) || t.Text == "%") {
			return true
		}
	}
	return false
}

// guardDivision writes the / or % at w.i with its divisor through qfpg_nonzero; it reports
// whether it wrote anything.
func (w *compatWriter) guardDivision(t sqltok.Token) bool {
	if t.Kind != sqltok.Operator || !isDivision(t) && t.Text != "%" {
		return false
	}
	end := w.operandEnd(w.sig(w.i+1, 0))
	if end < 0 {
		return false
	}
	if w.after == nil {
		w.after = map[int]string{}
	}
	if t.Text != "%" && w.intervalBefore(w.i) {
		w.emit("* (1e0 " + t.Text + " " + divisorGuard + "(")
		w.after[end] += "))"
	} else {
		w.emit(t.Text + " " + divisorGuard + "(")
		w.after[end] += ")"
	}
	w.regex, w.lastLiteral = "", -1
	w.i++
	return true
}

// divisorGuard is the macro a divisor is passed through (pgFunctionSQL).
const divisorGuard = "qfpg_nonzero"

// operandEnd is the index of the last token of the term that starts at i: an operand of * /
// % (with its signs, casts, subscripts and ^ powers, which bind tighter); -1 when what starts
// there is not a term read here.
func (w *compatWriter) operandEnd(i int) int {
	for w.word(i) == "-" || w.word(i) == "+" {
		i = w.sig(i+1, 0)
	}
	if i < 0 {
		return -1
	}
	end := i
	switch t := w.toks[i]; {
	case t.Kind == sqltok.Number, t.Kind == sqltok.String && !t.Unterminated:
	case w.word(i) == "(":
		end = w.callEnd(i)
	case t.Kind == sqltok.QuotedIdent, t.Kind == sqltok.Word && !termKeywords[w.word(i)]:
		for w.word(w.sig(end+1, 0)) == "." {
			end = w.sig(end+1, 1)
		}
		next := w.sig(end+1, 0)
		switch {
		case end < 0 || next >= 0 && w.toks[next].Kind == sqltok.String:
			return -1 // a typed literal (date '...')
		case w.word(next) == "(":
			if end = w.callEnd(next); end < 0 {
				return -1
			}
			if after := w.word(w.sig(end+1, 0)); after == "over" || after == "filter" || after == "within" {
				return -1 // a window or an aggregate's clause: other rewrites write after it
			}
		}
	default:
		return -1
	}
	for end >= 0 {
		next := w.sig(end+1, 0)
		switch w.word(next) {
		case "::":
			if end = w.sig(next+1, 0); end < 0 || w.toks[end].Kind != sqltok.Word && w.toks[end].Kind != sqltok.QuotedIdent {
				return -1
			}
			for w.word(w.sig(end+1, 0)) == "(" || w.word(w.sig(end+1, 0)) == "[" {
				end = w.bracketEnd(w.sig(end+1, 0))
			}
		case "[":
			end = w.bracketEnd(next)
		case "^":
			end = w.operandEnd(w.sig(next+1, 0))
		default:
			return end
		}
	}
	return end
}

// termKeywords start no term operandEnd reads.
var termKeywords = map[string]bool{"case": true, "array": true, "not": true, "exists": true, "select": true, "interval": true,
	"and": true, "or": true, "from": true, "where": true, "as": true, "then": true, "else": true, "end": true, "when": true}

// bracketEnd is the index of the ) or ] that closes the ( or [ at open; -1 when none does.
func (w *compatWriter) bracketEnd(open int) int {
	if w.word(open) == "(" {
		return w.callEnd(open)
	}
	depth := 0
	for j := open; j >= 0; j = w.sig(j+1, 0) {
		switch w.word(j) {
		case "[":
			depth++
		case "]":
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}

// intervalBefore reports whether the operand before the operator at op is an interval as
// written: interval '1 hour' (a unit may follow), x::interval, CAST(x AS interval).
func (w *compatWriter) intervalBefore(op int) bool {
	p := w.prevSig(op)
	if p < 0 {
		return false
	}
	if lit := w.prevSig(p); lit >= 0 && w.toks[p].Kind == sqltok.Word && w.toks[lit].Kind == sqltok.String {
		p = lit // interval '1' hour
	}
	before := w.word(w.prevSig(p))
	switch {
	case w.toks[p].Kind == sqltok.String:
		return before == "interval"
	case w.word(p) == "interval":
		return before == "::"
	case w.word(p) == ")":
		last := w.prevSig(p)
		return w.word(last) == "interval" && w.word(w.prevSig(last)) == "as"
	}
	return false
}
