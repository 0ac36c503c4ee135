package duckengine

import (
	"cmp"
	"net"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A client's view of its own session. The proxy narrows pg_stat_activity and MySQL's
// information_schema.PROCESSLIST (SHOW [FULL] PROCESSLIST is a SELECT from it by then) to the
// session that reads them, by pid = pg_backend_pid() and ID = CONNECTION_ID() (node/proxy's
// activity.go). DuckDB has none of the four: psql's and the mariadb CLI's users, monitoring
// queries and GUI tools' session views got DuckDB's catalog error. Here each is the client's
// own session, as the frontend describes it on the request: one row, its connection's id
// (the pid of BackendKeyData, the MySQL connection id KILL takes), user, address, database and
// the statement being run. The text is DuckDB's by now (after pgCompat or mysqlCompat).

// maySeeOwnSession reports cheaply whether sqlText may name a session view or function.
func maySeeOwnSession(sqlText string) bool {
	return containsFold(sqlText, "pg_stat_activity") || containsFold(sqlText, "pg_backend_pid") ||
		containsFold(sqlText, "processlist") || containsFold(sqlText, "connection_id")
}

// withOwnSession writes q's session views and functions (in s, q's SQL as DuckDB reads it) as
// q's session answers them; s itself when it names none.
func withOwnSession(q *query.Request, s string) string {
	if q.SessionID == 0 || !maySeeOwnSession(s) {
		return s
	}
	toks := sqltok.Tokenize(s, sqltok.Postgres)
	var b strings.Builder
	changed := false
	for i := 0; i < len(toks); i++ {
		if end, text := ownSessionAt(q, toks, i); end > i {
			b.WriteString(text)
			i, changed = end, true
			continue
		}
		b.WriteString(toks[i].Text)
	}
	if !changed {
		return s
	}
	return b.String()
}

// ownSessionAt is, when toks[i] starts a session function call or view name (qualified or
// not), the index of its last token and its text; i when none starts there.
func ownSessionAt(q *query.Request, toks []sqltok.Token, i int) (int, string) {
	if toks[i].Kind != sqltok.Word && toks[i].Kind != sqltok.QuotedIdent {
		return i, ""
	}
	if prev := prevSignificant(toks, i); prev >= 0 && toks[prev].Text == "." {
		return i, "" // a column or a name in another schema
	}
	name, schema := i, ""
	if dot := nextSignificant(toks, i+1); dot < len(toks) && toks[dot].Text == "." {
		schema = nameText(toks[i])
		if name = nextSignificant(toks, dot+1); name >= len(toks) {
			return i, ""
		}
	}
	word := nameText(toks[name])
	switch {
	case q.Protocol == query.ProtocolPostgres && word == "pg_backend_pid" && (schema == "" || schema == "pg_catalog"):
		if end := noArgCall(toks, name); end > 0 {
			return end, strconv.FormatUint(uint64(q.SessionID), 10)
		}
	case isMySQL(q) && word == "connection_id" && schema == "":
		if end := noArgCall(toks, name); end > 0 {
			return end, strconv.FormatUint(uint64(q.SessionID), 10)
		}
	case q.Protocol == query.ProtocolPostgres && word == "pg_stat_activity" && (schema == "" || schema == "pg_catalog"):
		return ownRelation(toks, i, name, "pg_stat_activity", ownActivityRow(q))
	case isMySQL(q) && word == "processlist" && schema == "information_schema":
		return ownRelation(toks, i, name, "PROCESSLIST", ownProcesslistRow(q))
	}
	return i, ""
}

// ownRelation writes the view named from toks[start] to toks[name] as the subquery row, named
// as the view unless an alias follows; start (nothing written) where the name is not a
// relation: a call, or a column qualified by it.
func ownRelation(toks []sqltok.Token, start, name int, as, row string) (int, string) {
	next := nextSignificant(toks, name+1)
	if next < len(toks) && (toks[next].Text == "." || toks[next].Text == "(") {
		return start, ""
	}
	if next < len(toks) && (toks[next].Kind == sqltok.QuotedIdent || toks[next].Kind == sqltok.Word && !relationEnds[strings.ToLower(toks[next].Text)]) {
		return name, "(" + row + ")" // an alias follows
	}
	return name, "(" + row + ") AS " + as
}

// ownActivityRow is pg_stat_activity's row of q's session, with PostgreSQL 15's columns.
func ownActivityRow(q *query.Request) string {
	host, port := clientHostPort(q.ClientAddr)
	return "SELECT (SELECT any_value(oid) FROM " + compatPrefix + "qf_pg_database WHERE datname = current_database())::BIGINT AS datid, " +
		"current_database() AS datname, " + strconv.FormatUint(uint64(q.SessionID), 10) + "::INTEGER AS pid, " +
		"NULL::INTEGER AS leader_pid, 0::BIGINT AS usesysid, " + duckString(q.User) + " AS usename, " +
		duckString(q.Headers["application_name"]) + " AS application_name, " + nullableString(host) + " AS client_addr, " +
		"NULL::VARCHAR AS client_hostname, " + port + "::INTEGER AS client_port, " + backendStart(q) + " AS backend_start, " +
		"current_timestamp AS xact_start, current_timestamp AS query_start, current_timestamp AS state_change, " +
		"NULL::VARCHAR AS wait_event_type, NULL::VARCHAR AS wait_event, 'active' AS state, NULL::BIGINT AS backend_xid, " +
		"NULL::BIGINT AS backend_xmin, NULL::BIGINT AS query_id, " + duckString(cmp.Or(q.ClientSQL, q.SQL)) + " AS query, " +
		"'client backend' AS backend_type"
}

// ownProcesslistRow is information_schema.PROCESSLIST's row of q's session, with MariaDB's
// columns (MySQL's eight first), as MariaDB shows the connection running the statement.
func ownProcesslistRow(q *query.Request) string {
	info := duckString(cmp.Or(q.ClientSQL, q.SQL))
	db := "NULL::VARCHAR"
	if q.Database != "" {
		db = duckString(q.Database)
	}
	return "SELECT " + strconv.FormatUint(uint64(q.SessionID), 10) + "::BIGINT AS \"ID\", " + duckString(q.User) + " AS \"USER\", " +
		duckString(q.ClientAddr) + " AS \"HOST\", " + db + " AS \"DB\", 'Query' AS \"COMMAND\", 0 AS \"TIME\", " +
		"'starting' AS \"STATE\", " + info + " AS \"INFO\", 0.0::DECIMAL(22,3) AS \"TIME_MS\", 0::TINYINT AS \"STAGE\", " +
		"0::TINYINT AS \"MAX_STAGE\", 0.0::DECIMAL(7,3) AS \"PROGRESS\", 0::BIGINT AS \"MEMORY_USED\", " +
		"0::BIGINT AS \"MAX_MEMORY_USED\", 0::BIGINT AS \"EXAMINED_ROWS\", 0::BIGINT AS \"QUERY_ID\", " +
		info + " AS \"INFO_BINARY\", 0::BIGINT AS \"TID\""
}

// backendStart is the session's start as a TIMESTAMPTZ literal (NULL when the frontend gave none).
func backendStart(q *query.Request) string {
	if q.SessionStart.IsZero() {
		return "NULL::TIMESTAMPTZ"
	}
	return "'" + q.SessionStart.UTC().Format("2006-01-02 15:04:05.999999") + "+00'::TIMESTAMPTZ"
}

// clientHostPort splits a client's address into its host (a string, "" if unknown) and port
// (digits, or NULL).
func clientHostPort(addr string) (string, string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "NULL"
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return host, "NULL"
	}
	return host, port
}

// nullableString is v as a literal, NULL when empty.
func nullableString(v string) string {
	if v == "" {
		return "NULL::VARCHAR"
	}
	return duckString(v)
}

// nameText is a name token's name in lower case, unquoted (`a` and "a").
func nameText(t sqltok.Token) string {
	if t.Kind == sqltok.QuotedIdent && len(t.Text) >= 2 && t.Text[0] == '"' {
		return strings.ToLower(strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`))
	}
	return strings.ToLower(identText(t))
}
