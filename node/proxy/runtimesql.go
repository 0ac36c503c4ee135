package proxy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// The checks that keep the clients of a shared engine user apart (killers.go, activity.go,
// serverfiles.go) read a statement's text, and text the engine runs as SQL when the statement
// holds it as a literal. SQL assembled at run time escapes them all: MySQL's
// SET @q = CONCAT('KI', 'LL ', id); PREPARE s FROM @q, EXECUTE IMMEDIATE CONCAT(...), a
// PostgreSQL DO block that EXECUTEs 'select pg_' || 'cancel_backend(...)' or format(...),
// query_to_xml or dblink handed an expression, a function that does any of these created
// first and called later, and literals an engine joins (MySQL's 'KI' 'LL 5', PostgreSQL's
// 'pg_cancel_' <newline> 'backend(...)') that a reader of one literal sees as two harmless
// halves. Every client of the cluster could so end another's engine session, read its
// statements, or reach the engine host's files.
//
// So text an engine runs as SQL must reach it as one literal, which the checks then read:
// wherever a statement hands the engine text to run (PREPARE ... FROM, EXECUTE IMMEDIATE, a
// PL/pgSQL EXECUTE, a DO block's or a function's body, the functions that run a query given as
// text), anything else (a user variable, a routine's variable or parameter, an expression, a
// literal continued by another) is refused; so are routines in languages that build and run
// SQL out of sight (PL/Python, PL/Perl, PL/Tcl, PL/v8, C, internal), and the functions that run
// text named anywhere but in a call (CREATE OPERATOR ... FUNCTION = dblink_exec). The
// statement is read the way each engine may read it, as the other checks read it, and the text
// inside, as deep as they read.

// runTextFuncs are the functions that run SQL given as text: PostgreSQL's query_to_xml
// family and ts_stat, dblink's, pg_background's, and MariaDB's sys.execute_prepared_stmt.
var runTextFuncs = []string{"query_to_xml", "query_to_xml_and_xmlschema", "query_to_xmlschema", "ts_stat",
	"dblink", "dblink_exec", "dblink_send_query", "dblink_open", "pg_background_launch", "execute_prepared_stmt"}

// cronRunTextFuncs run SQL given as text when qualified by pg_cron's schema (cron.schedule).
var cronRunTextFuncs = []string{"schedule", "schedule_in_database", "alter_job"}

// routineLanguages are the languages a DO block or a function may be written in through the
// proxy: SQL (no dynamic SQL) and PL/pgSQL, whose only dynamic SQL, EXECUTE, is checked.
var routineLanguages = []string{"sql", "plpgsql"}

// literalFollowers are the words that may follow the literal a PREPARE ... FROM, EXECUTE
// IMMEDIATE or PL/pgSQL EXECUTE runs (USING its parameters, INTO its result, FOR ... IN
// EXECUTE ... LOOP).
var literalFollowers = []string{"using", "into", "loop"}

// runTimeScan is one statement's check: how much text it has read.
type runTimeScan struct{ textReads }

// checkRunTimeSQL refuses req when it would have an engine run SQL that is not a literal the
// proxy reads.
func checkRunTimeSQL(req *query.Request) error {
	if !mayRunTimeSQL(req.SQL) {
		return nil
	}
	return runTimeSQLIn(req)
}

// runTimeSQLIn is checkRunTimeSQL past its scan.
func runTimeSQLIn(req *query.Request) error {
	a := req.Analysis()
	s := &runTimeScan{}
	readings := engineReadings
	if readingsAgree(req.SQL) {
		readings = []engineReading{{d: a.Dialect}} // the request's own reading is every engine's
	}
	for _, r := range readings {
		toks := a.Tokens
		if r.d != a.Dialect || r.otherEscapes {
			toks = r.tokens(req.SQL)
		}
		what := s.in(toks, r, 0)
		if what == "" && r.d == sqltok.MySQL && executableComment(req.SQL) {
			// MySQL splices an executable comment's text into the statement around it:
			// EXECUTE /*!IMMEDIATE*/ CONCAT(...), EXECUTE IMMEDIATE 'KI' /*!'LL 5'*/.
			what = s.in(r.tokens(spliceExecutableComments(toks)), r, 0)
		}
		if what != "" {
			return &query.Error{Code: query.CodeAccessDenied, Message: what +
				" is not allowed through QueryFlux: every client of the cluster shares its engine user, and SQL assembled at run time" +
				" escapes the checks that keep clients apart; give the engine the statement as one literal"}
		}
	}
	return nil
}

// spliceExecutableComments is the text of toks with each MySQL executable comment (/*! */,
// /*M! */, of any version) replaced by its text, as MySQL and MariaDB run it.
func spliceExecutableComments(toks []sqltok.Token) string {
	var b strings.Builder
	for _, t := range toks {
		if t.Kind == sqltok.Comment && isExecutableComment(t.Text) {
			b.WriteString(" " + executableText(t.Text) + " ")
			continue
		}
		b.WriteString(t.Text)
	}
	return b.String()
}

// readingsAgree reports whether every engine reading splits sql into the same strings,
// names and comments: it has none of the bytes where they part (a backslash, a double quote,
// a backquote, #, $, and the / and - that start comments). trino-go-client's EXECUTE
// IMMEDIATE '...' USING ... is then read once, not five times.
func readingsAgree(sql string) bool { return !strings.ContainsAny(sql, "\\\"`#$/-") }

// mayRunTimeSQL is false for text that has none of the words the check looks for at the start
// of a word (each is a name of its own, or after a "." or a quote), "u&" and a backslash
// escape that may stand for a letter: one pass that looks only at the first byte of each
// word, no allocation.
func mayRunTimeSQL(sql string) bool {
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		if c == '\\' {
			if i+1 < len(sql) && sql[i+1] != '\\' && escapesToNameByte(sql[i+1]) {
				return true
			}
			i++
			continue
		}
		if !sqltok.IsNameByte(c) {
			continue
		}
		if runTimeWordAt(sql, i) {
			return true
		}
		for i+1 < len(sql) && sqltok.IsNameByte(sql[i+1]) {
			i++ // the rest of the word
		}
	}
	return false
}

// runTimeWordAt reports whether a word mayRunTimeSQL looks for starts at sql[i].
func runTimeWordAt(sql string, i int) bool {
	var words []string
	switch sql[i] | 0x20 {
	case 'e':
		words = runTimeWordsE
	case 'p':
		words = runTimeWordsP
	case 'f':
		words = runTimeWordsF
	case 'q':
		words = runTimeWordsQ
	case 't':
		words = runTimeWordsT
	case 'l':
		words = runTimeWordsL
	case 's':
		words = runTimeWordsS
	case 'a':
		words = runTimeWordsA
	case 'u':
		return i+1 < len(sql) && sql[i+1] == '&'
	case 'd':
		return hasFoldAt(sql, i, "dblink") || doStatementAt(sql, i)
	}
	for _, w := range words {
		if hasFoldAt(sql, i, w) {
			return true
		}
	}
	return false
}

var (
	runTimeWordsE = []string{"execute"}
	runTimeWordsP = []string{"prepare", "procedure", "pg_background"}
	runTimeWordsF = []string{"function"}
	runTimeWordsQ = []string{"query_to_xml"}
	runTimeWordsT = []string{"ts_stat"}
	runTimeWordsL = []string{"language"}
	runTimeWordsS = []string{"schedule"}
	runTimeWordsA = []string{"alter_job"}
)

// doStatementAt reports whether sql[i:] starts the word DO (a DO block, MySQL's DO), other
// than PostgreSQL's ON CONFLICT DO NOTHING | UPDATE and a rule's DO INSTEAD | ALSO.
func doStatementAt(sql string, i int) bool {
	if !hasFoldAt(sql, i, "do") || i > 0 && sqltok.IsNameByte(sql[i-1]) || i+2 < len(sql) && sqltok.IsNameByte(sql[i+2]) {
		return false
	}
	j := i + 2
	for j < len(sql) && (sql[j] == ' ' || sql[j] == '\n' || sql[j] == '\t' || sql[j] == '\r') {
		j++
	}
	for _, w := range []string{"nothing", "update", "instead", "also"} {
		if hasFoldAt(sql, j, w) && (j+len(w) == len(sql) || !sqltok.IsNameByte(sql[j+len(w)])) {
			return false
		}
	}
	return true
}

// in names what in the statements of toks (one reading of some text, depth levels deep in
// text run as SQL) would run SQL the proxy cannot read, or "".
func (s *runTimeScan) in(toks []sqltok.Token, r engineReading, depth int) string {
	for _, st := range splitStatements(toks) {
		if what := s.statement(st, r, depth); what != "" {
			return what
		}
	}
	for _, t := range toks {
		if t.Kind != sqltok.Comment || !isExecutableComment(t.Text) {
			continue
		}
		if !s.another() {
			return tooIntricate
		}
		inner := sqltok.Tokenize(executableText(t.Text), sqltok.MySQL)
		for _, st := range splitStatements(inner) {
			if what := s.statement(st, engineReading{d: sqltok.MySQL}, depth); what != "" {
				return what
			}
		}
	}
	return ""
}

// statement names what in the statement st (its significant tokens) would run SQL the proxy
// cannot read, or "".
func (s *runTimeScan) statement(st []sqltok.Token, r engineReading, depth int) string {
	if len(st) == 0 {
		return ""
	}
	routine := createsRoutine(st)
	if st[0].IsWord("do") && len(st) > 1 && (st[1].Kind == sqltok.String || st[1].IsWord("language")) {
		return s.doBlock(st, r, depth)
	}
	parens := 0
	for i := 0; i < len(st); i++ {
		t := st[i]
		switch t.Kind {
		case sqltok.Punct:
			switch t.Text {
			case "(":
				parens++
			case ")":
				parens--
			}
		case sqltok.Word:
			switch {
			case t.IsWord("prepare") && i+2 < len(st) && st[i+2].IsWord("from") && prepareAt(st, i):
				if inlineStatementAt(st, i+3) {
					continue // Trino's PREPARE s FROM SELECT ...: the statement is there to read
				}
				if what := s.literalAt(st, i+3, r, depth, "PREPARE ... FROM"); what != "" {
					return what
				}
			case t.IsWord("execute") && i+1 < len(st) && st[i+1].IsWord("immediate"):
				if what := s.literalAt(st, i+2, r, depth, "EXECUTE IMMEDIATE"); what != "" {
					return what
				}
			case t.IsWord("execute") && depth > 0 && (i+1 == len(st) || !st[i+1].IsWord("function", "procedure", "immediate")):
				// PL/pgSQL's EXECUTE (in a DO block's or a function's body) runs an expression.
				if what := s.literalAt(st, i+1, r, depth, "EXECUTE"); what != "" {
					return what
				}
			case routine && parens == 0 && t.IsWord("language"):
				if i+1 == len(st) || languageOf(st[i+1]) == "" || nameIn(languageOf(st[i+1]), routineLanguages) == "" {
					return "a routine in a language other than SQL and PL/pgSQL"
				}
			case routine && t.IsWord("soname"):
				return "a function loaded from a shared library (SONAME)"
			case routine && parens == 0 && t.IsWord("as") && i+1 < len(st) && startsLiteral(st, i+1):
				if what := s.body(st, i+1, r, depth); what != "" {
					return what
				}
			default:
				if f := runTextFuncAt(st, i); f != "" {
					if what := s.runTextCall(st, i, f, r, depth); what != "" {
						return what
					}
				}
			}
		case sqltok.QuotedIdent:
			if f := quotedNameIn(st, i, runTextFuncs); f != "" {
				if what := s.runTextCall(st, i, f, r, depth); what != "" {
					return what
				}
			}
		case sqltok.String:
			if t.Text[0] == '"' { // MySQL's "..." is a name under ANSI_QUOTES
				if f := quotedNameIn(st, i, runTextFuncs); f != "" && i+1 < len(st) && st[i+1].Text == "(" {
					if what := s.runTextCall(st, i, f, r, depth); what != "" {
						return what
					}
				}
			}
		}
	}
	return ""
}

// createsRoutine reports whether st creates a function or a procedure (CREATE [OR REPLACE]
// [DEFINER = ...] [AGGREGATE] FUNCTION | PROCEDURE).
func createsRoutine(st []sqltok.Token) bool {
	if !st[0].IsWord("create") {
		return false
	}
	for _, t := range st[1:min(len(st), 12)] {
		if t.IsWord("function", "procedure") {
			return true
		}
		if t.IsWord("table", "view", "index", "trigger", "event", "extension") {
			return false
		}
	}
	return false
}

// prepareAt reports whether the word PREPARE at st[i] starts a PREPARE statement (not a
// column named prepare, SELECT prepare x FROM t).
func prepareAt(st []sqltok.Token, i int) bool {
	if i == 0 {
		return true
	}
	p := st[i-1]
	return !(p.Kind == sqltok.Punct && (p.Text == "," || p.Text == "(" || p.Text == ".") || p.IsWord("select", "distinct", "all", "as", "by"))
}

// inlineStatementWords start a statement written out after PREPARE ... FROM (Trino's form);
// each is reserved in MySQL and MariaDB, so no routine variable there has its name.
var inlineStatementWords = []string{"select", "with", "insert", "update", "delete", "values", "table", "show", "describe",
	"desc", "explain", "create", "drop", "alter", "call", "set", "grant", "revoke", "analyze", "use"}

// inlineStatementAt reports whether a statement written out starts at st[i]: one of
// inlineStatementWords, not called (MySQL's INSERT(str, pos, len, new) makes text).
func inlineStatementAt(st []sqltok.Token, i int) bool {
	return i < len(st) && st[i].IsWord(inlineStatementWords...) && (i+1 == len(st) || st[i+1].Text != "(")
}

// languageOf is the language the token names (LANGUAGE plpgsql, LANGUAGE 'plpgsql'), or "".
func languageOf(t sqltok.Token) string {
	switch t.Kind {
	case sqltok.Word:
		return t.Text
	case sqltok.String, sqltok.QuotedIdent:
		if b, ok := stringBody(t.Text); ok {
			return b
		}
	}
	return ""
}

// doBlock checks a DO statement: DO [LANGUAGE l] 'body' [LANGUAGE l], its body one literal.
func (s *runTimeScan) doBlock(st []sqltok.Token, r engineReading, depth int) string {
	i := 1
	if st[i].IsWord("language") {
		if i+1 == len(st) || nameIn(languageOf(st[i+1]), routineLanguages) == "" {
			return "a DO block in a language other than PL/pgSQL and SQL"
		}
		i += 2
	}
	if _, _, ok := literalTexts(st, i); !ok {
		return "" // no block in this reading (MySQL's DO evaluates expressions)
	}
	return s.body(st, i, r, depth)
}

// body checks a DO block's or a routine's body, the literal at st[i]: one literal (not one an
// engine joins to the next), with no dynamic SQL it cannot read in it.
func (s *runTimeScan) body(st []sqltok.Token, i int, r engineReading, depth int) string {
	forms, next, ok := literalTexts(st, i)
	if !ok {
		return "a body that is not one literal"
	}
	if next < len(st) {
		switch n := st[next]; {
		case n.IsWord("language"):
			if next+1 == len(st) || nameIn(languageOf(st[next+1]), routineLanguages) == "" {
				return "a routine in a language other than SQL and PL/pgSQL"
			}
		case n.Kind == sqltok.String || n.Kind == sqltok.Operator || n.Kind == sqltok.Number:
			return "a body continued by another literal or an expression"
		}
	}
	return s.readText(forms, depth)
}

// literalAt checks the text a PREPARE ... FROM, EXECUTE IMMEDIATE or PL/pgSQL EXECUTE runs,
// which begins at st[i]: one literal, followed by nothing or USING / INTO / LOOP.
func (s *runTimeScan) literalAt(st []sqltok.Token, i int, r engineReading, depth int, what string) string {
	forms, next, ok := literalTexts(st, i)
	if !ok {
		switch {
		case i == len(st):
			return what + " of no text"
		case st[i].Kind == sqltok.Operator && strings.HasPrefix(st[i].Text, "@"):
			return what + " of a user variable"
		case st[i].Kind == sqltok.Param:
			return what + " of a parameter"
		}
		return what + " of an expression or a variable"
	}
	if next < len(st) && !st[next].IsWord(literalFollowers...) {
		return what + " of text assembled at run time (a literal continued by another or an expression)"
	}
	return s.readText(forms, depth)
}

// runTextCall checks a call of f, a function that runs SQL given as text, at st[i]: named
// outside a call (an operator or a cast made of it) it is refused; called, each argument must
// be one literal (a name => literal too), whose text is read in turn.
func (s *runTimeScan) runTextCall(st []sqltok.Token, i int, f string, r engineReading, depth int) string {
	if i+1 == len(st) || st[i+1].Text != "(" {
		if len(st) > 1 && st[0].IsWord("create", "alter") && !st[1].IsWord("extension") {
			return f + " named outside a call"
		}
		return ""
	}
	j := i + 2
	for j < len(st) {
		if st[j].Text == ")" {
			return ""
		}
		if j+1 < len(st) && (st[j].Kind == sqltok.Word || st[j].Kind == sqltok.QuotedIdent) &&
			st[j+1].Kind == sqltok.Operator && (st[j+1].Text == "=>" || st[j+1].Text == ":=") {
			j += 2 // a named argument
		}
		var forms []string
		next := j + 1
		switch t := st[j]; {
		case t.Kind == sqltok.Number, t.IsWord("true", "false", "null"):
		default:
			var ok bool
			if forms, next, ok = literalTexts(st, j); !ok {
				return f + " of an expression or a variable"
			}
		}
		if next == len(st) || st[next].Text != "," && st[next].Text != ")" {
			return f + " of text assembled at run time (a literal continued by another or an expression)"
		}
		if what := s.readText(forms, depth); what != "" {
			return what
		}
		j = next
		if st[j].Text == "," {
			j++
		}
	}
	return f + " of an unfinished call"
}

// runTextFuncAt is the function that runs SQL given as text the word st[i] names, or "".
func runTextFuncAt(st []sqltok.Token, i int) string {
	t := st[i]
	if f := nameIn(t.Text, runTextFuncs); f != "" {
		if i > 0 && st[i-1].IsWord("into", "table", "update", "references") {
			return "" // a table of that name
		}
		return f
	}
	if f := nameIn(t.Text, cronRunTextFuncs); f != "" && i >= 2 && st[i-1].Text == "." && st[i-2].IsWord("cron") {
		return "cron." + f
	}
	return ""
}

// startsLiteral reports whether a string literal starts at st[i] (after a charset introducer).
func startsLiteral(st []sqltok.Token, i int) bool {
	if st[i].Kind == sqltok.Word && strings.HasPrefix(st[i].Text, "_") && i+1 < len(st) {
		i++
	}
	return st[i].Kind == sqltok.String
}

// literalTexts are the texts the literal at st[i] may stand for (a string, after a MySQL
// charset introducer, with a U& string's UESCAPE; a MySQL hex number), and the index of the
// token after it; ok is false if no literal starts there.
func literalTexts(st []sqltok.Token, i int) (forms []string, next int, ok bool) {
	if i >= len(st) {
		return nil, i, false
	}
	if st[i].Kind == sqltok.Word && strings.HasPrefix(st[i].Text, "_") && i+1 < len(st) && st[i+1].Kind == sqltok.String {
		i++ // _utf8mb4'...'
	}
	switch t := st[i]; t.Kind {
	case sqltok.String:
		next = i + 1
		if next+1 < len(st) && st[next].IsWord("uescape") && st[next+1].Kind == sqltok.String {
			next += 2
		}
		return literalForms(st, i), next, true
	case sqltok.Number:
		if text, isHex := hexNumber(t.Text); isHex {
			return []string{text}, i + 1, true
		}
	}
	return nil, i, false
}

// readText reads text the engine runs (each form of a literal) as SQL, in every engine's
// reading, one level deeper.
func (s *runTimeScan) readText(forms []string, depth int) string {
	return s.readForms(forms, engineReadings, depth, mayRunTimeSQL, s.in)
}

func hasFoldAt(s string, i int, word string) bool {
	return i+len(word) <= len(s) && strings.EqualFold(s[i:i+len(word)], word)
}
