package proxy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Every client of a cluster reaches its engine as the same engine user, whose password and
// defaults the proxy's configuration holds, not any client. An engine lets a user change its own
// password and its own session defaults, and a database's owner that database's: through the
// proxy, one client would change every other client's sessions. On PostgreSQL 15, with a role
// that is no superuser, `ALTER ROLE CURRENT_USER SET statement_timeout = '1ms'` cancels every
// statement of every engine connection opened after it, `ALTER DATABASE d SET
// default_transaction_read_only = on` makes them all read-only, and `ALTER ROLE CURRENT_USER
// PASSWORD '...'` (MariaDB: `SET PASSWORD = ...`) keeps the proxy out of its own engine. So the
// proxy refuses, read as killers.go reads a statement (every engine's reading, text that runs,
// escapes decoded):
//   - ALTER, DROP or RENAME of a ROLE or USER that is the engine user (by name, or as
//     CURRENT_USER, SESSION_USER, CURRENT_ROLE), or of ALL roles; REVOKE ... FROM it;
//     MariaDB's SET PASSWORD of it (without FOR: the session's own user);
//   - what sets defaults for every session: PostgreSQL's ALTER SYSTEM, ALTER DATABASE ...
//     SET / RESET / WITH / CONNECTION LIMIT / ALLOW_CONNECTIONS, MariaDB's SET GLOBAL
//     (@@global., SET PERSIST), and MariaDB's SHUTDOWN.
// Other roles and users stay the client's to manage (CREATE ROLE app, ALTER ROLE app PASSWORD).

// selfRoleWords name the session's own user in a role or user position.
var selfRoleWords = []string{"current_user", "session_user", "current_role", "user"}

// engineUserWordsDeeper are what text that runs must hold for a reading of it to find one of
// these statements.
var engineUserWordsDeeper = []string{"alter", "drop", "rename", "revoke", "password", "global", "persist", "shutdown", "u&"}

// engineUserIn refuses req when it would change the engine user users names (those of the
// group's clusters; any, nil: the self forms only) or every session's defaults.
func engineUserIn(req *query.Request, users []string) error {
	a := req.Analysis()
	s := &killerScan{statement: func(st []sqltok.Token) string { return engineUserStatement(st, users) },
		deeper: engineUserWordsDeeper}
	for _, r := range engineReadings {
		toks := a.Tokens
		if r.d != a.Dialect || r.otherEscapes {
			toks = r.tokens(req.SQL)
		}
		if what, _ := s.killerIn(toks, r, 0); what != "" {
			return &query.Error{Code: query.CodeAccessDenied, Message: what +
				" is not allowed through QueryFlux: the engine user serves every client of the cluster, and what changes it (its password, its or its database's defaults) changes every client's sessions"}
		}
	}
	return nil
}

// engineUserStatement names the form of the statement st that changes the engine user or every
// session's defaults, or "".
func engineUserStatement(st []sqltok.Token, users []string) string {
	for i, t := range st {
		if t.Kind != sqltok.Word && (t.Kind != sqltok.Punct || t.Text != ",") {
			continue
		}
		next := func(k int) sqltok.Token {
			if i+k < len(st) {
				return st[i+k]
			}
			return sqltok.Token{}
		}
		switch {
		case t.IsWord("alter", "drop", "rename") && next(1).IsWord("role", "user", "group"):
			verb := strings.ToUpper(t.Text + " " + next(1).Text)
			if t.IsWord("alter") && next(2).IsWord("all") {
				return verb + " ALL"
			}
			if namesEngineUser(st, i+2, users) {
				return verb + " of the engine user"
			}
		case t.IsWord("revoke"):
			for k := i + 1; k < len(st); k++ {
				if st[k].IsWord("from") && namesEngineUser(st, k+1, users) {
					return "REVOKE ... FROM the engine user"
				}
			}
		case t.IsWord("alter") && next(1).IsWord("system"):
			return "ALTER SYSTEM"
		case t.IsWord("alter") && next(1).IsWord("database", "schema"):
			if what := databaseDefaults(st[i+2:]); what != "" {
				return "ALTER DATABASE ... " + what
			}
		case t.IsWord("set") && next(1).IsWord("password"):
			if !next(2).IsWord("for") || namesEngineUser(st, i+3, users) {
				return "SET PASSWORD of the engine user"
			}
		case t.IsWord("set") || t.Kind == sqltok.Punct && t.Text == ",":
			global := next(1).IsWord("global", "persist", "persist_only") && next(2).Kind == sqltok.Word || // not a column "global ="
				next(1).Text == "@@" && next(2).IsWord("global", "persist", "persist_only")
			if global && setStatement(st) {
				return "SET GLOBAL"
			}
		case t.IsWord("shutdown") && (i == 0 || st[i-1].IsWord("atomic", "begin", "then", "else", "do", "loop", "repeat")):
			return "SHUTDOWN"
		}
	}
	return ""
}

// databaseDefaults names what in the rest of an ALTER DATABASE (after its two words) sets every
// session's defaults or who may connect: SET (but MySQL's CHARACTER SET), RESET, WITH,
// CONNECTION LIMIT, ALLOW_CONNECTIONS; or "".
func databaseDefaults(rest []sqltok.Token) string {
	for k, t := range rest {
		switch {
		case t.IsWord("set") && (k == 0 || !rest[k-1].IsWord("character", "char")):
			return "SET"
		case t.IsWord("reset", "with", "connection", "allow_connections"):
			return strings.ToUpper(t.Text)
		}
	}
	return ""
}

// setStatement reports whether st is a SET statement (in a block's body too): its SET is not an
// UPDATE's or a CHARACTER SET.
func setStatement(st []sqltok.Token) bool {
	for i, t := range st {
		if t.IsWord("update") {
			return false
		}
		if t.IsWord("set") && (i == 0 || !st[i-1].IsWord("character", "char")) {
			return true
		}
	}
	return false
}

// namesEngineUser reports whether the role or user list at st[from:] (after IF EXISTS; each
// name after a top-level comma or RENAME's TO too) names the engine user: one of users, or the
// session's own user (CURRENT_USER, SESSION_USER, CURRENT_ROLE, MySQL's USER()).
func namesEngineUser(st []sqltok.Token, from int, users []string) bool {
	if from+1 < len(st) && st[from].IsWord("if") && st[from+1].IsWord("exists") {
		from += 2
	}
	depth := 0
	for k := from; k < len(st); k++ {
		t := st[k]
		if t.Kind == sqltok.Punct {
			switch t.Text {
			case "(":
				depth++
			case ")":
				depth--
			}
			continue
		}
		target := k == from || depth == 0 && (st[k-1].Kind == sqltok.Punct && st[k-1].Text == "," || st[k-1].IsWord("to"))
		if !target {
			continue
		}
		if t.Kind == sqltok.Word && t.IsWord(selfRoleWords...) && (!t.IsWord("user") || k+1 < len(st) && st[k+1].Text == "(") {
			return true
		}
		if name := roleNameAt(st, k); name != "" {
			for _, u := range users {
				if strings.EqualFold(name, u) {
					return true
				}
			}
		}
	}
	return false
}

// roleNameAt is the name st[k] spells in a role or user position: a word, a quoted name (U&"..."
// with its escapes read), MySQL's 'name' of 'name'@'host'; "" for anything else.
func roleNameAt(st []sqltok.Token, k int) string {
	t := st[k]
	if t.IsWord("u") && k+2 < len(st) && st[k+1].Text == "&" && st[k+2].Kind == sqltok.QuotedIdent && len(st[k+2].Text) >= 2 {
		q := st[k+2].Text
		return unescapeUnicode(strings.ReplaceAll(q[1:len(q)-1], `""`, `"`), uescapeAfter(st, k+2))
	}
	switch t.Kind {
	case sqltok.Word:
		return t.Text
	case sqltok.QuotedIdent, sqltok.String:
		if len(t.Text) >= 2 {
			q := t.Text[:1]
			return strings.ReplaceAll(t.Text[1:len(t.Text)-1], q+q, q)
		}
	}
	return ""
}

// engineUsersOf lists the engine users of a group's clusters (engine.UserNamer), each once.
func engineUsersOf(members []member) []string {
	var users []string
	for _, m := range members {
		n, ok := m.cluster.engine.(engine.UserNamer)
		if !ok {
			continue
		}
		if u := n.EngineUser(); u != "" && !containsFold(users, u) {
			users = append(users, u)
		}
	}
	return users
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
