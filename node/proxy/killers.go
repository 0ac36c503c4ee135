package proxy

import (
	"strings"

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
// What is looked for is what a statement can name lexically: KILL as a statement (also in a
// stored program's body, and in the text of EXECUTE IMMEDIATE or PREPARE ... FROM), the
// functions by name (bare, schema-qualified or quoted; also inside any string, where a DO
// block or a function body keeps its SQL), and MySQL's executable comments, which the engine
// runs. SQL assembled at run time from pieces ('pg_cancel' || '_backend') is not seen: the
// engine's grants are the defence there (docs/security.md).

// sessionKillerFuncs are the engine functions and procedures that end other sessions.
var sessionKillerFuncs = []string{"pg_cancel_backend", "pg_terminate_backend", "kill_query"}

// killWordsAfter are the tokens that make a KILL inside a statement a KILL statement: KILL
// [HARD | SOFT] [CONNECTION | QUERY [ID]] {id | USER name}.
var killWordsAfter = []string{"hard", "soft", "connection", "query", "user"}

// checkSessionKillers refuses req when it would end or cancel engine sessions.
func checkSessionKillers(req *query.Request) error {
	if !mayKillSessions(req.SQL) {
		return nil // nearly every statement: one scan of its bytes, no lexing
	}
	a := req.Analysis()
	for _, st := range a.Statements {
		if what := sessionKiller(st.Significant, a.Dialect, 0); what != "" {
			return &query.Error{Code: query.CodeAccessDenied, Message: what +
				" is not allowed through QueryFlux: the engine's sessions serve every client of the cluster;" +
				" cancel your own statement with your client's cancel"}
		}
	}
	for _, t := range a.Tokens { // MySQL and MariaDB run an executable comment's text
		if t.Kind == sqltok.Comment && isExecutableComment(t.Text) {
			if what := sessionKiller(sqltok.SignificantTokens(t.Text[2:], sqltok.MySQL), sqltok.MySQL, 0); what != "" {
				return &query.Error{Code: query.CodeAccessDenied, Message: what +
					" is not allowed through QueryFlux (in an executable comment): the engine's sessions serve every client of the cluster"}
			}
		}
	}
	return nil
}

// mayKillSessions is false for text that holds none of "kill", "_backend" and "u&" (an
// identifier with escapes) in any case: such a statement can name nothing sessionKiller looks for.
// Each of the three holds a k or an &, which nearly every statement lacks: those are ruled out
// by one pass eight bytes at a time (the three scans cost ~2,600 instructions per pgbench
// statement, a sixth of the passthrough's work per transaction; RESULTS.md, session 30).
func mayKillSessions(sql string) bool {
	if !holdsKOrAmpersand(sql) {
		return false
	}
	return sqltok.ContainsFold(sql, "kill") || sqltok.ContainsFold(sql, "_backend") || sqltok.ContainsFold(sql, "u&")
}

// holdsKOrAmpersand reports whether s holds a byte k, K or &. ContainsFold matches the k of
// "kill" and "_backend" only as an ASCII k or K (the first byte of "kill" is compared as a
// byte; a multi-byte rune folding to k, the Kelvin sign, leaves too few bytes for the rest
// of "_backend"), and & folds to nothing else.
func holdsKOrAmpersand(s string) bool {
	const ones = 0x0101010101010101
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		_ = w[7] // one bounds check: the compiler then reads the eight bytes as one word
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		k := x | 0x20*ones ^ 'k'*ones // a zero byte where x has k or K
		a := x ^ '&'*ones             // a zero byte where x has &
		if zeroBytes(k)|zeroBytes(a) != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c|0x20 == 'k' || c == '&' {
			return true
		}
	}
	return false
}

// zeroBytes has the top bit set of each zero byte of v, and no other bit: a byte's low seven
// bits plus 0x7f carry into its top bit unless they are all zero, and no sum carries into the
// next byte.
func zeroBytes(v uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((v&low7 + low7) | v | low7)
}

func isExecutableComment(c string) bool {
	return strings.HasPrefix(c, "/*!") || strings.HasPrefix(c, "/*M!") || strings.HasPrefix(c, "/*m!")
}

// sessionKiller names what in the statement toks would end engine sessions, or "". depth is
// how deep in statement texts (EXECUTE IMMEDIATE '...') toks are: one level is looked into.
func sessionKiller(toks []sqltok.Token, d sqltok.Dialect, depth int) string {
	for i, t := range toks {
		switch t.Kind {
		case sqltok.Word:
			if strings.EqualFold(t.Text, "kill") && killStatementAt(toks, i) {
				return "KILL"
			}
			if f := killerFunc(t.Text); f != "" {
				return f
			}
		case sqltok.QuotedIdent, sqltok.String:
			// A quoted name, or a string: a DO block's or a function's body, or (in another
			// dialect than the engine's) a name. U&"..." is lexed as three tokens.
			body := t.Text
			if i >= 2 && toks[i-1].Text == "&" && toks[i-2].IsWord("u") {
				body = unescapeUnicode(body)
			}
			for _, f := range sessionKillerFuncs {
				if sqltok.ContainsFold(body, f) {
					return f
				}
			}
			if depth > 0 || i == 0 || !toks[i-1].IsWord("immediate", "from") {
				continue // a value, not a statement's text
			}
			if inner, ok := stringBody(t.Text); ok {
				if what := sessionKiller(sqltok.SignificantTokens(inner, d), d, depth+1); what == "KILL" {
					return "KILL" // EXECUTE IMMEDIATE 'KILL ...', PREPARE s FROM 'KILL ...'
				}
			}
		}
	}
	return ""
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

// killerFunc is the session-ending function name is (its schema left off), or "".
func killerFunc(name string) string {
	for _, f := range sessionKillerFuncs {
		if strings.EqualFold(name, f) {
			return f
		}
	}
	return ""
}

// unescapeUnicode reads the \XXXX and \+XXXXXX escapes of a U&"..." identifier.
func unescapeUnicode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		n := 0
		switch {
		case s[i] != '\\' || i+1 == len(s):
		case s[i+1] == '\\':
			b.WriteByte('\\')
			i++
			continue
		case s[i+1] == '+':
			n = 6
		default:
			n = 4
		}
		start := i + 1
		if n == 6 {
			start++
		}
		if n == 0 || start+n > len(s) {
			b.WriteByte(s[i])
			continue
		}
		var r rune
		ok := true
		for _, c := range s[start : start+n] {
			switch {
			case c >= '0' && c <= '9':
				r = r*16 + c - '0'
			case c|0x20 >= 'a' && c|0x20 <= 'f':
				r = r*16 + (c | 0x20 - 'a') + 10
			default:
				ok = false
			}
		}
		if !ok {
			b.WriteByte(s[i])
			continue
		}
		b.WriteRune(r)
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
