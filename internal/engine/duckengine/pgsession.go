package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// The client's own session, as PostgreSQL's functions (and Trino's current_user) describe it.
// DuckDB answers current_user and its kin with its own name ("duckdb") and knows no
// application_name, so Flyway's and Liquibase's `SELECT current_user`, DBeaver's session view
// and a psycopg or JDBC application reading back its application_name got another answer or an
// error. A client's call is written with the value its session has: the user it logged in as,
// the application_name it gave at startup or set since (the frontend keeps both on the request).

// sessionUserWords are PostgreSQL's keywords for the session's user; each names its result
// column after itself.
var sessionUserWords = map[string]bool{"current_user": true, "session_user": true, "user": true, "current_role": true}

// sessionPrefix qualifies the macros the writer calls with a session's values: a schema off
// the search path, whose macros are named as the result column is.
const sessionPrefix = `"` + compatCatalog + `".pgsession.`

// pgSessionSQL creates them, and the functions PostgreSQL clients call about the server's state.
var pgSessionSQL = []string{
	`CREATE SCHEMA {c}.pgsession`,
	`CREATE MACRO {c}.pgsession."current_user"(u) AS u`,
	`CREATE MACRO {c}.pgsession."session_user"(u) AS u`,
	`CREATE MACRO {c}.pgsession."user"(u) AS u`,
	`CREATE MACRO {c}.pgsession."current_role"(u) AS u`,
	`CREATE MACRO {c}.pgsession.current_setting(name, v) AS v`,
	// The embedded database is never a standby; its transaction ids are DuckDB's.
	`CREATE MACRO {c}.main.pg_is_in_recovery() AS false`,
	`CREATE MACRO {c}.main.pg_current_xact_id() AS txid_current()`,
	// to_regclass('[schema.]name'): the name when such a table or view exists, else NULL.
	// Its text is the name as PostgreSQL prints a regclass: unqualified in the search path's
	// schema (public, main here).
	`CREATE MACRO {c}.main.to_regclass(name) AS (SELECT any_value(CASE WHEN t.schema_name = 'main' THEN t.table_name
		ELSE t.schema_name || '.' || t.table_name END) FROM (SELECT database_name, schema_name, table_name
		FROM duckdb_tables() UNION ALL SELECT database_name, schema_name, view_name FROM duckdb_views() WHERE NOT internal) t
		WHERE t.database_name = current_database() AND (t.table_name = name OR t.schema_name || '.' || t.table_name = name
			OR {c}.main.qf_pg_schema(t.schema_name) || '.' || t.table_name = name))`,
}

// mayReadSession reports cheaply whether a PostgreSQL client's q may name its session's user
// or application_name, or a Trino client's its current_user.
func mayReadSession(q *query.Request) bool {
	switch q.Protocol {
	case query.ProtocolPostgres:
		return containsFold(q.SQL, "user") || containsFold(q.SQL, "current_role") || containsFold(q.SQL, "application_name") ||
			containsFold(q.SQL, "current_schema") || containsFold(q.SQL, "current_database")
	case query.ProtocolTrino:
		return containsFold(q.SQL, "current_user")
	}
	return false
}

// sessionUser writes the session user keyword at w.i as its value, where it stands for the
// user: not a qualified name's part (t.user), an alias (AS user), a role statement's object
// (CREATE USER, TO current_user), OVERRIDING USER VALUE's or a call (MySQL's user()).
func (w *compatWriter) sessionUser() bool {
	if w.session == nil || !sessionUserWords[w.word(w.i)] {
		return false
	}
	if w.session.Protocol == query.ProtocolTrino && w.word(w.i) != "current_user" {
		return false // Trino's only such keyword
	}
	switch w.word(w.prevSig(w.i)) {
	case ".", "as", "create", "alter", "drop", "to", "from", "for", "role", "authorization", "mapping",
		"overriding": // INSERT ... OVERRIDING USER VALUE (pgidentity.go)
		return false
	}
	if next := w.word(w.sig(w.i+1, 0)); next == "." || next == "(" {
		return false
	}
	w.emit(sessionPrefix + `"` + w.word(w.i) + `"(` + quoteString(w.session.User) + `)`)
	w.i++
	return true
}

// applicationName writes current_setting('application_name'), its ")" at end, as the
// session's value.
func (w *compatWriter) applicationName(name, end int) bool {
	if w.session == nil || !strings.EqualFold(plainString(w.toks[name].Text), "application_name") {
		return false
	}
	w.emit(sessionPrefix + "current_setting('application_name', " + quoteString(w.session.Headers["application_name"]) + ")")
	w.i = end + 1
	return true
}

// scalarFromItem writes a call of current_schema() or current_database() that stands as a FROM
// item (TypeORM's `SELECT * FROM current_schema()`: PostgreSQL takes any function there, DuckDB
// only table functions) as a one-row subquery.
func (w *compatWriter) scalarFromItem() bool {
	name := w.word(w.i)
	if name != "current_schema" && name != "current_database" || !w.fromItemAt(w.i) {
		return false
	}
	open := w.sig(w.i+1, 0)
	end := w.sig(open+1, 0)
	if w.word(open) != "(" || w.word(end) != ")" {
		return false
	}
	// PostgreSQL names the column after the function, or after the FROM item's alias if any.
	column, alias := name, w.sig(end+1, 0)
	if w.word(alias) == "as" {
		alias = w.sig(alias+1, 0)
	}
	aliased := alias >= 0 && (w.toks[alias].Kind == sqltok.QuotedIdent || w.toks[alias].Kind == sqltok.Word && !isClauseWord(w.word(alias)))
	if aliased {
		column = w.toks[alias].Text
	}
	call := name + "()"
	if w.postgres && name == "current_schema" {
		call = sessionPrefix + call // public, as PostgreSQL names main (pgschema.go)
	}
	w.emit("(SELECT " + call + " AS " + column + ")")
	if !aliased {
		w.emit(" AS " + name)
	}
	w.i = end + 1
	return true
}

// isClauseWord: a keyword that may follow a FROM item, so not its alias.
func isClauseWord(word string) bool {
	switch word {
	case "where", "group", "order", "limit", "offset", "join", "inner", "left", "right", "full", "cross",
		"natural", "on", "union", "except", "intersect", "having", "window", "fetch", "for", "returning", "using":
		return true
	}
	return false
}
