package proxy

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Every client of a cluster reaches its engine as the same engine user, and an engine shows a
// user every statement its sessions run: pg_stat_activity, SHOW PROCESSLIST and
// information_schema.PROCESSLIST. Through the proxy those are every other client's statements,
// literals included (a password in ALTER USER ... PASSWORD, a token in a WHERE). So each
// client sees only the engine session it holds, as an engine shows a user without the
// privilege to see others: the views are narrowed, in the statement's text, to the session
// that runs it (pid = pg_backend_pid(), ID = CONNECTION_ID(), which the engine answers), on
// every frontend, passthrough or not. What cannot be narrowed is refused (42501): the
// functions under pg_stat_activity, pg_stat_statements, performance_schema's statement
// tables, the sys schema, INNODB_TRX and SHOW ENGINE INNODB STATUS (which show statement
// text), MariaDB's SHOW EXPLAIN / ANALYZE FOR and EXPLAIN FOR CONNECTION (another session's
// plan), Trino's system.runtime.queries, and any of these named in text the engine may run
// (a DO block, a function body, EXECUTE, a string handed to a function) or placed where the
// engines' readings of the statement disagree (escapes, comments), where no rewrite can be
// sure of what the engine reads.

const (
	// ownActivity is pg_stat_activity narrowed to the session that reads it.
	ownActivity = "(SELECT * FROM pg_catalog.pg_stat_activity WHERE pid = pg_catalog.pg_backend_pid())"
	// ownProcesslist is information_schema.PROCESSLIST narrowed to the session that reads it.
	ownProcesslist = "(SELECT * FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID())"
	// ownPreparedXacts is pg_prepared_xacts as a client of the proxy has it: empty, since no
	// client can prepare a transaction through the proxy (twophase.go), and the engine's
	// (another's, made around the proxy) are not a client's to see: gids, owners, databases.
	ownPreparedXacts = "(SELECT * FROM pg_catalog.pg_prepared_xacts WHERE false)"
	// showProcesslist answers SHOW FULL PROCESSLIST (the columns MySQL and MariaDB share);
	// showProcesslistShort SHOW PROCESSLIST, whose Info is cut at 100 characters.
	showProcesslist      = "SELECT ID AS Id, USER AS User, HOST AS Host, DB AS db, COMMAND AS Command, TIME AS Time, STATE AS State, INFO AS Info FROM " + ownProcesslist + " AS p"
	showProcesslistShort = "SELECT ID AS Id, USER AS User, HOST AS Host, DB AS db, COMMAND AS Command, TIME AS Time, STATE AS State, LEFT(INFO, 100) AS Info FROM " + ownProcesslist + " AS p"
)

// sessionViewNames are looked for in text an engine may run and where readings disagree.
var sessionViewNames = []string{"pg_stat_activity", "pg_stat_get_activity", "pg_stat_get_backend_activity",
	"pg_stat_statements", "processlist", "innodb_trx", "performance_schema", "events_statements", "runtime.queries",
	"information_schema", // whose table names MariaDB folds: PROCESSL\u0130ST
	"pg_prepared_xact"}   // the function and the view

// refusedViews are names that show other sessions' statements and are refused wherever they
// stand; performanceSchemaText the performance_schema tables that hold statement text.
var (
	refusedViews          = []string{"pg_stat_get_activity", "pg_stat_get_backend_activity", "pg_stat_statements", "pg_prepared_xact"}
	performanceSchemaText = []string{"threads", "events_statements_current", "events_statements_history",
		"events_statements_history_long", "events_statements_summary_by_digest", "prepared_statements_instances",
		"events_transactions_current", "events_transactions_history", "events_transactions_history_long"} // the last three: XA xids
	sysProcesslists = []string{"processlist", "x$processlist", "session", "x$session"}
)

// maySeeSessions is false for text that can name no view of the engine's sessions
// (sharedNeedsOf: one pass, no allocation; a PostgreSQL client's every new Parse pays it),
// and a MySQL client's current database is none of the schemas that hold them.
func maySeeSessions(sql, database string) bool {
	if isSystemSchema(database) {
		return true
	}
	return sharedNeedsOf(sql)&needSessions != 0
}

// isSystemSchema is isSchema(name, "information_schema", "performance_schema", "sys"), the
// schemas that show the engine's sessions, which every MySQL statement asks: a name of a length
// none of them can have (isSchema's bounds: 3-9 bytes for sys, 18-54 for the others) is none
// of them at once, and a short one only sys.
func isSystemSchema(name string) bool {
	switch n := len(name); {
	case n >= 3 && n <= 9:
		if name[0] < utf8.RuneSelf && name[0]|0x20 != 's' {
			return false // isSchema's first-byte test, without its call
		}
		return isSchema(name, "sys")
	case n >= 18 && n <= 54:
		return isSchema(name, "information_schema", "performance_schema")
	}
	return false
}

func isSchema(name string, schemas ...string) bool {
	for _, s := range schemas {
		// Each schema is ASCII: a name equal to it under Unicode folding is as long in bytes,
		// or longer by its non-ASCII letters ('ſ', 'K': 2 and 3 bytes for s and k), never
		// shorter nor more than 3 times as long. Every statement asks (statement.go).
		if len(name) < len(s) || len(name) > 3*len(s) {
			continue
		}
		// An ASCII first byte folds only to its other case (each schema starts with a lower-case
		// letter): most names differ there, without EqualFold's call.
		if len(s) > 0 && name[0] < utf8.RuneSelf && name[0]|0x20 != s[0] {
			continue
		}
		if strings.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// HideOtherSessions is sql with the engine's views of its sessions narrowed to the session that
// runs it, or the error refusing a statement that reads them where they cannot be narrowed:
// what the core does to every statement it checks, for a frontend that sends a statement's
// text to an engine before the core checks it (a PostgreSQL Parse relayed ahead of its
// Execute). database is the client's current database (a MySQL client's schema).
func HideOtherSessions(sql, protocol, database string) (string, error) {
	req := &query.Request{SQL: sql, Protocol: protocol, Database: database}
	if err := hideOtherSessions(req); err != nil {
		return "", err
	}
	return req.SQL, nil
}

// MaySeeSessions reports cheaply whether HideOtherSessions may change or refuse sql.
func MaySeeSessions(sql, database string) bool { return maySeeSessions(sql, database) }

// hideOtherSessions narrows req.SQL's views of the engine's sessions (the text the engine is
// sent; ClientSQL keeps the client's), or refuses it.
func hideOtherSessions(req *query.Request) error {
	database := sessionsDatabase(req)
	if !maySeeSessions(req.SQL, database) {
		return nil
	}
	return narrowSessions(req, database)
}

// sessionsDatabase is the database req's names are looked up in when they may be views of
// the engine's sessions: a MySQL client's, a schema; "" for the others.
func sessionsDatabase(req *query.Request) string {
	if req.Protocol == query.ProtocolMySQL {
		return req.Database
	}
	return ""
}

// narrowSessions is hideOtherSessions past its scan.
func narrowSessions(req *query.Request, database string) error {
	a := req.Analysis()
	var edits []edit
	for _, st := range a.Statements {
		e, err := narrowStatement(st.Significant, database)
		if err != nil {
			return err
		}
		edits = append(edits, e...)
	}
	if err := sessionViewsAgree(req.SQL, a, database, edits); err != nil {
		return err
	}
	if len(edits) == 0 {
		return nil
	}
	if req.ClientSQL == "" {
		req.ClientSQL = req.SQL
	}
	req.SQL = applyEdits(req.SQL, edits)
	return nil
}

// sessionViewsAgree refuses a statement that names a view of the engine's sessions in text
// the engine may run, or that one of the engines' readings would narrow or refuse where the
// proxy's reading (whose edits are own) does not: a name the proxy reads as in a string or a
// comment, or a quoting only some engines have.
func sessionViewsAgree(sql string, a *sqltok.Analysis, database string, own []edit) error {
	for _, r := range engineReadings {
		toks := a.Tokens
		if r.d != a.Dialect || r.otherEscapes {
			toks = r.tokens(sql)
			for _, st := range splitStatements(toks) {
				edits, err := narrowStatement(st, database)
				if err != nil {
					return err
				}
				for _, e := range edits {
					if !slices.ContainsFunc(own, func(o edit) bool { return o.start == e.start }) {
						return sessionsRefused("a statement that engines read differently (backslash escapes, # or nested comments, dollar quotes, quoting) around " + sql[e.start:e.end])
					}
				}
			}
		}
		s := &killerScan{names: sessionViewNames, deeper: []string{"u&"}}
		if what, _ := s.killerIn(toks, r, 0); what != "" {
			return sessionsRefused(what + " in text the engine may run (a function body, EXECUTE, a string handed to a function)")
		}
	}
	return nil
}

func sessionsRefused(what string) error {
	return &query.Error{Code: query.CodeAccessDenied, Message: "not allowed through QueryFlux: " + what +
		"; the engine's sessions serve every client of the cluster, and a client sees only its own"}
}

// edit replaces sql[start:end] with text.
type edit struct {
	start, end int
	text       string
}

func applyEdits(sql string, edits []edit) string {
	var b strings.Builder
	at := 0
	for _, e := range edits {
		b.WriteString(sql[at:e.start])
		b.WriteString(e.text)
		at = e.end
	}
	b.WriteString(sql[at:])
	return b.String()
}

// narrowStatement returns the edits that narrow the statement st's views of the engine's
// sessions, or the error refusing it.
func narrowStatement(st []sqltok.Token, database string) ([]edit, error) {
	if len(st) == 0 {
		return nil, nil
	}
	if err := refusedStatement(st); err != nil {
		return nil, err
	}
	if e, ok := showProcesslistEdit(st); ok {
		return []edit{e}, nil
	}
	var edits []edit
	for i, t := range st {
		if t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent {
			continue
		}
		name, ok := identName(st, i)
		if !ok {
			if n := quotedNameIn(st, i, sessionViewNames); n != "" {
				return nil, sessionsRefused(n + " named with escapes")
			}
			continue
		}
		if i+1 < len(st) && st[i+1].Text == "." || i > 0 && (st[i-1].IsWord("as") || st[i-1].Text == ")") {
			continue // a qualifier (of a schema's object, or of a column), or an alias
		}
		qual := ""
		if i >= 2 && st[i-1].Text == "." {
			qual, _ = identName(st, i-2)
		}
		e, err := narrowName(st, i, name, qual, database)
		if err != nil {
			return nil, err
		}
		if e != nil {
			edits = append(edits, *e)
		}
	}
	return edits, nil
}

// narrowName is the edit that narrows the name st[i] (name, lower-cased; qual its schema's, or
// ""), nil for a name that needs none, or the error refusing it.
func narrowName(st []sqltok.Token, i int, name, qual, database string) (*edit, error) {
	unqualifiedIn := func(schema string) bool { return qual == "" && strings.EqualFold(database, schema) }
	switch {
	case nameAmong(name, refusedViews) != "":
		return nil, sessionsRefused(nameAmong(name, refusedViews) + " (it shows other sessions' statements)")
	case sameName(name, "pg_stat_activity") && (qual == "" || qual == "pg_catalog"):
		if isOwnView(st, i, "where", "pid", "=", "pg_catalog", ".", "pg_backend_pid", "(", ")", ")") {
			return nil, nil
		}
		return viewEdit(st, i, qual != "", ownActivity, "pg_stat_activity"), nil
	case sameName(name, "pg_prepared_xacts") && (qual == "" || qual == "pg_catalog"):
		if isOwnView(st, i, "where", "false", ")") {
			return nil, nil
		}
		return viewEdit(st, i, qual != "", ownPreparedXacts, "pg_prepared_xacts"), nil
	case sameName(name, "processlist") && (qual == "information_schema" || unqualifiedIn("information_schema")):
		if isOwnView(st, i, "where", "id", "=", "connection_id", "(", ")", ")") {
			return nil, nil
		}
		return viewEdit(st, i, qual != "", ownProcesslist, "processlist"), nil
	case sameName(name, "innodb_trx") && (qual == "information_schema" || unqualifiedIn("information_schema")):
		return nil, sessionsRefused("information_schema.INNODB_TRX (it shows other sessions' statements)")
	case qual == "performance_schema" || unqualifiedIn("performance_schema"):
		if n := nameAmong(name, performanceSchemaText); n != "" {
			return nil, sessionsRefused("performance_schema." + n + " (it shows other sessions' statements)")
		}
	case qual == "sys" || unqualifiedIn("sys") && nameAmong(name, sysProcesslists) != "":
		return nil, sessionsRefused("the sys schema (its views show other sessions' statements)")
	case sameName(name, "queries") && qual == "runtime":
		return nil, sessionsRefused("system.runtime.queries (it shows other clients' statements)")
	}
	return nil, nil
}

// identName is the name the word or quoted name st[i] stands for, lower-cased; ok is false for
// anything else, and for a U&"..." name.
func identName(st []sqltok.Token, i int) (string, bool) {
	t := st[i]
	switch t.Kind {
	case sqltok.Word:
		return foldName(t.Text), true
	case sqltok.QuotedIdent:
		if i >= 2 && st[i-1].Text == "&" && st[i-2].IsWord("u") || len(t.Text) < 2 {
			return "", false
		}
		q := t.Text[:1]
		return foldName(strings.ReplaceAll(t.Text[1:len(t.Text)-1], q+q, q)), true
	}
	return "", false
}

// foldName lower-cases an identifier's ASCII letters and writes each other character as a
// NUL, which sameName takes for any letter: MariaDB looks information_schema's tables up
// in a collation that folds some letters to ASCII (information_schema.PROCESSL\u0130ST
// is PROCESSLIST).
func foldName(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + 'a' - 'A')
		case r < 0x80:
			b.WriteRune(r)
		default:
			b.WriteByte(0)
		}
	}
	return b.String()
}

// sameName reports whether the folded name is want, a NUL in name standing for any letter.
func sameName(name, want string) bool {
	if len(name) != len(want) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] != want[i] && name[i] != 0 {
			return false
		}
	}
	return true
}

// nameAmong is the one of names that the folded name is, or "".
func nameAmong(name string, names []string) string {
	for _, n := range names {
		if sameName(name, n) {
			return n
		}
	}
	return ""
}

// isOwnView reports whether st[i] is the view's name in a narrowing already made (ownActivity,
// ownProcesslist): "( SELECT * FROM schema ." before it and the words rest after it.
func isOwnView(st []sqltok.Token, i int, rest ...string) bool {
	if i < 6 || st[i-6].Text != "(" || !st[i-5].IsWord("select") || st[i-4].Text != "*" || !st[i-3].IsWord("from") || st[i-1].Text != "." {
		return false
	}
	for j, w := range rest {
		if i+1+j >= len(st) || !strings.EqualFold(st[i+1+j].Text, w) {
			return false
		}
	}
	return true
}

// viewEdit replaces the name st[i] (and its schema, when qualified) with the narrowed view,
// keeping the name as the alias where the statement gives none.
func viewEdit(st []sqltok.Token, i int, qualified bool, view, alias string) *edit {
	k := i
	if qualified {
		k = i - 2
	}
	start, text := st[k].Pos, view
	if k > 0 && st[k-1].IsWord("table") && (k == 1 || st[k-2].Text == "(" || st[k-2].IsWord("union", "intersect", "except", "all", "distinct")) {
		start, text = st[k-1].Pos, "SELECT * FROM "+view // TABLE name, which takes no subquery
	}
	if !aliasFollows(st, i+1) {
		if st[i].Kind == sqltok.QuotedIdent || st[i].Text == alias {
			alias = st[i].Text // the name as written: a qualified column may spell it so
		}
		text += " AS " + alias
	}
	return &edit{start: start, end: st[i].Pos + len(st[i].Text), text: text}
}

// aliasStops are the words after a table that are not its alias.
var aliasStops = []string{"where", "join", "left", "right", "inner", "full", "cross", "natural", "on", "using", "group",
	"order", "limit", "offset", "union", "except", "intersect", "window", "having", "fetch", "for", "returning",
	"lateral", "tablesample", "straight_join", "set", "into", "lock", "partition", "use", "force", "ignore", "outer"}

// aliasFollows reports whether st[j] gives the table before it an alias.
func aliasFollows(st []sqltok.Token, j int) bool {
	if j >= len(st) {
		return false
	}
	t := st[j]
	return t.IsWord("as") || t.Kind == sqltok.QuotedIdent || t.Kind == sqltok.Word && !t.IsWord(aliasStops...)
}

// showProcesslistEdit turns SHOW [FULL] PROCESSLIST into the SELECT that answers it for the
// session alone.
func showProcesslistEdit(st []sqltok.Token) (edit, bool) {
	last := st[len(st)-1]
	whole := edit{start: st[0].Pos, end: last.Pos + len(last.Text)}
	switch {
	case len(st) == 2 && st[0].IsWord("show") && st[1].IsWord("processlist"):
		whole.text = showProcesslistShort
	case len(st) == 3 && st[0].IsWord("show") && st[1].IsWord("full") && st[2].IsWord("processlist"):
		whole.text = showProcesslist
	default:
		return edit{}, false
	}
	return whole, true
}

// refusedStatement refuses SHOW ENGINE INNODB STATUS (the statements of every open
// transaction), MariaDB's SHOW EXPLAIN / ANALYZE FOR n and EXPLAIN / ANALYZE ... FOR
// CONNECTION n (another session's statement and plan).
func refusedStatement(st []sqltok.Token) error {
	if len(st) >= 3 && st[0].IsWord("show") && st[1].IsWord("engine") && st[2].IsWord("innodb") {
		return sessionsRefused("SHOW ENGINE INNODB STATUS (it shows other sessions' statements)")
	}
	if len(st) >= 2 && st[0].IsWord("show") && st[1].IsWord("explain", "analyze") {
		return sessionsRefused("SHOW " + strings.ToUpper(st[1].Text) + " FOR another session")
	}
	if st[0].IsWord("explain", "analyze", "describe", "desc") {
		for j := 1; j+1 < len(st); j++ {
			if st[j].IsWord("for") && st[j+1].IsWord("connection") {
				return sessionsRefused("EXPLAIN FOR CONNECTION (another session's statement)")
			}
		}
	}
	return nil
}
