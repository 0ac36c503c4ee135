// Package sqltok is QueryFlux's one SQL lexer, for the dialects it fronts (PostgreSQL, MySQL,
// Trino), and what is built on it: statement splitting, first keywords, parameter counts, statement kinds for guardrails, detection of
// non-deterministic functions for the result cache, and normalization/digests for history.
//
// It is pure computation on strings: it touches nothing. Tokenize never fails: input it cannot
// read (an unterminated string, a stray byte) becomes a token of its own, and the texts of the
// tokens always concatenate back to the input, byte for byte.
package sqltok

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Dialect selects the lexical rules that differ between engines.
type Dialect int

const (
	// Generic is PostgreSQL's rules plus `backquoted` identifiers; the default when the
	// dialect is unknown.
	Generic Dialect = iota
	// Postgres: '' escapes, E'..' backslash strings, $$ dollar quoting $$, nested /* */, $1 params.
	Postgres
	// MySQL: backslash escapes in '..' and "..", "..." is a string, `..` identifiers, # comments,
	// -- comments only with a blank after the dashes, no nested comments, ? params.
	MySQL
	// Trino: ANSI rules, ? params, no dollar quoting, no nested comments.
	Trino
)

// DialectForProtocol maps a frontend protocol name (query.Protocol*) to its dialect.
func DialectForProtocol(protocol string) Dialect {
	switch protocol {
	case "postgres":
		return Postgres
	case "mysql":
		return MySQL
	case "trino":
		return Trino
	}
	return Generic
}

func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case MySQL:
		return "mysql"
	case Trino:
		return "trino"
	}
	return "generic"
}

// TokenKind says what a token is.
type TokenKind int

const (
	Whitespace  TokenKind = iota
	Comment               // -- line, /* block */, # line (MySQL)
	Word                  // keyword or unquoted identifier
	QuotedIdent           // "ident" (not MySQL) or `ident` (MySQL, Generic)
	String                // '..', E'..', X'..', B'..', N'..', U&'..', $tag$..$tag$, MySQL "..."
	Number                // 42, 4.2, .5, 1e10, 0x1F, 1_000
	Param                 // $1, ?, :name
	Operator              // + - * / < > = ! ~ @ # % ^ & | ` ? :: :=
	Punct                 // ( ) [ ] { } , ; .
	Invalid               // a byte that is not valid UTF-8 or starts nothing above
)

var kindNames = [...]string{"whitespace", "comment", "word", "quotedIdent", "string", "number", "param", "operator", "punct", "invalid"}

func (k TokenKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "?"
}

// Token is one lexical unit of the input.
type Token struct {
	Kind TokenKind
	Text string // the exact input bytes
	Pos  int    // byte offset in the input
	// Unterminated is true for a string, quoted identifier or block comment that runs to the
	// end of the input without its closing delimiter.
	Unterminated bool
}

// IsLiteral reports whether t is a value literal (string or number).
func (t Token) IsLiteral() bool { return t.Kind == String || t.Kind == Number }

// IsWord reports whether t is a word (a keyword or an unquoted name) that is one of words,
// in any case.
func (t Token) IsWord(words ...string) bool {
	if t.Kind != Word {
		return false
	}
	for _, w := range words {
		if strings.EqualFold(t.Text, w) {
			return true
		}
	}
	return false
}

// Significant reports whether t is neither whitespace nor a comment.
func (t Token) Significant() bool { return t.Kind != Whitespace && t.Kind != Comment }

// onTokenize, when set, is called by every Tokenize; nil outside tests and benchmarks, so the hot
// path pays one nil check.
var onTokenize func()

// CountTokenize adds 1 to *count at every Tokenize call until the returned stop runs: tests and
// benchmarks count with it how many passes over a query's SQL a path makes. Not for production,
// and not safe while Tokenize runs on other goroutines.
func CountTokenize(count *int64) (stop func()) {
	onTokenize = func() { *count++ }
	return func() { onTokenize = nil }
}

// Tokenize splits sql into tokens. It never fails, and the token texts concatenate to sql.
func Tokenize(sql string, d Dialect) []Token {
	if onTokenize != nil {
		onTokenize()
	}
	s := NewScanner(sql, d)
	toks := make([]Token, 0, tokensHint(sql))
	for t, ok := s.Next(); ok; t, ok = s.Next() {
		toks = append(toks, t)
	}
	return toks
}

// TokenizeOtherEscapes is Tokenize with backslash escapes in plain quoted strings turned the
// other way from d's: PostgreSQL with standard_conforming_strings off (a quote after a
// backslash does not end the string), MySQL with sql_mode NO_BACKSLASH_ESCAPES or ANSI_QUOTES
// (a backslash before a quote is only a backslash). A client can switch its engine session to
// either, so a check that must not be fooled by where a string ends reads a statement both ways.
func TokenizeOtherEscapes(sql string, d Dialect) []Token {
	if onTokenize != nil {
		onTokenize()
	}
	s := Scanner{lx: lexer{src: sql, d: d, otherEscapes: true}}
	toks := make([]Token, 0, tokensHint(sql))
	for t, ok := s.Next(); ok; t, ok = s.Next() {
		toks = append(toks, t)
	}
	return toks
}

// tokensHint is the capacity Tokenize starts with: a token for every 4 bytes, at most
// tokensHintMax. A long comment or string is one token, and a hint from its length alone made
// 40 bytes of Token per 4 bytes of text (40 MB for a 4 MiB statement, allocated and zeroed at
// each Tokenize); past the cap append grows the slice as the tokens come.
func tokensHint(sql string) int { return min(len(sql)/4+1, tokensHintMax) }

const tokensHintMax = 4096

type lexer struct {
	src string
	pos int
	d   Dialect
	// otherEscapes turns backslash escapes in plain quoted strings the other way from d's
	// (TokenizeOtherEscapes).
	otherEscapes bool
}

// plainBackslash reports whether a plain '..' string (and MySQL's "..") takes backslash escapes.
func (l *lexer) plainBackslash() bool { return (l.d == MySQL) != l.otherEscapes }

func (l *lexer) peek(off int) byte {
	if l.pos+off < len(l.src) {
		return l.src[l.pos+off]
	}
	return 0
}

// next consumes one token starting at l.pos and returns its kind.
func (l *lexer) next() (TokenKind, bool) {
	c := l.src[l.pos]
	switch {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		for l.pos < len(l.src) && isSpace(l.src[l.pos]) {
			l.pos++
		}
		return Whitespace, false
	case c == '-' && l.peek(1) == '-' && (l.d != MySQL || l.peek(2) <= ' '):
		// MySQL wants a blank or control character after "--" (1--1 is 1 - -1); the end
		// of the input (peek's 0) counts as one.
		l.lineComment()
		return Comment, false
	case c == '#' && l.d == MySQL:
		l.lineComment()
		return Comment, false
	case c == '/' && l.peek(1) == '*':
		return Comment, !l.blockComment()
	case c == '\'':
		return String, !l.quoted('\'', l.plainBackslash())
	case c == '"':
		if l.d == MySQL {
			return String, !l.quoted('"', l.plainBackslash())
		}
		return QuotedIdent, !l.quoted('"', false)
	case c == '`' && (l.d == Generic || l.d == MySQL):
		return QuotedIdent, !l.quoted('`', false)
	case c >= '0' && c <= '9', c == '.' && isDigit(l.peek(1)):
		l.number()
		return Number, false
	case c == '$':
		return l.dollar()
	case c == '?' && l.d != Postgres:
		l.pos++
		return Param, false
	case c == ':' && l.peek(1) != ':' && isIdentStart(l.peek(1)) && (l.pos == 0 || l.src[l.pos-1] != ':'):
		l.pos++
		l.identRest()
		return Param, false
	case isPunct(c):
		l.pos++
		return Punct, false
	case isOpChar(c, l.d):
		l.operator()
		return Operator, false
	}
	if kind, ok := l.prefixedString(); ok {
		return String, kind
	}
	r, size := utf8.DecodeRuneInString(l.src[l.pos:])
	if r == utf8.RuneError && size <= 1 {
		l.pos++
		return Invalid, false
	}
	if isIdentStartRune(r) {
		l.pos += size
		l.identRest()
		return Word, false
	}
	if unicode.IsSpace(r) {
		l.pos += size
		return Whitespace, false
	}
	l.pos += size
	return Invalid, false
}

func (l *lexer) lineComment() {
	for l.pos < len(l.src) && l.src[l.pos] != '\n' {
		l.pos++
	}
}

// blockComment consumes /* ... */, nested except in MySQL and Trino. It reports whether the
// comment was closed.
func (l *lexer) blockComment() bool {
	nested := l.d == Generic || l.d == Postgres
	depth := 0
	for l.pos < len(l.src) {
		switch {
		case l.src[l.pos] == '/' && l.peek(1) == '*' && (depth == 0 || nested):
			// Without nesting an inner /* is text, and its * may close the comment: /*/*/.
			depth++
			l.pos += 2
		case l.src[l.pos] == '*' && l.peek(1) == '/':
			depth--
			l.pos += 2
			if depth == 0 {
				return true
			}
		default:
			l.pos++
		}
	}
	return false
}

// quoted consumes a token delimited by q, where a doubled q is an escaped q and, when backslash
// is set, \x escapes any byte. It reports whether the closing delimiter was found.
func (l *lexer) quoted(q byte, backslash bool) bool {
	l.pos++ // opening quote
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case backslash && c == '\\':
			l.pos += 2
			if l.pos > len(l.src) {
				l.pos = len(l.src)
				return false
			}
		case c == q:
			if l.peek(1) == q {
				l.pos += 2
				continue
			}
			l.pos++
			return true
		default:
			l.pos++
		}
	}
	return false
}

// prefixedString handles E'..', X'..', B'..', N'..' and U&'..'. ok is false when the input
// at l.pos is not one of them.
func (l *lexer) prefixedString() (unterminated bool, ok bool) {
	c := l.src[l.pos] | 0x20 // lower-case ASCII letters
	switch {
	case (c == 'e' || c == 'x' || c == 'b' || c == 'n') && l.peek(1) == '\'':
		l.pos++
		backslash := l.plainBackslash() || (c == 'e' && l.d != Trino && l.d != MySQL)
		return !l.quoted('\'', backslash), true
	case c == 'u' && l.peek(1) == '&' && l.peek(2) == '\'':
		l.pos += 2
		return !l.quoted('\'', l.plainBackslash()), true
	}
	return false, false
}

// number consumes digits with an optional fraction and exponent, or a 0x/0b/0o literal.
func (l *lexer) number() {
	if l.src[l.pos] == '0' && (l.peek(1)|0x20 == 'x' || l.peek(1)|0x20 == 'b' || l.peek(1)|0x20 == 'o') && isHexDigit(l.peek(2)) {
		l.pos += 2
		for l.pos < len(l.src) && (isHexDigit(l.src[l.pos]) || l.src[l.pos] == '_') {
			l.pos++
		}
		return
	}
	l.digits()
	if l.peek(0) == '.' && l.peek(1) != '.' { // 1..5 is a range in some dialects; keep ".." out
		l.pos++
		l.digits()
	}
	if l.peek(0)|0x20 == 'e' {
		off := 1
		if l.peek(1) == '+' || l.peek(1) == '-' {
			off = 2
		}
		if isDigit(l.peek(off)) {
			l.pos += off
			l.digits()
		}
	}
}

func (l *lexer) digits() {
	for l.pos < len(l.src) && (isDigit(l.src[l.pos]) || (l.src[l.pos] == '_' && isDigit(l.peek(1)) && l.pos > 0 && isDigit(l.src[l.pos-1]))) {
		l.pos++
	}
}

// dollar consumes $1 (a parameter), $tag$...$tag$ (a string, not in MySQL/Trino) or a lone $.
func (l *lexer) dollar() (TokenKind, bool) {
	if isDigit(l.peek(1)) {
		l.pos++
		for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			l.pos++
		}
		return Param, false
	}
	if l.d == Generic || l.d == Postgres {
		if tagEnd, ok := l.dollarTag(); ok {
			tag := l.src[l.pos:tagEnd]
			l.pos = tagEnd
			for l.pos < len(l.src) {
				if l.src[l.pos] == '$' && len(l.src)-l.pos >= len(tag) && l.src[l.pos:l.pos+len(tag)] == tag {
					l.pos += len(tag)
					return String, false
				}
				l.pos++
			}
			return String, true
		}
	}
	l.pos++
	return Operator, false
}

// dollarTag returns the end of a $tag$ opener at l.pos.
func (l *lexer) dollarTag() (int, bool) {
	i := l.pos + 1
	for i < len(l.src) {
		c := l.src[i]
		if c == '$' {
			return i + 1, true
		}
		if !(c == '_' || isAlpha(c) || c >= utf8.RuneSelf || (i > l.pos+1 && isDigit(c))) {
			return 0, false
		}
		i++
	}
	return 0, false
}

func (l *lexer) identRest() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c < utf8.RuneSelf {
			if nameBytes[c] && (c != '$' || l.d != Trino) {
				l.pos++
				continue
			}
			return
		}
		r, size := utf8.DecodeRuneInString(l.src[l.pos:])
		if r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)) {
			return
		}
		l.pos += size
	}
}

// nameBytes marks the bytes an unquoted name may hold past its first: ASCII letters and
// digits, "_", "$" (PostgreSQL's and MySQL's, not Trino's: identRest leaves it out there), and
// every byte of a multi-byte character (identRest takes a letter's, a digit's or a mark's).
var nameBytes = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= utf8.RuneSelf
	}
	return t
}()

// IsNameByte reports whether c may be part of an unquoted name in some dialect: the
// tokenizer's rule (identRest), a multi-byte character's bytes all taken as a name's. A
// cheap scan asks it of the byte before a text it looks for (pg_ in x$pg_class, X' in
// tax') to tell the start of a word from its middle.
func IsNameByte(c byte) bool { return nameBytes[c] }

// operator consumes a run of operator characters, stopping before a comment opener.
func (l *lexer) operator() {
	start := l.pos
	for l.pos < len(l.src) && isOpChar(l.src[l.pos], l.d) {
		if l.pos > start && ((l.src[l.pos] == '-' && l.peek(1) == '-' && (l.d != MySQL || l.peek(2) <= ' ')) || (l.src[l.pos] == '/' && l.peek(1) == '*')) {
			return
		}
		if l.pos > start && l.src[l.pos] == '#' && l.d == MySQL {
			return
		}
		if l.pos > start && l.src[l.pos] == '?' && l.d != Postgres {
			return
		}
		l.pos++
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool    { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func isHexDigit(c byte) bool { return isDigit(c) || ((c|0x20) >= 'a' && (c|0x20) <= 'f') }
func isPunct(c byte) bool {
	return c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}' || c == ',' || c == ';' || c == '.'
}

func isOpChar(c byte, d Dialect) bool {
	switch c {
	case '+', '-', '*', '/', '<', '>', '=', '~', '!', '@', '%', '^', '&', '|', ':':
		return true
	case '#':
		return d != MySQL
	case '?':
		return true // only reached in Postgres, where ? is a JSON operator
	case '`':
		return d == Trino || d == Postgres // an operator character in PostgreSQL, never a quote
	}
	return false
}

func isIdentStart(c byte) bool { return isAlpha(c) || c == '_' || c >= utf8.RuneSelf }

func isIdentStartRune(r rune) bool {
	return r == '_' || (r < utf8.RuneSelf && isAlpha(byte(r))) || (r >= utf8.RuneSelf && unicode.IsLetter(r))
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
