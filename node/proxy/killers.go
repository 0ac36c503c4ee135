package proxy

import (
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Every client of a cluster reaches its engine as the same engine user, and an engine lets a
// user end its own sessions: MySQL's KILL, PostgreSQL's pg_cancel_backend and
// pg_terminate_backend, Trino's system.runtime.kill_query. Through the proxy, those sessions
// are every other client's (ids from SHOW PROCESSLIST, pg_stat_activity, CONNECTION_ID()
// neighbours), so a statement that names one of them is refused before any engine sees it,
// whatever the client's protocol and the group's engine. A client cancels its own statement
// with its protocol's cancel (a CancelRequest, KILL QUERY of its own connection id on the
// MySQL frontend, which that frontend answers itself, a DELETE of its Trino query).
//
// What is looked for is what a statement can name lexically: KILL as a statement, the
// functions by name (bare, schema-qualified or quoted, U&"..." with its UESCAPE), and text
// the engine may run as SQL: a DO block's or a function's body, EXECUTE IMMEDIATE and PREPARE
// ... FROM text, a string handed to a function (query_to_xml, dblink, a procedure that
// EXECUTEs it), a string put in a MySQL user variable (PREPARE ... FROM @v runs it), MySQL's
// executable comments. Such text is read with its escapes (E'\x5f', U&'\005f', 'K\ILL') and
// hex (X'4B494C4C', 0x4B...) decoded. A string that is only a value (INSERT ... VALUES
// ('pg_cancel_backend'), WHERE query LIKE '%kill%') is data and passes.
//
// Where a string ends depends on the engine's reading (standard_conforming_strings, MySQL's
// NO_BACKSLASH_ESCAPES and ANSI_QUOTES, nested comments, # comments, dollar quotes), which a
// client can change in its session: the statement is read the way each engine may read it,
// and refused if any reading finds one. SQL assembled at run time from pieces ('pg_cancel' ||
// '_backend', CONCAT('KI', 'LL'), a value read from a table into a variable) cannot be read
// here, so where an engine runs text as SQL only one literal may stand (runtimesql.go); a
// function already on the engine that runs the text it is handed is the engine's grants' to
// stop (docs/security.md).

// sessionKillerFuncs are the engine functions and procedures that end other sessions.
var sessionKillerFuncs = []string{"pg_cancel_backend", "pg_terminate_backend", "kill_query"}

// killWordsAfter are the tokens that make a KILL inside a statement a KILL statement: KILL
// [HARD | SOFT] [CONNECTION | QUERY [ID]] {id | USER name}.
var killWordsAfter = []string{"hard", "soft", "connection", "query", "user"}

// engineReading is one way an engine may read a statement's text.
type engineReading struct {
	d            sqltok.Dialect
	otherEscapes bool // sqltok.TokenizeOtherEscapes
}

// engineReadings are the readings a statement is checked in: PostgreSQL (and DuckDB) with
// standard_conforming_strings on and off, MySQL with backslash escapes and without (sql_mode
// NO_BACKSLASH_ESCAPES; ANSI_QUOTES ends a "..." where that does), Trino.
var engineReadings = []engineReading{
	{sqltok.Postgres, false}, {sqltok.Postgres, true}, {sqltok.MySQL, false}, {sqltok.MySQL, true}, {sqltok.Trino, false},
}

func (r engineReading) tokens(sql string) []sqltok.Token {
	if r.otherEscapes {
		return sqltok.TokenizeOtherEscapes(sql, r.d)
	}
	return sqltok.Tokenize(sql, r.d)
}

// killerReadsMax bounds how many readings of text one check makes (a statement, the strings
// in it that may run, the strings in those...): past it the statement is refused, as one too
// intricate to check.
const killerReadsMax = 200

// textDepthMax is how deep in text run as SQL (EXECUTE IMMEDIATE of text that holds EXECUTE IMMEDIATE) the
// check reads; text deeper that may hold what it looks for is refused.
const textDepthMax = 3

// textReads counts one check's readings of text (a statement, the strings in it that may run,
// the strings in those...), which killerReadsMax bounds.
type textReads struct{ reads int }

// another counts one more reading, false past killerReadsMax.
func (c *textReads) another() bool {
	c.reads++
	return c.reads <= killerReadsMax
}

// readForms reads text an engine runs as SQL, given as the forms its literal may stand for, in
// each of readings (once where they all read it alike), one level deeper, with in: the first
// thing in names. A form that may not hold what the check looks for is not read; one that may,
// past textDepthMax deep or killerReadsMax readings, is tooIntricate.
func (c *textReads) readForms(forms []string, readings []engineReading, depth int,
	may func(string) bool, in func([]sqltok.Token, engineReading, int) string) string {
	for _, f := range forms {
		if !may(f) {
			continue
		}
		if depth >= textDepthMax {
			return tooIntricate
		}
		for _, r := range readings {
			if !c.another() {
				return tooIntricate
			}
			if what := in(r.tokens(f), r, depth+1); what != "" {
				return what
			}
			if readingsAgree(f) {
				break
			}
		}
	}
	return ""
}

// killerScan is one statement check's state: what it looks for, and how much it has read.
type killerScan struct {
	// names are looked for in text that runs; as words and quoted names too where words is
	// set (always in text that runs).
	names []string
	words bool
	kill  bool // KILL statements count
	// statement, when set, names what in a statement (its significant tokens) is refused, or "".
	statement func(st []sqltok.Token) string
	// deeper are what text that runs must hold for a reading of it as SQL to find more than
	// names does.
	deeper []string
	textReads
}

// newKillerScan is the scan for what ends engine sessions.
func newKillerScan() *killerScan {
	return &killerScan{names: sessionKillerFuncs, words: true, kill: true, deeper: []string{"kill", "u&"}}
}

// checkSessionKillers refuses req when it would end or cancel engine sessions.
func checkSessionKillers(req *query.Request) error {
	if !mayKillSessions(req.SQL) {
		return nil // nearly every statement: one scan of its bytes, no lexing
	}
	return sessionKillersIn(req)
}

// sessionKillersIn is checkSessionKillers past its scan.
func sessionKillersIn(req *query.Request) error {
	a := req.Analysis()
	s := newKillerScan()
	for _, r := range engineReadings {
		toks := a.Tokens
		if r.d != a.Dialect || r.otherEscapes {
			toks = r.tokens(req.SQL)
		}
		if what, inComment := s.killerIn(toks, r, 0); what != "" {
			msg := what + " is not allowed through QueryFlux: the engine's sessions serve every client of the cluster;" +
				" cancel your own statement with your client's cancel"
			if inComment {
				msg = what + " is not allowed through QueryFlux (in an executable comment): the engine's sessions serve every client of the cluster"
			}
			return &query.Error{Code: query.CodeAccessDenied, Message: msg}
		}
	}
	return nil
}

// mayKillSessions is false for text that holds none of "kill", "_backend", "u&" (a name or a
// string with escapes), a backslash escape that may stand for a letter, and a hex literal
// (X'..', 0x.., which PREPARE and EXECUTE IMMEDIATE run as text), in any case: such a
// statement can name nothing sessionKiller looks for (sharedNeedsOf).
func mayKillSessions(sql string) bool { return sharedNeedsOf(sql)&needKillers != 0 }

// escapesToNameByte reports whether a backslash before c may stand for a letter, a digit or
// "_" (E'\x5f', E'\137', E'\_', MySQL's 'K\ILL'); the escapes every escaping client writes
// (\' \" \n \r \t \b \0 \%) do not.
func escapesToNameByte(c byte) bool {
	switch c {
	case 'n', 'r', 't', 'b':
		return false
	}
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '1' && c <= '7'
}

// killerIn names what in the statements of toks (one reading of some text) would end engine
// sessions, or ""; inComment is true when it is in a MySQL executable comment, whose text
// MySQL and MariaDB run. depth is how deep in text run as SQL toks are.
func (s *killerScan) killerIn(toks []sqltok.Token, r engineReading, depth int) (what string, inComment bool) {
	for _, st := range splitStatements(toks) {
		if what := s.sessionKiller(st, r, depth); what != "" {
			return what, false
		}
	}
	for _, t := range toks {
		if t.Kind != sqltok.Comment || !isExecutableComment(t.Text) {
			continue
		}
		if !s.another() {
			return tooIntricate, true
		}
		inner := sqltok.Tokenize(executableText(t.Text), sqltok.MySQL)
		for _, st := range splitStatements(inner) {
			if what := s.sessionKiller(st, engineReading{d: sqltok.MySQL}, depth+1); what != "" {
				return what, true
			}
		}
	}
	return "", false
}

// tooIntricate is what a statement is refused as when checking it would take more than
// killerReadsMax readings.
const tooIntricate = "a statement this intricate (text run as SQL within text run as SQL...)"

// splitStatements splits toks at top-level semicolons, leaving blanks and comments out.
func splitStatements(toks []sqltok.Token) [][]sqltok.Token {
	var out [][]sqltok.Token
	var cur []sqltok.Token
	for _, t := range toks {
		switch {
		case !t.Significant():
		case t.Kind == sqltok.Punct && t.Text == ";":
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
		default:
			cur = append(cur, t)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func isExecutableComment(c string) bool {
	return strings.HasPrefix(c, "/*!") || strings.HasPrefix(c, "/*M!") || strings.HasPrefix(c, "/*m!")
}

// executableText is what MySQL runs of an executable comment: its text without the markers
// and the version number that may lead it (/*!50000 ...*/, /*M!100000 ...*/).
func executableText(c string) string {
	c = strings.TrimSuffix(c[2:], "*/")
	c = strings.TrimLeft(strings.TrimPrefix(c, "!"), "Mm!")
	return strings.TrimLeft(c, "0123456789")
}

// sessionKiller names what in the statement st (its significant tokens, in reading r) would
// end engine sessions, or "".
func (s *killerScan) sessionKiller(st []sqltok.Token, r engineReading, depth int) string {
	if s.statement != nil {
		if what := s.statement(st); what != "" {
			return what
		}
	}
	runsText := !readsValues(st) // every string of a statement that is not a query or DML may be run
	words := s.words || depth > 0
	var parens []bool // per open parenthesis: whether a call's arguments are in it
	calls := 0
	for i, t := range st {
		switch t.Kind {
		case sqltok.Punct:
			switch {
			case t.Text == "(":
				call := i > 0 && callsAt(st[i-1])
				parens = append(parens, call)
				if call {
					calls++
				}
			case t.Text == ")" && len(parens) > 0:
				if parens[len(parens)-1] {
					calls--
				}
				parens = parens[:len(parens)-1]
			}
		case sqltok.Word:
			if s.kill && strings.EqualFold(t.Text, "kill") && killStatementAt(st, i) {
				return "KILL"
			}
			if f := nameIn(t.Text, s.names); words && f != "" {
				return f
			}
		case sqltok.QuotedIdent:
			if f := quotedNameIn(st, i, s.names); f != "" && (words || unicodeName(st, i)) {
				return f
			}
		case sqltok.String:
			if t.Text[0] == '"' { // MySQL's "..." is a name under ANSI_QUOTES
				if f := quotedNameIn(st, i, s.names); f != "" && (words || unicodeName(st, i)) {
					return f
				}
			}
			if runsText || calls > 0 {
				if what := s.killerInText(literalForms(st, i), r, depth); what != "" {
					return what
				}
			}
		case sqltok.Number:
			if runsText || calls > 0 {
				if text, ok := hexNumber(t.Text); ok {
					if what := s.killerInText([]string{text}, r, depth); what != "" {
						return what
					}
				}
			}
		}
	}
	return ""
}

// readsValues reports whether the statement st is a query or a DML statement whose strings are
// values, not text it runs: SELECT, WITH, INSERT, UPDATE, DELETE, MERGE, VALUES, TABLE,
// EXPLAIN, MySQL's REPLACE, unless it puts a value in a MySQL user variable (@v := ..., INTO
// @v), which PREPARE ... FROM @v runs.
func readsValues(st []sqltok.Token) bool {
	if len(st) == 0 || !(st[0].Text == "(" || st[0].IsWord("select", "with", "insert", "update", "delete", "merge", "values", "table", "explain", "replace")) {
		return false
	}
	for i, t := range st {
		if t.Kind == sqltok.Operator && strings.Contains(t.Text, ":=") {
			return false
		}
		if t.IsWord("into") && i+1 < len(st) && strings.HasPrefix(st[i+1].Text, "@") {
			return false
		}
	}
	return true
}

// notCalls are the words a parenthesis follows without being a call's: what is in it is a
// list, a subquery or an expression, whose strings are values.
var notCalls = []string{"values", "value", "in", "exists", "any", "all", "some", "and", "or", "not", "where", "select",
	"on", "having", "when", "then", "else", "case", "as", "from", "join", "using", "by", "set", "over", "filter", "within",
	"group", "lateral", "union", "intersect", "except", "distinct", "returning", "is", "like", "ilike", "between",
	"materialized", "row", "array", "limit", "offset", "with", "recursive", "return"}

// callsAt reports whether a parenthesis after t holds a call's arguments: t names a function
// (a word that is not one of notCalls, a quoted name).
func callsAt(t sqltok.Token) bool {
	switch t.Kind {
	case sqltok.QuotedIdent:
		return true
	case sqltok.String:
		return t.Text[0] == '"'
	case sqltok.Word:
		return !t.IsWord(notCalls...)
	}
	return false
}

// killerInText names what would end engine sessions in text an engine may run as SQL, given
// as the forms its literal may stand for (escapes read or not): a function named anywhere in
// it, or a KILL statement in any reading of it.
func (s *killerScan) killerInText(forms []string, r engineReading, depth int) string {
	for _, f := range forms {
		if fn := containedIn(f, s.names); fn != "" {
			return fn
		}
	}
	mayKill := func(f string) bool { return containedIn(f, s.deeper) != "" }
	return s.readForms(forms, engineReadings, depth, mayKill, func(toks []sqltok.Token, r engineReading, depth int) string {
		what, _ := s.killerIn(toks, r, depth)
		return what
	})
}

// killStatementAt reports whether the word KILL at toks[i] starts a KILL statement: it leads
// the statement, or (in a stored program's body) an id, a name or one of KILL's words follows.
func killStatementAt(toks []sqltok.Token, i int) bool {
	if i == 0 {
		return true
	}
	if i+1 == len(toks) {
		return false
	}
	next := toks[i+1]
	if next.Kind == sqltok.Number || next.Kind == sqltok.Param || next.Kind == sqltok.Operator && strings.HasPrefix(next.Text, "@") {
		return true
	}
	return next.IsWord(killWordsAfter...) || toks[i-1].Text == ";"
}

// nameIn is the one of names that name is (its schema left off), or "".
func nameIn(name string, names []string) string {
	for _, f := range names {
		if strings.EqualFold(name, f) {
			return f
		}
	}
	return ""
}

// containedIn is the first of names that text holds, in any case, or "".
func containedIn(text string, names []string) string {
	for _, f := range names {
		if sqltok.ContainsFold(text, f) {
			return f
		}
	}
	return ""
}

// quotedNameIn is the one of names the quoted name st[i] holds, with a U& prefix's escapes
// (and UESCAPE's character) read, or "".
func quotedNameIn(st []sqltok.Token, i int, names []string) string {
	body := st[i].Text
	if len(body) >= 2 {
		body = body[1 : len(body)-1]
	}
	if unicodeName(st, i) {
		if f := containedIn(unescapeUnicode(body, uescapeAfter(st, i)), names); f != "" {
			return f
		}
	}
	return containedIn(body, names)
}

// unicodeName reports whether the quoted name st[i] is a U&"..." one.
func unicodeName(st []sqltok.Token, i int) bool {
	return i >= 2 && st[i-1].Text == "&" && st[i-2].IsWord("u")
}

// uescapeAfter is the escape character a UESCAPE 'c' after st[i] names, or a backslash.
func uescapeAfter(st []sqltok.Token, i int) byte {
	if i+2 < len(st) && st[i+1].IsWord("uescape") && st[i+2].Kind == sqltok.String {
		if b, ok := stringBody(st[i+2].Text); ok && len(b) == 1 {
			return b[0]
		}
	}
	return '\\'
}

// literalForms are the texts the string literal st[i] may stand for: as written (doubled quotes
// undoubled), with backslash escapes read as PostgreSQL's E-strings and MySQL read them,
// with U& escapes read, and hex (X'..') decoded.
func literalForms(st []sqltok.Token, i int) []string {
	lit := st[i].Text
	body, ok := stringBody(lit)
	if !ok {
		return []string{lit}
	}
	prefix := strings.ToLower(lit[:strings.IndexAny(lit, `'"$`)])
	if q := lit[len(prefix) : len(prefix)+1]; q != "$" {
		body = strings.ReplaceAll(body, q+q, q)
	}
	forms := []string{body}
	if strings.IndexByte(body, '\\') >= 0 {
		forms = append(forms, unescapeBackslashes(body, true), unescapeBackslashes(body, false))
	}
	if esc := uescapeAfter(st, i); prefix == "u&" || esc != '\\' || strings.IndexByte(body, '\\') >= 0 {
		forms = append(forms, unescapeUnicode(body, esc))
	}
	if prefix == "x" {
		if b, err := hex.DecodeString(body); err == nil {
			forms = append(forms, string(b))
		}
	}
	return forms
}

// hexNumber is the text a MySQL hex number (0x4B494C4C) stands for in a string's place.
func hexNumber(n string) (string, bool) {
	if len(n) < 3 || n[0] != '0' || n[1]|0x20 != 'x' {
		return "", false
	}
	h := n[2:]
	if len(h)%2 == 1 {
		h = "0" + h
	}
	b, err := hex.DecodeString(h)
	return string(b), err == nil
}

// unescapeBackslashes reads the backslash escapes of s: PostgreSQL's E-string escapes (\xHH, octal,
// \uXXXX, \UXXXXXXXX) when pg is set, MySQL's otherwise (\x is x); both read \n \t \b \r \f,
// and any other escaped character as itself.
func unescapeBackslashes(s string, pg bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		c := s[i]
		switch {
		case c == 'n':
			b.WriteByte('\n')
		case c == 't':
			b.WriteByte('\t')
		case c == 'r':
			b.WriteByte('\r')
		case c == 'b':
			b.WriteByte('\b')
		case c == 'f':
			b.WriteByte('\f')
		case pg && c == 'x':
			v, n := readDigits(s[i+1:], 16, 2)
			if n == 0 {
				b.WriteByte('x')
				continue
			}
			b.WriteByte(byte(v))
			i += n
		case pg && c >= '0' && c <= '7':
			v, n := readDigits(s[i:], 8, 3)
			b.WriteByte(byte(v))
			i += n - 1
		case pg && (c == 'u' || c == 'U'):
			width := 4
			if c == 'U' {
				width = 8
			}
			v, n := readDigits(s[i+1:], 16, width)
			if n != width {
				b.WriteByte(c)
				continue
			}
			b.WriteRune(rune(v))
			i += n
		case !pg && c == '0':
			b.WriteByte(0)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// readDigits reads up to max digits of base at the start of s: their value and how many.
func readDigits(s string, base, max int) (v, n int) {
	for n < max && n < len(s) {
		d := digitValue(s[n])
		if d < 0 || d >= base {
			break
		}
		v = v*base + d
		n++
	}
	return v, n
}

func digitValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}

// unescapeUnicode reads the escapes of a U&"..." name or U&'...' string, esc standing for the
// backslash (UESCAPE): escXXXX, esc+XXXXXX, and a doubled esc for itself.
func unescapeUnicode(s string, esc byte) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != esc || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == esc {
			b.WriteByte(esc)
			i++
			continue
		}
		start, width := i+1, 4
		if s[i+1] == '+' {
			start, width = i+2, 6
		}
		v, n := readDigits(s[min(start, len(s)):], 16, width)
		if n != width || !utf8.ValidRune(rune(v)) {
			b.WriteByte(s[i])
			continue
		}
		b.WriteRune(rune(v))
		i = start + n - 1
	}
	return b.String()
}

// stringBody is the text between a string literal's quotes (its prefix and, for a dollar
// quote, its tag left off), with doubled quotes as they are; ok is false for a literal of
// another shape.
func stringBody(lit string) (string, bool) {
	i := strings.IndexAny(lit, `'"$`)
	if i < 0 {
		return "", false
	}
	if lit[i] == '$' {
		end := strings.IndexByte(lit[i+1:], '$')
		if end < 0 {
			return "", false
		}
		tag := lit[i : i+end+2]
		body := strings.TrimPrefix(lit[i:], tag)
		return strings.TrimSuffix(body, tag), true
	}
	body := lit[i+1:]
	return strings.TrimSuffix(body, lit[i:i+1]), true
}
