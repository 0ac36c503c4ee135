package sqltok

import "strings"

// Walker reads a statement's significant tokens one at a time, for the few statements a
// frontend or an engine reads itself (COPY's options, DDL an engine takes apart).
type Walker struct {
	toks []Token
	i    int
}

// FirstWord returns the first significant token's text if it is a keyword, "" otherwise: what
// a reader checks before it copies the tokens into a Walker.
func FirstWord(toks []Token) string {
	for _, t := range toks {
		if t.Significant() {
			if t.Kind == Word {
				return t.Text
			}
			return ""
		}
	}
	return ""
}

// NewWalker walks the significant tokens of toks.
func NewWalker(toks []Token) *Walker {
	w := &Walker{toks: make([]Token, 0, len(toks))}
	for _, t := range toks {
		if t.Significant() {
			w.toks = append(w.toks, t)
		}
	}
	return w
}

// More reports whether a token is left.
func (w *Walker) More() bool { return w.i < len(w.toks) }

// Peek returns the next token without moving past it; the zero Token at the end.
func (w *Walker) Peek() Token {
	if w.More() {
		return w.toks[w.i]
	}
	return Token{}
}

// Last returns the token last moved past; the zero Token before the first.
func (w *Walker) Last() Token {
	if w.i > 0 {
		return w.toks[w.i-1]
	}
	return Token{}
}

// Next returns the next token's text and moves past it; "" at the end.
func (w *Walker) Next() string {
	t := w.Peek()
	if w.More() {
		w.i++
	}
	return t.Text
}

// Word moves past the next token if it is the keyword kw (any case).
func (w *Walker) Word(kw string) bool {
	if t := w.Peek(); t.Kind == Word && strings.EqualFold(t.Text, kw) {
		w.i++
		return true
	}
	return false
}

// Punct moves past the next token if it is the punctuation p.
func (w *Walker) Punct(p string) bool {
	if t := w.Peek(); t.Kind == Punct && t.Text == p {
		w.i++
		return true
	}
	return false
}

// Name reads a possibly qualified name (a, "A", s.t) as written; "" if none is next.
func (w *Walker) Name() string {
	var b strings.Builder
	for {
		t := w.Peek()
		if t.Kind != Word && t.Kind != QuotedIdent {
			return b.String()
		}
		b.WriteString(t.Text)
		w.i++
		if !w.Punct(".") {
			return b.String()
		}
		b.WriteByte('.')
	}
}

// NameParts reads a possibly qualified name's parts without their quotes; nil if none is
// next. lowerUnquoted folds an unquoted part to lower case, as Trino names it; an engine that
// keeps its own case (DuckDB) passes false.
func (w *Walker) NameParts(lowerUnquoted bool) []string {
	var parts []string
	for {
		t := w.Peek()
		switch {
		case t.Kind == Word && lowerUnquoted:
			parts = append(parts, strings.ToLower(t.Text))
		case t.Kind == Word:
			parts = append(parts, t.Text)
		case t.Kind == QuotedIdent:
			parts = append(parts, strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`))
		default:
			return parts
		}
		w.i++
		if !w.Punct(".") {
			return parts
		}
	}
}

// Names reads names separated by commas, as written; ok is false if one is missing.
func (w *Walker) Names() (names []string, ok bool) {
	for {
		n := w.Name()
		if n == "" {
			return names, false
		}
		names = append(names, n)
		if !w.Punct(",") {
			return names, true
		}
	}
}

// Parenthesised returns what sql holds between a "(" just moved past and its matching ")",
// and moves past that.
func (w *Walker) Parenthesised(sql string) (string, bool) {
	start := w.Last().Pos + 1
	for depth := 1; w.More(); w.i++ {
		switch t := w.toks[w.i]; {
		case t.Kind == Punct && t.Text == "(":
			depth++
		case t.Kind == Punct && t.Text == ")":
			if depth--; depth == 0 {
				w.i++
				return strings.TrimSpace(sql[start:t.Pos]), true
			}
		}
	}
	return "", false
}

// TopLevel is the index of the first of toks outside parentheses for which match is true, -1
// when none: how a clause's keyword is found in a statement's tokens.
func TopLevel(toks []Token, match func(Token) bool) int {
	depth := 0
	for i, t := range toks {
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth == 0 && match(t):
			return i
		}
	}
	return -1
}

// SplitAtCommas splits toks at the commas outside parentheses (a SET's assignments, a list's
// items): one part more than such commas, each part without its comma, an empty part where
// two commas meet. The parts share toks' array.
func SplitAtCommas(toks []Token) [][]Token {
	var parts [][]Token
	depth, start := 0, 0
	for i, t := range toks {
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			if depth == 0 {
				parts = append(parts, toks[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, toks[start:])
}
