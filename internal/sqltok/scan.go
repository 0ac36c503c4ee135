package sqltok

import (
	"strings"
	"unicode/utf8"
)

// Scanner hands out the tokens of one string one at a time, without allocating: the checks a
// frontend runs on every statement (its first keyword, its parameter count) read only what they
// need. Tokenize is a Scanner run to the end.
type Scanner struct {
	lx lexer
}

// NewScanner starts scanning sql with the lexical rules of d.
func NewScanner(sql string, d Dialect) Scanner {
	return Scanner{lx: lexer{src: sql, d: d}}
}

// Next returns the next token; ok is false at the end of the input.
func (s *Scanner) Next() (tok Token, ok bool) {
	l := &s.lx
	if l.pos >= len(l.src) {
		return Token{}, false
	}
	start := l.pos
	kind, unterminated := l.next()
	if l.pos <= start {
		panic("sqltok: lexer made no progress at byte " + itoa(start))
	}
	return Token{Kind: kind, Text: l.src[start:l.pos], Pos: start, Unterminated: unterminated}, true
}

// NextSignificant returns the next token that is neither whitespace nor a comment.
func (s *Scanner) NextSignificant() (Token, bool) {
	for {
		t, ok := s.Next()
		if !ok || t.Significant() {
			return t, ok
		}
	}
}

// SignificantTokens is Tokenize without whitespace and comments.
func SignificantTokens(sql string, d Dialect) []Token {
	return significant(Tokenize(sql, d))
}

// FirstKeyword is the first word of sql after blanks and comments, as written (its case
// kept); "" when sql starts with anything else. Every frontend decides on it whether a
// statement opens a transaction, sets a session variable or deallocates, so a leading comment
// (a driver's or an ORM's tag) never changes what a statement is taken for.
func FirstKeyword(sql string, d Dialect) string {
	s := NewScanner(sql, d)
	if t, ok := s.NextSignificant(); ok && t.Kind == Word {
		return t.Text
	}
	return ""
}

// FirstKeywordIs reports whether FirstKeyword(sql, d) is one of words, ignoring ASCII case.
func FirstKeywordIs(sql string, d Dialect, words ...string) bool {
	if startsWithNoneOf(sql, words) {
		return false // no lexing: most statements a frontend looks at are not one of its words
	}
	w := FirstKeyword(sql, d)
	for _, want := range words {
		if strings.EqualFold(w, want) {
			return true
		}
	}
	return false
}

// startsWithNoneOf reports whether sql's first token, which starts with the ASCII letters
// after its blanks, is surely no word of words, whatever the dialect makes of it: each word
// differs from those letters (ASCII case aside) within them, or is shorter than they are. A
// letter at the same place in every word ("select" and "show") no longer makes the lexer run.
func startsWithNoneOf(sql string, words []string) bool {
	i := 0
	for i < len(sql) && (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n' || sql[i] == '\r') {
		i++
	}
	n := i
	for n < len(sql) && isAlpha(sql[n]) {
		n++
	}
	if n == i {
		return false
	}
	for _, w := range words {
		if !ruledOut(sql[i:n], w) {
			return false
		}
	}
	return true
}

// ruledOut reports whether a token that begins with letters (ASCII letters, all of them part
// of it if it is a word) cannot be w under strings.EqualFold. A word with a byte past ASCII may
// fold onto ASCII letters (ſ, K); "" is what FirstKeyword gives when the token is no word.
func ruledOut(letters, w string) bool {
	if w == "" {
		return false
	}
	for j := 0; j < len(w); j++ {
		switch {
		case w[j] >= utf8.RuneSelf, j == len(letters):
			return false
		case w[j]|0x20 != letters[j]|0x20: // a byte that is no letter never folds onto one
			return true
		}
	}
	return len(letters) > len(w)
}

// maxParam caps a $n placeholder's number: the wire protocols count parameters in 16 bits.
const maxParam = 1 << 16

// CountParams is how many parameters sql takes: in PostgreSQL (and Generic) the highest $n
// placeholder, in MySQL and Trino the number of ? placeholders. Placeholders inside strings,
// quoted identifiers and comments do not count.
func CountParams(sql string, d Dialect) int {
	s := NewScanner(sql, d)
	n := 0
	for t, ok := s.Next(); ok; t, ok = s.Next() {
		n = countParam(n, t, d)
	}
	return n
}

func countParamTokens(toks []Token, d Dialect) int {
	n := 0
	for _, t := range toks {
		n = countParam(n, t, d)
	}
	return n
}

// countParam is the parameter count n after token t.
func countParam(n int, t Token, d Dialect) int {
	switch {
	case t.Kind != Param:
	case t.Text == "?" && (d == MySQL || d == Trino):
		n++
	case t.Text[0] == '$' && d != MySQL && d != Trino:
		n = max(n, paramNumber(t.Text[1:]))
	}
	return n
}

// paramNumber reads the digits of a $n placeholder, stopping at maxParam.
func paramNumber(digits string) int {
	n := 0
	for i := 0; i < len(digits) && n < maxParam; i++ {
		n = n*10 + int(digits[i]-'0')
	}
	return n
}
