package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's text columns are COLLATE NOCASE on DuckDB (mysqlddl.go), as MariaDB's
// default collations compare them. Its comparisons by bytes stay by bytes: x LIKE BINARY p
// (Django's contains and startswith), x = 'v' COLLATE utf8mb4_bin, BINARY x = 'v'. DuckDB's
// collation C compares bytes, but it refuses to compare operands of two collations ("Cannot
// combine types with different collation") where MySQL's explicit COLLATE wins over the
// column's: so a name or string compared with the bytewise operand is COLLATE C too
// (bytewiseNeighbours). An operand of another form (an expression) is left as written.

// comparisons are the operators bytewiseNeighbours looks across.
var comparisons = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true}

// binaryLike is the text of [NOT] LIKE BINARY from toks[from] to toks[to] (from at NOT or LIKE):
// the operand before it COLLATE C, when it ends as an operand does.
func binaryLike(toks []sqltok.Token, from int, not bool) string {
	like := "LIKE"
	if not {
		like = "NOT LIKE"
	}
	if prev := prevSignificant(toks, from); prev >= 0 && operandEnd(toks[prev]) && !toks[prev].IsWord("not") {
		return "COLLATE C " + like
	}
	return like
}

// binaryOperator edits BINARY x at toks[i] (x a name or a string, after a comparison, a "(", a
// "," or a clause's word) as x COLLATE C.
func binaryOperator(toks []sqltok.Token, i int, edit func(from, to int, text string)) {
	prev := prevSignificant(toks, i)
	if prev < 0 || !(comparisons[toks[prev].Text] || toks[prev].Text == "(" || toks[prev].Text == "," ||
		toks[prev].IsWord("where", "and", "or", "not", "on", "select", "having", "when", "then", "else", "by")) {
		return
	}
	text, end := plainOperand(toks, nextSignificant(toks, i+1))
	if end < 0 {
		return
	}
	edit(i, end, text+" COLLATE C")
	bytewiseNeighbours(toks, i, end, edit)
}

// plainOperand writes the operand at toks[k] for DuckDB, a name (t.col, `t`.`col`) or a
// string, and gives the index of its last token; end is -1 for any other operand.
func plainOperand(toks []sqltok.Token, k int) (text string, end int) {
	if k < 0 || k >= len(toks) {
		return "", -1
	}
	if s, ok := mysqlString(toks, k); ok {
		return duckString(s), k
	}
	var parts []string
	for {
		t := toks[k]
		switch {
		case t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated:
			parts = append(parts, quoteIdent(identText(t)))
		case t.Kind == sqltok.Word && !t.IsWord("select", "where", "and", "or", "not", "on", "by", "set", "when", "then",
			"else", "null", "true", "false", "from", "group", "order", "limit", "having", "binary", "like", "in", "is"):
			parts = append(parts, t.Text)
		default:
			return "", -1
		}
		dot := nextSignificant(toks, k+1)
		if dot >= len(toks) || toks[dot].Text != "." {
			return strings.Join(parts, "."), k
		}
		if k = nextSignificant(toks, dot+1); k >= len(toks) {
			return "", -1
		}
	}
}

// operandBefore is the first token of the name (t.col too) or string that ends at toks[end].
func operandBefore(toks []sqltok.Token, end int) int {
	start := end
	for {
		dot := prevSignificant(toks, start)
		if dot < 1 || toks[dot].Text != "." {
			return start
		}
		start = prevSignificant(toks, dot)
	}
}

// bytewiseNeighbours writes the name or string compared with the bytewise operand
// toks[from..to] (across a comparison before or after it) COLLATE C too.
func bytewiseNeighbours(toks []sqltok.Token, from, to int, edit func(from, to int, text string)) {
	if op := prevSignificant(toks, from); op > 0 && comparisons[toks[op].Text] {
		if end := prevSignificant(toks, op); end >= 0 {
			start := operandBefore(toks, end)
			if text, e := plainOperand(toks, start); e == end {
				edit(start, end, text+" COLLATE C")
			}
		}
	}
	if op := nextSignificant(toks, to+1); op < len(toks) && comparisons[toks[op].Text] {
		start := nextSignificant(toks, op+1)
		if text, end := plainOperand(toks, start); end >= 0 {
			edit(start, end, text+" COLLATE C")
		}
	}
}
