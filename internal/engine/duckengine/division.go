package duckengine

import (
	"math"
	"strconv"
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

// A PostgreSQL or Trino client's division by zero fails with 22012 (Trino's DIVISION_BY_ZERO),
// as in PostgreSQL and Trino, where DuckDB's answer is NULL: the divisor of / and % (a term: a
// literal, a name, a call, a parenthesized expression, with its casts, subscripts and powers)
// is passed through qfpg_nonzero, which raises the error for a zero. A divisor read otherwise
// (a parameter, whose type the statement gives it from the other operand; a CASE; a typed
// literal) is left as written: NULL there.
//
// Trino divides a double or a real by zero as Java does (Infinity, -Infinity, NaN; x % 0 is
// NaN), and integers and decimals fail: which one depends on both operands' types (a double
// divided by the integer 0 is Infinity), which only DuckDB knows. So a Trino client's a / b
// is qf_trino_divide(a, b) (a % b qf_trino_mod(a, b)), the dividend read back from the
// operator (operandStart) and the macro call written before it (insertAt); the macros read
// the types (trinoFunctionSQL). A dividend not read so is left to qfpg_nonzero.
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
	interval := t.Text != "%" && w.intervalBefore(w.i)
	if w.starts != nil && !interval {
		if start := w.operandStart(w.prevSig(w.i)); start >= 0 && w.starts[start] >= 0 {
			if t.Text != "%" && w.trinoDecimalQuotient(start, end) {
				return true
			}
			macro := "qf_trino_divide("
			if t.Text == "%" {
				macro = "qf_trino_mod("
			}
			w.insertAt(w.starts[start], macro)
			w.emit(", " + t.Text[1:]) // the signs of "/-"
			w.after[end] += ")"
			w.regex, w.lastLiteral = "", -1
			w.i++
			return true
		}
	}
	if interval {
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
		case end < 0:
			return -1
		case next >= 0 && w.toks[next].Kind == sqltok.String && numericLiteralTypes[w.word(end)] && !w.toks[next].Unterminated:
			end = next // double '1.5'
		case next >= 0 && w.toks[next].Kind == sqltok.String:
			return -1 // another typed literal (date '...')
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

// operandStart is the index of the first token of the left operand of the * / % operator right
// after end: the term that ends at end (as operandEnd reads one), and the terms before it that
// * / % join to it (a * b / c divides a * b); -1 when what ends there is not read here (a CASE,
// a window, a typed literal but a number's).
func (w *compatWriter) operandStart(end int) int {
	for {
		start := w.termStart(end)
		if start < 0 {
			return -1
		}
		op := w.prevSig(start)
		if op < 0 || w.toks[op].Kind != sqltok.Operator || !isDivision(w.toks[op]) && w.toks[op].Text != "%" && w.toks[op].Text != "*" {
			return start
		}
		end = w.prevSig(op)
	}
}

// termStart is the index of the first token of the term that ends at end: a literal, a
// (qualified) name, a call, a parenthesized expression, with its casts and subscripts; -1
// for anything else.
func (w *compatWriter) termStart(end int) int {
	i := end
	for i >= 0 {
		switch t := w.toks[i]; {
		case w.word(i) == "]":
			if i = w.prevSig(w.bracketStart(i)); w.word(i) == "array" {
				return i // ARRAY[1, 2]
			}
			continue // the subscripted term
		case w.word(i) == ")":
			open := w.bracketStart(i)
			before := w.prevSig(open)
			switch {
			case open < 0:
				return -1
			case !w.isName(before) || w.toks[before].Kind == sqltok.Word && termKeywords[w.word(before)]:
				return open // a parenthesized expression
			case w.word(before) == "over" || w.word(before) == "filter" || w.word(before) == "within":
				return -1
			case w.word(w.prevSig(before)) == "::":
				i = w.prevSig(w.prevSig(before)) // ::decimal(10, 2): the cast term
				continue
			}
			return w.nameStart(before)
		case t.Kind == sqltok.Number:
			return i
		case t.Kind == sqltok.String && !t.Unterminated:
			if typ := w.prevSig(i); numericLiteralTypes[w.word(typ)] {
				return typ // double '1.5'
			}
			return i
		case w.isName(i):
			if w.word(w.prevSig(i)) == "::" {
				i = w.prevSig(w.prevSig(i)) // x::double: the cast term
				continue
			}
			if t.Kind == sqltok.Word && termKeywords[w.word(i)] {
				return -1
			}
			return w.nameStart(i)
		default:
			return -1
		}
	}
	return -1
}

// numericLiteralTypes name Trino's typed literals of numbers (DOUBLE '1.5').
var numericLiteralTypes = map[string]bool{"double": true, "real": true, "decimal": true, "bigint": true,
	"integer": true, "int": true, "smallint": true, "tinyint": true}

// bracketStart is the index of the ( or [ that the ) or ] at end closes; -1 when none does.
func (w *compatWriter) bracketStart(end int) int {
	depth := 0
	for j := end; j >= 0; j = w.prevSig(j) {
		switch w.word(j) {
		case ")", "]":
			depth++
		case "(", "[":
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}

// insertAt writes text into out at offset off, before what is already written there.
func (w *compatWriter) insertAt(off int, text string) {
	written := w.out.String()
	w.out.Reset()
	w.out.WriteString(written[:off])
	w.out.WriteString(text)
	w.out.WriteString(written[off:])
	for j, at := range w.starts {
		if at > off {
			w.starts[j] = at + len(text)
		}
	}
}

// Trino divides decimals as decimals (DecimalOperators' divide: decimal(min(38, p1 + s2 +
// max(0, s2 - s1)), max(s1, s2)), the quotient rounded half up), an integer meeting a decimal
// as decimal(10,0) (bigint decimal(19,0)); DuckDB divides them as doubles (1.5 / 2: Trino's
// decimal(2,1) 0.8, DuckDB's 0.75). Where both operands' types are read from their text (a
// number, a typed literal, a CAST to a number type) and one is a decimal, a Trino client's
// a / b is the quotient of the operands' unscaled integers (qf_trino_decimal_quotient) read
// as a decimal of Trino's type; a column or an expression keeps DuckDB's double.

// numberType is a number's Trino type as decimal arithmetic takes it: an integer is decimal(10,0).
type numberType struct {
	p, s    int
	decimal bool
}

// trinoDecimalQuotient writes the division at w.i, whose dividend starts at start and whose
// divisor ends at end, as a decimal of Trino's type; it reports whether it did.
func (w *compatWriter) trinoDecimalQuotient(start, end int) bool {
	a, ok1 := w.numberTypeOf(start, w.prevSig(w.i))
	b, ok2 := w.numberTypeOf(w.sig(w.i+1, 0), end)
	if !ok1 || !ok2 || !a.decimal && !b.decimal {
		return false
	}
	s := max(a.s, b.s)
	p := min(38, a.p+b.s+max(0, b.s-a.s))
	shift := b.s - a.s + s + 1 // the quotient's digits past its scale: one
	if shift > 20 || p < s {
		return false // a shifted operand could leave HUGEINT: DuckDB's double
	}
	scale := strconv.Itoa(s)
	w.insertAt(w.starts[start], "CAST(CAST(qf_trino_decimal_quotient(CAST((")
	w.emit(") * 1" + strings.Repeat("0", a.s) + " AS HUGEINT) * 1" + strings.Repeat("0", shift) + ", CAST((" + w.toks[w.i].Text[1:])
	w.after[end] += ") * 1" + strings.Repeat("0", b.s) + " AS HUGEINT), " + scale + ") AS DECIMAL(38," + scale + ")) AS DECIMAL(" +
		strconv.Itoa(p) + "," + scale + "))"
	w.regex, w.lastLiteral = "", -1
	w.i++
	return true
}

// numberTypeOf is the type of the term from..to as its text tells it: a number (signed), a
// typed literal (decimal '1.50', integer '7'), or a CAST to a decimal or integer type.
func (w *compatWriter) numberTypeOf(from, to int) (numberType, bool) {
	for from >= 0 && from < to && (w.word(from) == "-" || w.word(from) == "+") {
		from = w.sig(from+1, 0)
	}
	if from < 0 || to < from {
		return numberType{}, false
	}
	switch open := w.sig(from+1, 0); {
	case from == to && w.toks[from].Kind == sqltok.Number:
		return numberLiteralType(w.toks[from].Text)
	case open == to && w.toks[to].Kind == sqltok.String && !w.toks[to].Unterminated:
		text := strings.TrimLeft(strings.TrimSpace(strings.Trim(w.toks[to].Text, "'")), "+-")
		if w.word(from) != "decimal" {
			return integerType(w.word(from))
		}
		whole, frac, _ := strings.Cut(text, ".")
		if whole+frac == "" || strings.Trim(whole+frac, "0123456789") != "" || len(whole+frac) > 38 {
			return numberType{}, false
		}
		return numberType{p: len(whole + frac), s: len(frac), decimal: true}, true // every digit counts
	case w.word(from) == "cast" && w.word(open) == "(" && w.callEnd(open) == to:
		return w.castType(open, to)
	}
	return numberType{}, false
}

// castType is the number type a CAST(... AS type) between open and end names.
func (w *compatWriter) castType(open, end int) (numberType, bool) {
	_, as := w.outerWord(open, end, "as")
	typ := w.sig(as+1, 0)
	if as < 0 || typ < 0 {
		return numberType{}, false
	}
	if w.word(typ) != "decimal" {
		if w.sig(typ+1, 0) != end {
			return numberType{}, false
		}
		return integerType(w.word(typ))
	}
	var args []int
	j := w.sig(typ+1, 0)
	if w.word(j) == "(" {
		for j = w.sig(j+1, 0); j >= 0 && w.toks[j].Kind == sqltok.Number; j = w.sig(j+1, 0) {
			n, err := strconv.Atoi(w.toks[j].Text)
			if err != nil {
				return numberType{}, false
			}
			args = append(args, n)
			if j = w.sig(j+1, 0); w.word(j) != "," {
				break
			}
		}
		if w.word(j) != ")" {
			return numberType{}, false
		}
		j = w.sig(j+1, 0)
	}
	t := numberType{p: 38, decimal: true} // decimal alone is decimal(38,0)
	switch len(args) {
	case 2:
		t.s = args[1]
		fallthrough
	case 1:
		t.p = args[0]
	}
	if j != end || len(args) > 2 || t.p < 1 || t.p > 38 || t.s > t.p {
		return numberType{}, false
	}
	return t, true
}

// integerType is the decimal an integer type meets a decimal as.
func integerType(name string) (numberType, bool) {
	switch name {
	case "tinyint":
		return numberType{p: 3}, true
	case "smallint":
		return numberType{p: 5}, true
	case "integer", "int":
		return numberType{p: 10}, true
	case "bigint":
		return numberType{p: 19}, true
	}
	return numberType{}, false
}

// numberLiteralType is the type of a number literal: an integer's (integer, else bigint), a
// decimal's (its digits without the integer part's leading zeros, at least its fraction's:
// 0.05 is decimal(2,2)); false for a double (an exponent) or a number no type holds.
func numberLiteralType(text string) (numberType, bool) {
	if strings.ContainsAny(text, "eE") {
		return numberType{}, false
	}
	whole, frac, point := strings.Cut(text, ".")
	if !point {
		n, err := strconv.ParseInt(text, 10, 64)
		switch {
		case err != nil:
			return numberType{}, false
		case n <= math.MaxInt32:
			return numberType{p: 10}, true
		}
		return numberType{p: 19}, true
	}
	p := max(len(strings.TrimLeft(whole, "0"))+len(frac), len(frac), 1)
	if p > 38 {
		return numberType{}, false
	}
	return numberType{p: p, s: len(frac), decimal: true}, true
}
