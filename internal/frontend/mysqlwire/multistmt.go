package mysqlwire

import (
	"fmt"
	"github.com/queryflux/queryflux/internal/query"
	"regexp"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Stacked statements ("select 1; select 2") run only for a client that asked for them
// (CLIENT_MULTI_STATEMENTS, or COM_SET_OPTION): each runs on its own, in order, its result
// marked SERVER_MORE_RESULTS_EXISTS but the last, and the first error ends the batch, as
// MySQL does (also one the session wrote itself, failed: after it the client reads nothing
// more). Without the flag they are a syntax error (1064), whatever the engine would do
// with them.

// runAll answers a COM_QUERY of one statement or several; the proxy's own statements
// (local) were answered before it.
func (h *session) runAll(sql string) (*mysql.Result, error) {
	if !strings.Contains(sql, ";") {
		return h.run(sql, nil) // one statement, nothing to split (most queries: no allocation)
	}
	stmts := splitStatements(sql)
	if len(stmts) <= 1 {
		return h.run(sql, nil)
	}
	if !h.multiStatements {
		return nil, syntaxError(sql)
	}
	defer func() { h.more = false }()
	for i, s := range stmts {
		h.more = i < len(stmts)-1
		h.syncTx()
		h.failed = false
		res, err := h.runOne(s)
		if err != nil || h.failed || !h.more {
			h.more = false
			h.syncTx()
			return res, err
		}
		if err := h.conn.WriteValue(h.withMetadata(res)); err != nil {
			return nil, err
		}
	}
	panic("mysqlwire: runAll ran past its last statement")
}

// runOne answers one statement: the proxy's own, or the engine's.
func (h *session) runOne(sql string) (*mysql.Result, error) {
	if r, err, ok := h.local(sql); ok {
		return r, err
	}
	if !query.AwaitReady(h.ctx, h.s.backend) {
		return nil, errNotConfigured
	}
	return h.run(sql, nil)
}

// compoundStmt starts a statement whose body holds semicolons of its own (a stored program,
// an anonymous block): it is never split.
var compoundStmt = regexp.MustCompile(`(?is)^\s*(create\s+(or\s+replace\s+)?(definer\s*=\s*\S+\s+)?(aggregate\s+)?(procedure|function|trigger|event|package)\b|begin\s+not\s+atomic\b|delimiter\b)`)

// splitStatements returns sql's statements (one for a stored program's definition).
func splitStatements(sql string) []string {
	if !strings.Contains(sql, ";") || compoundStmt.MatchString(sql) {
		return []string{sql}
	}
	return sqltok.SplitDialect(sql, sqltok.MySQL)
}

// syntaxError is MySQL's answer to stacked statements from a client that did not ask for them.
func syntaxError(sql string) *mysql.MyError {
	near := sql
	if stmts := splitStatements(sql); len(stmts) > 1 {
		near = sql[strings.Index(sql, stmts[1]):]
	}
	if len(near) > 80 {
		near = near[:80]
	}
	return &mysql.MyError{Code: mysql.ER_PARSE_ERROR, State: sqlstate.SyntaxErrorOrAccessRuleViolation, Message: fmt.Sprintf(
		"You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s' at line 1 (several statements need the client's multi-statements option)", near)}
}
