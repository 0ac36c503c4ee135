package duckengine

import (
	"cmp"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// pgLikeEscapes gives a PostgreSQL client's LIKE and ILIKE (and their operators ~~, ~~*, !~~,
// !~~*) PostgreSQL's default escape: a backslash, so `'a_b' LIKE 'a\_b'` and `LIKE 'x\%'` match
// a literal _ and %. DuckDB's LIKE has no escape unless one is written: the pattern of every
// LIKE without an ESCAPE clause is followed by ESCAPE '\'. A written ESCAPE (an empty one too:
// none, in both) is kept. q is returned as it is when it holds no LIKE.
func pgLikeEscapes(q *query.Request) *query.Request {
	if q.Protocol != query.ProtocolPostgres || !containsFold(q.SQL, "like") && !strings.Contains(q.SQL, "~~") {
		return q
	}
	toks := pgTokens(q)
	// The edits, in the order of their places: an ESCAPE inserted after a pattern, an operator
	// written as its words. A LIKE inside another's pattern (in a subquery) is found after it
	// but edits before its ESCAPE.
	var edits []textEdit
	for i, t := range toks {
		op, isOp := likeOperators[t.Text]
		if !t.IsWord("like", "ilike") && !(t.Kind == sqltok.Operator && isOp) {
			continue
		}
		if !afterOperand(toks, i) {
			continue // CREATE TABLE t (LIKE u ...): no expression's LIKE
		}
		last, escaped := likePatternEnd(toks, i+1)
		if escaped || last < 0 {
			continue
		}
		if isOp {
			edits = append(edits, textEdit{t.Pos, t.Pos + len(t.Text), " " + op + " "})
		}
		at := toks[last].Pos + len(toks[last].Text)
		edits = append(edits, textEdit{at, at, ` ESCAPE '\'`})
	}
	if len(edits) == 0 {
		return q
	}
	c := *q
	c.SQL, c.ClientSQL = applyEdits(q.SQL, edits), cmp.Or(q.ClientSQL, q.SQL)
	return &c
}

// textEdit is s[at:end] of a statement s replaced by text.
type textEdit struct {
	at, end int
	text    string
}

// applyEdits is s with edits made, in the order of their places (sorted here, stably: of two
// at one place, the first given first); an edit starting inside one made before it is left out.
func applyEdits(s string, edits []textEdit) string {
	slices.SortStableFunc(edits, func(a, b textEdit) int { return a.at - b.at })
	var b strings.Builder
	written := 0 // the bytes of s already in b
	for _, e := range edits {
		if e.at < written {
			continue
		}
		b.WriteString(s[written:e.at])
		b.WriteString(e.text)
		written = e.end
	}
	b.WriteString(s[written:])
	return b.String()
}

// afterOperand reports whether the significant token before toks[i] may end an operand (or is
// NOT, of NOT LIKE).
func afterOperand(toks []sqltok.Token, i int) bool {
	for j := i - 1; j >= 0; j-- {
		if t := toks[j]; t.Significant() {
			return t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent || t.IsLiteral() || t.Kind == sqltok.Param ||
				t.Kind == sqltok.Punct && (t.Text == ")" || t.Text == "]")
		}
	}
	return false
}

// likeOperators are PostgreSQL's operator spellings of LIKE, as the words DuckDB reads with an
// ESCAPE clause.
var likeOperators = map[string]string{"~~": "LIKE", "~~*": "ILIKE", "!~~": "NOT LIKE", "!~~*": "NOT ILIKE"}

// likeTypeWords are the words a type's name after :: may go on with (character varying, double
// precision, timestamp with time zone).
var likeTypeWords = map[string]bool{"varying": true, "precision": true, "with": true, "without": true, "time": true, "zone": true}

// likePatternEnd finds the pattern of a LIKE whose operator is just before toks[from]: the
// index of the pattern's last significant token (-1 when there is none it can tell), and
// whether an ESCAPE clause follows it. The pattern is PostgreSQL's a_expr after LIKE: operands
// joined by operators that bind more tightly than LIKE (||, +, ::, COLLATE ...), with what is
// in parentheses, brackets or CASE ... END taken whole. A word after an operand ends it (AND,
// OR, IS, a clause's word, an alias), as do , ) ; and comparison operators; ESCAPE says the
// LIKE has its own.
func likePatternEnd(toks []sqltok.Token, from int) (int, bool) {
	last := -1
	depth := 0
	operand := false  // the last token at depth 0 ended an operand
	typeName := false // the last token was ::, or a type's word after it
	for j := from; j < len(toks); j++ {
		t := toks[j]
		if !t.Significant() {
			continue
		}
		if depth > 0 {
			switch {
			case t.Kind == sqltok.Punct && (t.Text == "(" || t.Text == "["), t.IsWord("case"):
				depth++
			case t.Kind == sqltok.Punct && (t.Text == ")" || t.Text == "]"), t.IsWord("end"):
				depth--
			}
			if depth == 0 {
				operand, last = true, j
			}
			continue
		}
		if typeName && t.Kind == sqltok.Word && (!operand || likeTypeWords[strings.ToLower(t.Text)]) {
			operand, last = true, j
			continue
		}
		typeName = false
		switch {
		case t.Kind == sqltok.Punct && (t.Text == "(" || t.Text == "["):
			if !operand && t.Text == "[" {
				return -1, false
			}
			depth++
		case t.IsWord("case") && !operand:
			depth++
		case t.Kind == sqltok.Punct && t.Text == ".":
			if !operand {
				return -1, false
			}
			operand = false
		case t.Kind == sqltok.Operator:
			switch t.Text {
			case "=", "<", ">", "<=", ">=", "<>", "!=":
				return endOf(last, operand), false
			case "::":
				if !operand {
					return -1, false
				}
				typeName = true
			}
			operand = false // || + - * / and the others bind more tightly; a unary one starts an operand
		case t.IsWord("escape") && operand:
			return last, true
		case t.IsWord("collate") && operand:
			operand = false
		case t.Kind == sqltok.String && operand && last >= 0 && toks[last].Kind == sqltok.Word:
			last = j // a typed literal's text (date '2020-01-01')
		case !operand && t.IsWord("any", "all", "some"):
			return -1, false // LIKE ANY (array): DuckDB takes no ESCAPE there (nor ANY with LIKE)
		case !operand && (t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent || t.Kind == sqltok.String ||
			t.Kind == sqltok.Number || t.Kind == sqltok.Param):
			operand, last = true, j
		default: // ) , ; a clause's word, an alias
			return endOf(last, operand), false
		}
	}
	return endOf(last, operand && depth == 0), false
}

func endOf(last int, operand bool) int {
	if !operand {
		return -1
	}
	return last
}

// invalidEscapeSequence is PostgreSQL's SQLSTATE of a LIKE pattern ending with its escape.
const invalidEscapeSequence = "22025"

// likeEscapeError is PostgreSQL's error for DuckDB's of a LIKE pattern that ends with its escape
// character (raised, as PostgreSQL's, only when matching reaches the escape with text left:
// `'ab' LIKE 'a\'`, not `'b' LIKE 'b\'`); ok false for any other message.
func likeEscapeError(msg string) (*query.Error, bool) {
	if !strings.Contains(msg, "ike pattern must not end with escape character") {
		return nil, false
	}
	return &query.Error{Code: invalidEscapeSequence, Message: "LIKE pattern must not end with escape character"}, true
}
