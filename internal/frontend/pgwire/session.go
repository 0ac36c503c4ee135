package pgwire

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Client-protocol settings drivers send at connect (JDBC: extra_float_digits, application_name;
// others: client_encoding, DateStyle). They describe the wire session, which this frontend owns:
// passing them to a pooled engine would land them on an arbitrary connection, and engines
// such as DuckDB reject them. So they are answered here.
var sessionSettings = map[string]bool{
	"extra_float_digits": true, "application_name": true, "client_encoding": true, "datestyle": true,
	"intervalstyle": true, "client_min_messages": true, "standard_conforming_strings": true, "bytea_output": true,
}

// localStatement answers sql itself when it only sets a client-protocol setting, and refuses
// a SET that would change the session of a pooled engine connection (see CheckSessionState).
func (c *conn) localStatement(sql string) (query.Rows, bool, error) {
	if !startsWithSetOrReset(sql) {
		return nil, false, nil // the hot path: no tokenizing for statements that are not SETs
	}
	st := parseSet(sql)
	if clientStyles[st.name] != "" {
		tag := "SET"
		if strings.EqualFold(firstWord(sql), "reset") {
			tag = "RESET"
		}
		return c.answerStyle(st, tag)
	}
	if st.scope == scopeSession && sessionSettings[st.name] {
		return c.answerSetting(st.name, st.value)
	}
	if st.scope == scopeSession && c.setChangesNothing(sql, st) {
		return engine.TagRows("SET"), true, nil
	}
	if err := st.refusal(c.session != nil); err != nil {
		return nil, true, err
	}
	return nil, false, nil
}

// setChangesNothing reports whether the backend says st changes nothing on its engine
// (engine.SettingIgnorer).
func (c *conn) setChangesNothing(sql string, st setStmt) bool {
	i, ok := c.srv.backend.(engine.SettingIgnorer)
	return ok && i.SetChangesNothing(c.request(sql, nil), st.name, st.value)
}

// answerSetting applies a client-protocol setting to this wire session.
func (c *conn) answerSetting(name, value string) (query.Rows, bool, error) {
	switch name {
	case "client_encoding":
		if v := strings.ToUpper(strings.ReplaceAll(value, "-", "")); v != "UTF8" && v != "UNICODE" {
			return nil, true, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "only UTF8 client_encoding is supported"}
		}
		c.be.Send(&pgproto3.ParameterStatus{Name: "client_encoding", Value: "UTF8"})
	case "bytea_output":
		if !strings.EqualFold(value, "hex") {
			return nil, true, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "only hex bytea_output is supported"}
		}
	case "standard_conforming_strings":
		if !strings.EqualFold(value, "on") {
			return nil, true, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "standard_conforming_strings is always on"}
		}
	case "application_name":
		value = clipName(value)
		c.setStartup("application_name", value)
		c.be.Send(&pgproto3.ParameterStatus{Name: "application_name", Value: value})
	}
	return engine.TagRows("SET"), true, nil
}

// nameBytesMax is PostgreSQL's bound on application_name (NAMEDATALEN - 1 bytes): a longer
// name is cut there, as PostgreSQL cuts it, and a connection keeps no more of it (a client's
// SET could otherwise leave a message's size, 64 MiB, with each of its connections).
const nameBytesMax = 63

// clipName cuts v to nameBytesMax bytes, at a character's start.
func clipName(v string) string {
	if len(v) <= nameBytesMax {
		return v
	}
	return strings.ToValidUTF8(v[:nameBytesMax], "")
}

// openSessionFor pins an engine connection when req starts a transaction and the backend can
// pin one (engine.SessionOpener); the transaction's statements then all run there.
func (c *conn) openSessionFor(req *query.Request) error {
	if c.session != nil || !beginsTransaction(req.SQL) {
		return nil
	}
	opener, ok := c.srv.backend.(engine.SessionOpener)
	if !ok {
		return nil
	}
	s, err := opener.OpenSession(c.srv.baseCtx, req)
	if err != nil {
		return err
	}
	c.session = s
	return nil
}

// syncTxStatus reads the transaction status from the pinned session once its statements are
// finished, and unpins it when the transaction is over.
func (c *conn) syncTxStatus() {
	defer c.reportZone()
	if c.session == nil {
		c.txStatus = 'I'
		c.endZones()
		return
	}
	c.txStatus = c.session.TxStatus()
	if c.txStatus == 'E' {
		c.failZones()
	}
	if c.txStatus == 'I' {
		c.endZones()
		c.closePortals() // the transaction's portals (JDBC's fetch-size cursors) end with it
		_ = c.session.Close()
		c.session = nil
	}
}

// closePortals ends the transaction's portals; a WITH HOLD cursor held in memory stays.
func (c *conn) closePortals() {
	for name, p := range c.portals {
		if p.cursor == nil || !p.cursor.held {
			c.closePortal(name)
		}
	}
}

// beginsTransaction: sql opens a transaction (BEGIN, START TRANSACTION), whatever comments
// come first.
func beginsTransaction(sql string) bool {
	return sqltok.FirstKeywordIs(sql, sqltok.Postgres, "begin", "start")
}

// startsWithSetOrReset reports whether sql's first word, after blanks and comments, is SET or
// RESET (any case).
func startsWithSetOrReset(sql string) bool {
	return sqltok.FirstKeywordIs(sql, sqltok.Postgres, "set", "reset")
}

// firstWord, SplitStatements and significantTokens are internal/sqltok's PostgreSQL rules,
// named for this package's many callers.
func firstWord(sql string) string { return sqltok.FirstKeyword(sql, sqltok.Postgres) }

// SplitStatements splits a simple-protocol query string at top-level semicolons; empty
// statements (only blanks and comments) are dropped and each statement is trimmed.
func SplitStatements(sql string) []string { return sqltok.SplitDialect(sql, sqltok.Postgres) }

func significantTokens(sql string) []sqltok.Token {
	return sqltok.SignificantTokens(sql, sqltok.Postgres)
}

// setScope is how long what a SET or RESET statement changes lasts.
type setScope int

const (
	// scopeSession: the engine session, past the transaction (SET, SET SESSION).
	scopeSession setScope = iota
	// scopeTransaction: the current transaction only (SET LOCAL, SET TRANSACTION, SET
	// CONSTRAINTS); outside one PostgreSQL ignores it with a warning.
	scopeTransaction
	// scopeDefault restores the connection's default (RESET, SET x TO DEFAULT): every pooled
	// connection starts there, so it leaves nothing behind for the next client.
	scopeDefault
)

// setStmt is what a SET or RESET statement changes.
type setStmt struct {
	scope setScope
	local bool   // SET LOCAL (its scope is scopeDefault when it sets DEFAULT)
	name  string // lower case as PostgreSQL folds it ("timezone" for SET TIME ZONE); "" for RESET
	value string // the value as written; one string literal is unquoted
}

// parseSet reads a statement whose first word is SET or RESET, with PostgreSQL's grammar
// (SET [SESSION | LOCAL] name {TO | =} value, SET TIME ZONE, SET ROLE, SET SCHEMA, SET NAMES,
// SET SESSION AUTHORIZATION, SET SESSION CHARACTERISTICS, SET TRANSACTION, SET CONSTRAINTS).
func parseSet(sql string) setStmt {
	toks := significantTokens(sql)
	p := setParser{toks: toks}
	if p.word(0) == "reset" {
		p.i = 1
		name, _ := p.target()
		return setStmt{scope: scopeDefault, name: name}
	}
	p.i = 1
	st := setStmt{scope: scopeSession}
	switch p.word(p.i) {
	case "local":
		st.scope, st.local = scopeTransaction, true
		p.i++
	case "session":
		p.i++
		switch p.word(p.i) {
		case "characteristics":
			st.name = "session characteristics"
			return st
		case "authorization":
			st.name, st.value = "session authorization", p.rest(p.i+1)
		}
	}
	if st.name == "" {
		st.name, st.value = p.target()
	}
	switch {
	case st.name == "transaction" || st.name == "constraints":
		st.scope = scopeTransaction
	case strings.EqualFold(st.value, "default"), st.name == "role" && strings.EqualFold(st.value, "none"):
		st.scope = scopeDefault
	}
	return st
}

// setParser walks the significant tokens of a SET statement.
type setParser struct {
	toks []sqltok.Token
	i    int
}

// word is the i'th token in lower case when it is a word, else "".
func (p *setParser) word(i int) string {
	if i < len(p.toks) && p.toks[i].Kind == sqltok.Word {
		return strings.ToLower(p.toks[i].Text)
	}
	return ""
}

// target reads the parameter and its value from p.i on.
func (p *setParser) target() (name, value string) {
	switch w := p.word(p.i); {
	case w == "time" && p.word(p.i+1) == "zone":
		return "timezone", p.rest(p.i + 2)
	case w == "role" || w == "transaction" || w == "constraints":
		return w, p.rest(p.i + 1)
	case w == "schema":
		return "search_path", p.rest(p.i + 1)
	case w == "names":
		return "client_encoding", p.rest(p.i + 1)
	case w == "xml" && p.word(p.i+1) == "option":
		return "xmloption", p.rest(p.i + 2)
	}
	name = p.dottedName()
	if t := p.word(p.i); t == "to" || (p.i < len(p.toks) && p.toks[p.i].Text == "=") {
		p.i++
	}
	return name, p.rest(p.i)
}

// dottedName reads a parameter name: identifiers joined by '.' (custom settings such as
// myapp.tenant), words folded to lower case, quoted identifiers kept as written.
func (p *setParser) dottedName() string {
	var b strings.Builder
	for p.i < len(p.toks) {
		t := p.toks[p.i]
		switch t.Kind {
		case sqltok.Word:
			b.WriteString(strings.ToLower(t.Text))
		case sqltok.QuotedIdent:
			b.WriteString(strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`))
		default:
			return b.String()
		}
		p.i++
		if p.i+1 >= len(p.toks) || p.toks[p.i].Text != "." {
			return b.String()
		}
		b.WriteByte('.')
		p.i++
	}
	return b.String()
}

// rest is the statement's text from token i to the end, without a final ';'; a single string
// literal is unquoted.
func (p *setParser) rest(i int) string {
	toks := p.toks
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if i >= len(toks) {
		return ""
	}
	if i == len(toks)-1 && toks[i].Kind == sqltok.String && strings.HasPrefix(toks[i].Text, "'") && !toks[i].Unterminated {
		return strings.ReplaceAll(toks[i].Text[1:len(toks[i].Text)-1], "''", "'")
	}
	var b strings.Builder
	for j, t := range toks[i:] {
		if j > 0 && t.Pos > toks[i+j-1].Pos+len(toks[i+j-1].Text) {
			b.WriteByte(' ') // blanks or a comment in between
		}
		b.WriteString(t.Text)
	}
	return strings.Trim(b.String(), `"`)
}

// refusal is the error a session-level SET is answered with, or nil when st may run on the
// engine. inTransaction: a pinned engine session is open (BEGIN ... COMMIT).
func (st setStmt) refusal(inTransaction bool) error {
	if st.scope != scopeSession {
		return nil
	}
	name := st.name
	if name == "session characteristics" || name == "session authorization" || name == "role" {
		name = strings.ToUpper(name) // statements of their own rather than parameters
	}
	why := "QueryFlux runs each statement outside a transaction on whichever pooled engine connection is free, " +
		"so a session setting would not carry to your next statement and would change the connection for other clients"
	local := "SET LOCAL " + name + " inside a transaction (BEGIN ... COMMIT)"
	if inTransaction {
		why = "on the transaction's pooled engine connection it would outlive the transaction and change the connection for other clients"
		local = "SET LOCAL " + name + " (it ends with the transaction)"
	}
	instead := local + ", or ALTER ROLE/DATABASE ... SET " + name + ", or the cluster's connection options"
	switch st.name {
	case "session characteristics":
		instead = "SET TRANSACTION inside each transaction, or ALTER ROLE/DATABASE ... SET default_transaction_isolation " +
			"(default_transaction_read_only, default_transaction_deferrable)"
	case "session authorization", "role":
		instead = local + ", or connect as that user"
	}
	return &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf("SET %s is not supported: %s; use %s", name, why, instead)}
}

// CheckSessionState returns the error this frontend answers sql with because it would change
// the session of a pooled engine connection (a session-level SET or SET SESSION other than
// the client-protocol settings answered here and TimeZone, which a PostgreSQL engine reports
// and each of the client's engine connections then gets, as PgBouncer does), or nil.
// inTransaction: a pinned engine session is open.
func CheckSessionState(sql string, inTransaction bool) error {
	if !startsWithSetOrReset(sql) {
		return nil
	}
	st := parseSet(sql)
	if st.scope == scopeSession && (sessionSettings[st.name] || st.name == "timezone") {
		return nil // a PostgreSQL engine reports it, and the client's next connections get it (noteParameter)
	}
	return st.refusal(inTransaction)
}
