package pgengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB's CONCAT is NULL when any argument is NULL; PostgreSQL's skips NULL arguments
// (concat('a', NULL) is 'a'). A MySQL client's concat(a, b, ...) is written as PostgreSQL's
// NULL-propagating concatenation, ('' || (a) || (b) ...): text, whatever the arguments' types
// (text || anynonarray), NULL as soon as one is. CONCAT_WS skips NULLs on both, and stays.

// mysqlConcat is sqlText (PostgreSQL's text of a MySQL client's statement) with each concat
// call written so; sqlText itself when it has none, or its parentheses do not close.
func mysqlConcat(sqlText string) string {
	if !strings.Contains(strings.ToLower(sqlText), "concat") {
		return sqlText
	}
	toks := sqltok.Tokenize(sqlText, sqltok.Postgres)
	var b strings.Builder
	if !writeConcats(&b, toks) {
		return sqlText
	}
	return b.String()
}

// writeConcats writes toks to b with their concat calls rewritten; false when a call's
// parentheses do not close.
func writeConcats(b *strings.Builder, toks []sqltok.Token) bool {
	for i := 0; i < len(toks); i++ {
		open := concatCall(toks, i)
		if open < 0 {
			b.WriteString(toks[i].Text)
			continue
		}
		args, end := callArgs(toks, open)
		if end < 0 {
			return false
		}
		b.WriteString("(''")
		for _, a := range args {
			b.WriteString(" || (")
			if !writeConcats(b, a) {
				return false
			}
			b.WriteString(")")
		}
		b.WriteString(")")
		i = end
	}
	return true
}

// concatCall is the index of the "(" of a concat call with arguments at toks[i] (the word
// concat, not qualified, not a column), else -1.
func concatCall(toks []sqltok.Token, i int) int {
	if toks[i].Kind != sqltok.Word || !strings.EqualFold(toks[i].Text, "concat") {
		return -1
	}
	if p := prevSignificant(toks, i); p >= 0 && toks[p].Kind == sqltok.Punct && toks[p].Text == "." {
		return -1 // a schema's own concat
	}
	j := nextSignificant(toks, i)
	if j < 0 || toks[j].Kind != sqltok.Punct || toks[j].Text != "(" {
		return -1
	}
	if k := nextSignificant(toks, j); k < 0 || toks[k].Kind == sqltok.Punct && toks[k].Text == ")" {
		return -1 // concat(): PostgreSQL's error stands
	}
	return j
}

// callArgs splits the arguments of the call whose "(" is toks[open] at its top-level commas;
// end is the index of its ")", -1 when it does not close (or a bracket closes what it did not
// open).
func callArgs(toks []sqltok.Token, open int) (args [][]sqltok.Token, end int) {
	var opened []string
	start := open + 1
	for i := open; i < len(toks); i++ {
		t := toks[i]
		if t.Kind != sqltok.Punct {
			continue
		}
		switch t.Text {
		case "(":
			opened = append(opened, ")")
		case "[":
			opened = append(opened, "]")
		case ")", "]":
			if opened[len(opened)-1] != t.Text {
				return nil, -1
			}
			if opened = opened[:len(opened)-1]; len(opened) == 0 {
				return append(args, toks[start:i]), i
			}
		case ",":
			if len(opened) == 1 {
				args = append(args, toks[start:i])
				start = i + 1
			}
		}
	}
	return nil, -1
}

func nextSignificant(toks []sqltok.Token, i int) int {
	for i++; i < len(toks); i++ {
		if k := toks[i].Kind; k != sqltok.Whitespace && k != sqltok.Comment {
			return i
		}
	}
	return -1
}

func prevSignificant(toks []sqltok.Token, i int) int {
	for i--; i >= 0; i-- {
		if k := toks[i].Kind; k != sqltok.Whitespace && k != sqltok.Comment {
			return i
		}
	}
	return -1
}
