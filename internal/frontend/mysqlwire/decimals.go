package mysqlwire

import (
	"strings"

	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// MySQL's decimal arithmetic on a PostgreSQL engine. MariaDB's / is a decimal division whatever
// its operands (7 / 2 is 3.5000; a DOUBLE operand makes it a DOUBLE's), its scale the dividend's
// plus div_precision_increment (4), rounded half away from zero; PostgreSQL divides integers as
// integers (7 / 2 is 3) and numerics to at least 16 digits. MariaDB's SUM of an integer is a
// DECIMAL (PyMySQL's Decimal('7')), PostgreSQL's a bigint; MariaDB's AVG has the argument's
// scale plus 4 (avg of an int 7.0000), PostgreSQL's 16 or more; MariaDB sums a comparison
// (SUM(v = 'u'), a count of the rows it holds for), PostgreSQL has no sum(boolean).
//
// A form is written for each operand type at once: PostgreSQL resolves it, by its operators,
// to numeric for integer and decimal operands and to double precision for a floating-point
// one (whose division is MariaDB's already); only the numeric is rounded (decimalRound).

// divPrecisionIncrement is MariaDB's default div_precision_increment; decimalMaxScale its
// largest scale of a decimal.
const (
	divPrecisionIncrement = "4"
	decimalMaxScale       = "38"
)

// decimalForms is sql (a MySQL client's text, its divisors already NULLIF'd) with its / and
// AVG written as MariaDB's decimals and its SUMs as MariaDB's (decimalForms' comment); sql
// itself when it has none.
func decimalForms(sql string) string {
	if strings.IndexByte(sql, '/') >= 0 {
		sql = decimalDivisions(sql)
	}
	if sqltok.ContainsFold(sql, "sum") || sqltok.ContainsFold(sql, "avg") {
		sql = decimalAggregates(sql)
	}
	return sql
}

// decimalDivisions writes each a / b of sql as (a) / ((b) + 0::numeric) rounded to a's scale plus 4,
// one at a time from the left (a / b / c is (a / b) / c); its own division is written as
// PostgreSQL's OPERATOR(pg_catalog./), which the next pass does not read as a client's.
func decimalDivisions(sql string) string {
	for range 64 {
		toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
		op := -1
		for i := 1; i < len(toks)-1; i++ {
			if toks[i].Kind == sqltok.Operator && toks[i].Text[0] == '/' && divides(toks[i]) && endsOperand(toks[i-1]) {
				op = i
				break
			}
		}
		if op < 0 {
			return sql
		}
		left, right := operandStart(toks, op-1), operandEnd(toks, op+1)
		if left < 0 || right < 0 || len(sql) > 1<<20 {
			return sql // an operand that cannot be told: this division and those after it stay
		}
		dividend := sql[toks[left].Pos:tokenEnd(toks[op-1])]
		divisor := sql[toks[op].Pos+1 : tokenEnd(toks[right])] // a sign joined to the operator (a /-b) is the divisor's
		q := "((" + dividend + ") OPERATOR(pg_catalog./) ((" + divisor + ") + CAST(0 AS numeric)))"
		scale := "least(scale(CAST((" + dividend + ") AS numeric)) + " + divPrecisionIncrement + ", " + decimalMaxScale + ")"
		sql = sql[:toks[left].Pos] + decimalRound(q, scale) + sql[tokenEnd(toks[right]):]
	}
	return sql
}

// decimalAggregates writes sql's SUM(x) as (sum(x) + 0::numeric), x a comparison summed as
// an integer, and its AVG(x) rounded to x's scale plus 4 (not a window's AVG).
func decimalAggregates(sql string) string {
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	var edits []edit
	for i := 0; i+2 < len(toks); i++ {
		if !toks[i].IsWord("sum", "avg") || toks[i+1].Text != "(" || i > 0 && toks[i-1].Text == "." {
			continue
		}
		end := closing(toks, i+1)
		if end < 0 || end == i+2 {
			continue
		}
		from := i + 2
		if toks[from].IsWord("distinct") {
			from++
		}
		if from >= end {
			continue
		}
		arg := sql[toks[from].Pos:tokenEnd(toks[end-1])]
		if toks[i].IsWord("avg") {
			if end+1 < len(toks) && toks[end+1].IsWord("over") {
				continue
			}
			avg := sql[toks[i].Pos:tokenEnd(toks[end])]
			edits = append(edits, edit{at: toks[i].Pos, cut: len(avg),
				text: decimalRound(avg, "least(max(scale(CAST(("+arg+") AS numeric))) + "+divPrecisionIncrement+", "+decimalMaxScale+")")})
			continue
		}
		if pgengine.TruthValue(toks[from:end]) {
			edits = append(edits, edit{at: toks[from].Pos, text: "CAST(("}, edit{at: tokenEnd(toks[end-1]), text: ") AS integer)"})
		}
		last := end
		if end+1 < len(toks) && toks[end+1].IsWord("over") { // the window is the sum's: the cast goes after it
			switch {
			case end+2 < len(toks) && toks[end+2].Text == "(":
				last = closing(toks, end+2)
			case end+2 < len(toks):
				last = end + 2
			default:
				last = -1
			}
			if last < 0 {
				continue
			}
		}
		edits = append(edits, edit{at: toks[i].Pos, text: "("}, edit{at: tokenEnd(toks[last]), text: " + CAST(0 AS numeric))"})
	}
	if len(edits) == 0 {
		return sql
	}
	return applyEdits(sql, edits)
}

// decimalRound is q (numeric or double precision) as MariaDB's value of its type: a numeric
// rounded to scale (an integer expression), a double as it is. round(CAST(q AS numeric), n)
// types whatever q's type is; n is NULL for a double, whose coalesce is then q itself.
func decimalRound(q, scale string) string {
	return "coalesce(round(CAST(" + q + " AS numeric), CASE WHEN pg_typeof(" + q + ") = 'numeric'::regtype THEN " + scale + " END), " + q + ")"
}
