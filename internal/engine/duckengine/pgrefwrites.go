package duckengine

import (
	"context"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Django's Model.delete() through a PostgreSQL client: Django declares its keys without an
// action (DEFERRABLE INITIALLY DEFERRED) and performs CASCADE and SET_NULL itself, in one
// transaction, the referencing rows deleted or set NULL first, then the row. DuckDB refuses a
// referenced row's DELETE after the rows that referenced it were deleted or changed in the
// same transaction (its key index drops an entry only at commit), and the refusal fails the
// transaction. So in a PostgreSQL client's transaction a DELETE of a table that a table the
// transaction already wrote references runs with the referencing tables hidden (pgrefhide.go;
// its WHERE read first, pgcascade.go), an UPDATE with them created again (DuckDB refuses a
// referenced row's indexed columns' change while a renamed table references it); a row left
// referencing none is PostgreSQL's 23503. mysqlrefwrites.go is the same for MySQL clients.

// errStillReferenced is PostgreSQL's refusal of a DELETE or UPDATE that leaves a row
// referencing none (the key not named: DuckDB's check counts rows, not keys).
var errStillReferenced = &query.Error{Code: sqlstate.ForeignKeyViolation,
	Message: "update or delete violates a foreign key constraint: a row of a referencing table would reference none"}

// pgWrite runs exec, a PostgreSQL client's statement q (p prepared on the session's
// connection), with the tables referencing its table set aside when it is a DELETE or UPDATE
// in a transaction that wrote one of them, and notes the table it writes. done is called
// when exec is not (exec's rows call it when closed).
func (s *session) pgWrite(ctx context.Context, client, q *query.Request, p *prepared, done func(), exec func() (query.Rows, error)) (query.Rows, error) {
	target := ""
	if client.Protocol == query.ProtocolPostgres && s.status == 'T' {
		target = writeTarget(q.SQL)
	}
	if target == "" {
		return exec()
	}
	var rows query.Rows
	var err error
	if s.wroteReferencing(ctx, target) {
		rows, err = s.referencingWritten(ctx, client, q, p, target, done, exec)
		if err == errOrphans {
			err = errStillReferenced
		}
	} else {
		rows, err = exec()
	}
	if err == nil {
		s.noteWritten(target)
	}
	return rows, err
}

// referencingWritten runs q, a DELETE or UPDATE of target, a table the transaction wrote a
// referencing table of, with the referencing tables hidden (a DELETE pgRefDelete reads) or
// created again (any other).
func (s *session) referencingWritten(ctx context.Context, client, q *query.Request, p *prepared, target string, done func(), exec func() (query.Rows, error)) (query.Rows, error) {
	d := pgRefDelete(client, p.sqlText)
	if d == nil || d.schema != "" {
		return withReferencingRebuilt(ctx, s.conn, true, "", target, nil, nil, noActions, exec)
	}
	defer done()
	args, err := coerceArgs(p.params, q.Args, true)
	if err != nil {
		return nil, err
	}
	return d.aside(ctx, s.conn, true, args, nil, nil, func(sqlText string) (query.Rows, error) { return runInstead(ctx, s.conn, q, p, sqlText) })
}

// noteWritten remembers that the transaction wrote table, for wroteReferencing.
func (s *session) noteWritten(table string) {
	if !slices.ContainsFunc(s.written, func(t string) bool { return strings.EqualFold(t, table) }) {
		s.written = append(s.written, table)
	}
}
