package pgengine

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/mysqlmode"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's sql_mode on PostgreSQL. Connector/J, SQLAlchemy, Django and Laravel set it at
// connect (the frontend sends such a SET to the engine, on the connection it holds for the
// client): SET [SESSION | LOCAL] sql_mode, SET @@[session. | local.]sql_mode, to a string, a
// number, DEFAULT, a word, or an expression (`CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')`,
// `(SELECT REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY', ''))`, evaluated by PostgreSQL). The value
// is read as MariaDB reads it (mysqlmode: 1231 for a name it does not know) and kept with the
// connection (sqlModeKey), not in PostgreSQL: MariaDB's SET is not undone by a ROLLBACK, and
// the connection's next client starts from MariaDB's default. @@sql_mode reads it back, written
// into the statement's text as a string. A mode under which MariaDB would answer otherwise
// than PostgreSQL does is refused, naming it (sqlModesRefused); the others are what PostgreSQL
// does anyway (strict writes, full GROUP BY, division by zero an error in a write, no zero
// dates, rounded fractional seconds) or only change DDL options and privileges. A SET GLOBAL
// is refused.

// sqlModeKey is where a connection keeps its client's sql_mode (pgconn's CustomData); absent
// for MariaDB's default. The session drops it as it gives the connection back.
const sqlModeKey = "queryflux.sql_mode"

// sqlModesRefused are the modes PostgreSQL cannot keep, and what MariaDB does differently under
// each (ANSI and the other combinations name some of them).
var sqlModesRefused = map[string]string{
	"ANSI_QUOTES":             `"text" would be a name`,
	"PIPES_AS_CONCAT":         "|| would concatenate",
	"NO_BACKSLASH_ESCAPES":    "a backslash in a string would be a character",
	"HIGH_NOT_PRECEDENCE":     "NOT would bind tighter",
	"PAD_CHAR_TO_FULL_LENGTH": "CHAR values would keep their trailing blanks",
	"EMPTY_STRING_IS_NULL":    "'' would be NULL",
	"ALLOW_INVALID_DATES":     "dates such as 2024-02-30 would be stored",
}

// sqlModeAssignment is one SET item assigning sql_mode: its value's tokens, and whether it is
// the global one.
type sqlModeAssignment struct {
	value  []sqltok.Token
	global bool
}

// mysqlSQLModeSet is the assignments of a SET of sql_mode (sqlModeSet) in sqlText; ok is false,
// after a look at its first word, for any other statement.
func mysqlSQLModeSet(sqlText string) ([]sqlModeAssignment, bool) {
	s := sqltok.NewScanner(sqlText, sqltok.Postgres)
	if t, ok := s.NextSignificant(); !ok || !t.IsWord("set") || !sqltok.ContainsFold(sqlText, "sql_mode") {
		return nil, false
	}
	return sqlModeSet(sqltok.SignificantTokens(sqlText, sqltok.Postgres))
}

// sqlModeSet reads toks (a SET statement's significant tokens, PostgreSQL's text of it) as
// assignments of sql_mode, and of NAMES or CHARACTER SET, which the frontend keeps; ok is false
// for any other SET (which runs as it is).
func sqlModeSet(toks []sqltok.Token) (modes []sqlModeAssignment, ok bool) {
	if len(toks) < 3 || !toks[0].IsWord("set") {
		return nil, false
	}
	for _, item := range splitTopLevel(toks[1:]) {
		if len(item) > 0 && (item[0].IsWord("names") || len(item) > 1 && item[0].IsWord("character") && item[1].IsWord("set")) {
			continue
		}
		a, ok := sqlModeItem(item)
		if !ok {
			return nil, false
		}
		modes = append(modes, a)
	}
	return modes, len(modes) > 0
}

// sqlModeItem reads one SET item as an assignment of sql_mode.
func sqlModeItem(item []sqltok.Token) (sqlModeAssignment, bool) {
	var a sqlModeAssignment
	i := 0
	if len(item) > 0 && item[0].IsWord("session", "local", "global") {
		a.global, i = item[0].IsWord("global"), 1
	} else if len(item) > 0 && item[0].Kind == sqltok.Operator && item[0].Text == "@@" {
		i = 1
		if len(item) > 2 && item[2].Text == "." && item[1].IsWord("session", "local", "global") {
			a.global, i = item[1].IsWord("global"), 3
		}
	}
	if i+1 >= len(item) || !item[i].IsWord("sql_mode") {
		return a, false
	}
	if op := item[i+1]; op.Kind != sqltok.Operator || op.Text != "=" && op.Text != ":=" {
		return a, false
	}
	a.value = item[i+2:]
	return a, len(a.value) > 0
}

// splitTopLevel splits toks at their commas outside parentheses.
func splitTopLevel(toks []sqltok.Token) [][]sqltok.Token {
	var out [][]sqltok.Token
	depth, start := 0, 0
	for i, t := range toks {
		depth += sqltok.ParenStep(t)
		if depth == 0 && t.Kind == sqltok.Punct && t.Text == "," {
			out = append(out, toks[start:i])
			start = i + 1
		}
	}
	return append(out, toks[start:])
}

// setSQLMode runs a SET of sql_mode (sqlModeSet) on db: each value evaluated, read as MariaDB
// reads it, checked and kept.
func setSQLMode(ctx context.Context, db querier, sqlText string, modes []sqlModeAssignment, args []any) (query.Rows, error) {
	for _, a := range modes {
		if a.global {
			return nil, &query.Error{Code: "HY000", Message: "SET GLOBAL sql_mode is not supported by queryflux on PostgreSQL: set the session's (SET sql_mode = ...) (MySQL error 1235)"}
		}
		v, number, err := sqlModeValue(ctx, db, sqlText, a.value, args)
		if err != nil {
			return nil, err
		}
		mode, bad, ok := mysqlmode.Normal(v, number)
		if !ok {
			return nil, sqlModeError(bad, "")
		}
		for m := range strings.SplitSeq(mode, ",") {
			if why, refused := sqlModesRefused[m]; refused {
				return nil, sqlModeError(m, "PostgreSQL cannot keep it: under it MariaDB's "+why)
			}
		}
		c, ok := db.(interface{ Conn() *pgx.Conn })
		if !ok { // a connection of the pool's: the client's next statement would not see it
			return nil, &query.Error{Code: "HY000", Message: "SET sql_mode needs a connection held for the session (MySQL error 1235)"}
		}
		c.Conn().PgConn().CustomData()[sqlModeKey] = mode
	}
	return engine.TagRows("SET"), nil
}

// sqlModeValue is the text a SET gives sql_mode (value: its tokens in sqlText), and whether it
// was written as a number: DEFAULT MariaDB's default, a word its text, anything else as
// PostgreSQL evaluates it (@@sql_mode in it the connection's).
func sqlModeValue(ctx context.Context, db querier, sqlText string, value []sqltok.Token, args []any) (string, bool, error) {
	if len(value) == 1 && value[0].Kind == sqltok.Word {
		if value[0].IsWord("default") {
			return mysqlmode.Default, false, nil
		}
		return value[0].Text, false, nil
	}
	last := value[len(value)-1]
	expr := mysqlText(sqlText[value[0].Pos:last.Pos+len(last.Text)], connSQLMode(db), notNullLookup{})
	rows, err := db.Query(ctx, "SELECT CAST(("+expr+") AS text)", append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return "", false, err
	}
	var v *string
	for rows.Next() {
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return "", false, err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", false, err
	}
	if v == nil {
		return "", false, sqlModeError("NULL", "")
	}
	return *v, len(value) == 1 && (value[0].Kind == sqltok.Number || numberParam(value[0], args)), nil
}

// numberParam reports whether t is a parameter ($n) bound to an integer: a client's prepared
// `SET sql_mode = ?` with 0 binds a number, which MariaDB reads as its modes' bits, as it reads
// a number written in the statement.
func numberParam(t sqltok.Token, args []any) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(t.Text, "$"))
	if t.Kind != sqltok.Param || err != nil || n < 1 || n > len(args) {
		return false
	}
	switch args[n-1].(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

// sqlModeError is MariaDB's 1231 for a sql_mode it does not take (bad: the part it names), with
// why where it is the proxy's refusal.
func sqlModeError(bad, why string) error {
	msg := "Variable 'sql_mode' can't be set to the value of '" + bad + "'"
	if why != "" {
		msg += ": " + why
	}
	return &query.Error{Code: "42000", Message: msg + " (MySQL error 1231)"}
}

// connSQLMode is the sql_mode a client set on db's connection; MariaDB's default for the pool
// or a connection it was not set on.
func connSQLMode(db querier) string {
	if c, ok := db.(interface{ Conn() *pgx.Conn }); ok {
		return pgconnSQLMode(c.Conn().PgConn())
	}
	return mysqlmode.Default
}

// pgconnSQLMode is the sql_mode a client set on pc (sqlModeKey), MariaDB's default when none.
func pgconnSQLMode(pc *pgconn.PgConn) string {
	if mode, ok := pc.CustomData()[sqlModeKey].(string); ok {
		return mode
	}
	return mysqlmode.Default
}

// withSQLModeReads is sqlText (PostgreSQL's text of a MySQL client's statement) with each
// @@sql_mode, @@session.sql_mode and @@local.sql_mode the string mode (the connection's), and
// @@global.sql_mode MariaDB's default; sqlText itself when it reads none.
func withSQLModeReads(sqlText, mode string) string {
	return withVariableReads(sqlText, "sql_mode", sqltok.StandardString(mode), sqltok.StandardString(mysqlmode.Default))
}

// withVariableReads is sqlText with each @@name, @@session.name and @@local.name the SQL
// literal session, and @@global.name the literal global; sqlText itself when it reads none.
func withVariableReads(sqlText, name, session, global string) string {
	if !strings.Contains(sqlText, "@@") || !sqltok.ContainsFold(sqlText, name) {
		return sqlText
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	var b strings.Builder
	at := 0
	for i, t := range toks {
		if t.Kind != sqltok.Operator || !strings.HasSuffix(t.Text, "@@") {
			continue
		}
		j, read := i+1, session
		if j+2 < len(toks) && toks[j+1].Text == "." && toks[j].IsWord("session", "local", "global") {
			if toks[j].IsWord("global") {
				read = global
			}
			j += 2
		}
		if j >= len(toks) || !toks[j].IsWord(name) {
			continue
		}
		b.WriteString(sqlText[at : t.Pos+len(t.Text)-2])
		b.WriteString(read)
		at = tokEnd(toks[j])
	}
	if at == 0 {
		return sqlText
	}
	b.WriteString(sqlText[at:])
	return b.String()
}
