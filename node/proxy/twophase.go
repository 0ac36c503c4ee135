package proxy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Two-phase commit is refused through QueryFlux, whatever the client's protocol and the group's
// engine. A prepared two-phase transaction outlives the engine session that prepared it and is
// named by a gid global to the engine: MariaDB's XA RECOVER lists every session's, and any
// session of the engine user may XA COMMIT or XA ROLLBACK one; PostgreSQL's pg_prepared_xacts
// lists them and COMMIT PREPARED / ROLLBACK PREPARED finish any of them. Every client of a
// cluster reaches its engine as the same engine user, often over a pooled connection, so one
// client's prepared transaction would be every other client's to see and finish.
//
// What is refused is a two-phase statement (sqltok.TwoPhase) wherever an engine would run one,
// in every engine's reading of the text (killers.go's engineReadings):
//   - a statement of the request (its statements split at semicolons), with MySQL's executable
//     comments (/*! */, /*M! */, of any version) spliced into the text around them as MySQL and
//     MariaDB run them (SELECT 1 /*!;*/ XA RECOVER is two statements), and read alone;
//   - a statement inside another that is not a query nor DML: MariaDB runs XA in a stored
//     procedure's, an event's and an anonymous block's (BEGIN NOT ATOMIC ... END) body, where
//     it may follow BEGIN, THEN, DO, a label...; there XA followed by one of XA's verbs, or
//     PREPARE TRANSACTION, COMMIT PREPARED, ROLLBACK PREPARED, are refused wherever they stand;
//   - a literal the engine runs as SQL: PREPARE ... FROM, EXECUTE IMMEDIATE, a PL/pgSQL
//     EXECUTE, a DO block's or a function's body, the argument of a function that runs text
//     (dblink_exec, query_to_xml, cron.schedule: runtimesql.go's runTextFuncs), escapes and hex
//     decoded, as deep as textDepthMax.
//
// Any other string is a value, and passes: SELECT 'XA RECOVER', SET @q = 'XA RECOVER',
// lower('XA RECOVER'), COMMENT ... IS 'commit prepared'. SQL a user variable or an expression
// holds never runs through the proxy (runtimesql.go refuses PREPARE ... FROM @q and EXECUTE
// IMMEDIATE of anything but one literal, in every group). So do quoted names and comments.

// twoPhaseWords are what text must hold (in any case) for a reading of it to find a two-phase
// statement; "u&" may spell either. sharedNeedsOf finds them (needTwoPhase) in the one scan the
// shared engine user's checks make of a statement (statement.go's checkSharedEngineUserAs, which
// runs this check among those), and a text holding none of them, nor any other check's words,
// is remembered as plain: a client's next statement of its kind is not scanned again.
var twoPhaseWords = []string{"xa", "prepare", "u&"}

// xaVerbs are the words after XA that make an XA statement.
var xaVerbs = []string{"start", "begin", "end", "prepare", "commit", "rollback", "recover"}

// checkTwoPhase refuses req when any of its statements is a two-phase commit statement, or
// would have the engine run one. Run it on text that may hold one (needTwoPhase).
func checkTwoPhase(req *query.Request) error {
	a := req.Analysis()
	s := &twoPhaseScan{}
	for _, r := range engineReadings {
		toks := a.Tokens
		if r.d != a.Dialect || r.otherEscapes {
			toks = r.tokens(req.SQL)
		}
		if what := s.in(toks, r, 0); what != "" {
			return &query.Error{Code: sqlstate.FeatureNotSupported, Message: "This version of QueryFlux doesn't yet support '" + what +
				"': two-phase (XA, PREPARE TRANSACTION) transactions are not supported, since a prepared one outlives its connection and every client of the engine user could see and finish it; use BEGIN and COMMIT"}
		}
	}
	return nil
}

// mayTwoPhase is false for text that holds none of twoPhaseWords, no backslash escape that may
// stand for a letter and no hex literal (sharedNeedsOf reports those as every check's need).
func mayTwoPhase(sql string) bool { return sharedNeedsOf(sql)&needTwoPhase != 0 }

// twoPhaseScan is one request's check: how much text it has read.
type twoPhaseScan struct{ textReads }

// in names the two-phase statement an engine reading toks as r would run, or "". depth is how
// deep in text run as SQL toks are.
func (s *twoPhaseScan) in(toks []sqltok.Token, r engineReading, depth int) string {
	if what := s.statementsIn(toks, depth); what != "" {
		return what
	}
	if r.d != sqltok.MySQL {
		return ""
	}
	spliced := false
	for _, t := range toks {
		if t.Kind != sqltok.Comment || !isExecutableComment(t.Text) {
			continue
		}
		spliced = true
		if what := s.read([]string{executableText(t.Text)}, []engineReading{r}, depth); what != "" {
			return what // the comment's text alone (one that would not close where it is spliced)
		}
	}
	if spliced {
		return s.read([]string{spliceExecutableComments(toks)}, []engineReading{r}, depth)
	}
	return ""
}

// statementsIn names the two-phase statement one of toks' statements is or runs, or "".
func (s *twoPhaseScan) statementsIn(toks []sqltok.Token, depth int) string {
	for _, st := range splitStatements(toks) {
		if what := twoPhaseStatement(st); what != "" {
			return what
		}
		for i := range st {
			if forms := textRunAt(st, i); forms != nil {
				if what := s.read(forms, engineReadings, depth); what != "" {
					return what
				}
			}
		}
	}
	return ""
}

// read reads text an engine runs (each form of a literal) as SQL in each of readings, one
// level deeper.
func (s *twoPhaseScan) read(forms []string, readings []engineReading, depth int) string {
	return s.readForms(forms, readings, depth, mayTwoPhase, s.in)
}

// twoPhaseStatement names the two-phase statement st (a statement's significant tokens) is or
// holds in a stored program's body, or "".
func twoPhaseStatement(st []sqltok.Token) string {
	if what := sqltok.TwoPhase(st); what != "" {
		return what
	}
	if len(st) == 0 || st[0].Text == "(" || st[0].IsWord(valueLeaders...) {
		return "" // a query or DML holds no statement
	}
	for i := 1; i < len(st); i++ {
		switch {
		case st[i].IsWord("xa"):
			if i+1 < len(st) && st[i+1].IsWord(xaVerbs...) {
				return "XA " + strings.ToUpper(st[i+1].Text)
			}
		case st[i].IsWord("prepare", "commit", "rollback"):
			if what := sqltok.TwoPhase(st[i:]); what != "" {
				return what
			}
		}
	}
	return ""
}

// valueLeaders are the words that start a query or a DML statement, whose strings are values.
var valueLeaders = []string{"select", "with", "insert", "update", "delete", "merge", "values", "table", "explain", "replace"}

// textRunAt is the forms of the literal st[i] starts when an engine runs it as SQL, or nil:
// the literal after PREPARE ... FROM, EXECUTE [IMMEDIATE], a function's AS (its body), DO [LANGUAGE
// name], and a literal argument of a function that runs text.
func textRunAt(st []sqltok.Token, i int) []string {
	if i == 0 {
		return nil
	}
	prev := st[i-1]
	switch {
	case prev.IsWord("execute", "immediate"),
		prev.IsWord("from") && i == 3 && st[0].IsWord("prepare"),
		prev.IsWord("as") && createsRoutine(st),
		st[0].IsWord("do") && (i == 1 || i == 3 && st[1].IsWord("language")),
		(prev.Text == "(" || prev.Text == ",") && inRunTextCall(st, i):
		forms, _, _ := literalTexts(st, i)
		return forms
	}
	return nil
}

// inRunTextCall reports whether st[i] is in the arguments of a call of a function that runs
// text (runTextFuncAt).
func inRunTextCall(st []sqltok.Token, i int) bool {
	depth := 0
	for j := i - 1; j > 0; j-- {
		switch st[j].Text {
		case ")":
			depth++
		case "(":
			if depth == 0 {
				return runTextFuncAt(st, j-1) != ""
			}
			depth--
		}
	}
	return false
}
