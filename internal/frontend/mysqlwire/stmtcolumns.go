package mysqlwire

import (
	"context"
	"errors"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A COM_STMT_PREPARE's answer carries the statement's result columns, as MariaDB's does:
// mysql2's prepare (statement.columns), JDBC's getMetaData before the first execute and
// go-mysql's Stmt read them there. The engine the statement's executions route to is asked,
// taking no capacity slot (proxy.Core.DescribeOn; on the pinned connection in a transaction):
//   - a MySQL-protocol engine prepares the statement itself and its column definitions go to
//     the client as the server wrote them (mysqlengine's DescribeRaw; the statement stays
//     prepared on that connection for its execution); a statement the server refuses (1064,
//     1146) is refused at prepare, as MariaDB refuses it;
//   - an engine that describes for a MySQL client (PostgreSQL) gives the result's Arrow schema, described
//     as an execution's columns are (columnFor); a statement it cannot describe (a parameter
//     PostgreSQL cannot type) is prepared with no columns, as before, and answers at execute.
// A statement that returns no rows (INSERT, UPDATE, DELETE without RETURNING, DDL, SET) is not
// sent: MariaDB gives it no columns either.

// mysqlDescriber is an engine.Describer whose schema of a MySQL client's statement carries what
// an execution's does (names as MariaDB names them, origins, column keys: pgengine); other
// engines (DuckDB) answer a prepare with no columns until theirs does.
type mysqlDescriber interface {
	engine.Describer
	DescribesForMySQL() bool
}

// rawDescriber is an engine (or a pinned session) that answers a prepare with its server's own
// column definitions (mysqlengine).
type rawDescriber interface {
	DescribeRaw(ctx context.Context, q *query.Request) ([][]byte, error)
}

// describerOn routes a description to an engine (proxy.Core) or a pinned session.
type describerOn interface {
	DescribeOn(ctx context.Context, q *query.Request, describe func(ctx context.Context, e any, q *query.Request) error) error
}

// preparedColumns is the column definitions of sql's result (each a packet's payload), for its
// COM_STMT_PREPARE answer; the error is the engine's refusal of the statement.
func (h *session) preparedColumns(sql string) ([][]byte, error) {
	if !mayReturnRows(sql) {
		return nil, nil
	}
	var on describerOn
	if h.pinned != nil {
		on, _ = h.pinned.(describerOn)
	} else {
		on, _ = h.s.backend.(describerOn)
	}
	if on == nil {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	if h.pinned != nil { // a statement PostgreSQL cannot parse leaves the transaction as it was
		defer h.settleStatement(h.guardStatement(ctx, sql), sql, 0)
	}
	var cols [][]byte
	refused := false // by a MySQL-protocol engine's prepare
	err := on.DescribeOn(ctx, h.request(sql, nil), func(ctx context.Context, e any, q *query.Request) error {
		if d, ok := e.(rawDescriber); ok {
			var err error
			cols, err = d.DescribeRaw(ctx, q)
			refused = err != nil
			return err
		}
		d, ok := e.(mysqlDescriber)
		if !ok || !d.DescribesForMySQL() {
			return nil
		}
		desc, err := d.Describe(ctx, q)
		if err != nil || desc.Schema == nil {
			return nil // described at execute, as before
		}
		for _, f := range desc.Schema.Fields() {
			col := columnFor(f)
			inClientCollation(&col, f, h.collation)
			cols = append(cols, h.appendField(nil, col.field, col.extended))
		}
		return nil
	})
	var qe *query.Error
	if err != nil && refused && errors.As(err, &qe) { // the server's answer (not a lost connection)
		return nil, h.clientError(err)
	}
	if err != nil {
		return nil, nil // no healthy member, an engine gone: answered at execute, as before
	}
	return cols, nil
}

// mayReturnRows: sql may have a result: anything but a write without RETURNING and the
// statements that never have one (DDL, SET, transaction control). A statement that is none of
// SQL's (a typo) is sent, for the engine's refusal.
func mayReturnRows(sql string) bool {
	switch strings.ToUpper(sqltok.FirstKeyword(sql, sqltok.MySQL)) {
	case "SET", "CREATE", "DROP", "ALTER", "RENAME", "TRUNCATE", "BEGIN", "START", "COMMIT", "ROLLBACK",
		"SAVEPOINT", "RELEASE", "USE", "LOCK", "UNLOCK", "GRANT", "REVOKE", "DO", "LOAD", "FLUSH", "KILL",
		"PREPARE", "EXECUTE", "DEALLOCATE", "XA":
		return false
	case "INSERT", "REPLACE", "DELETE", "UPDATE":
		s := sqltok.NewScanner(sql, sqltok.MySQL)
		for t, ok := s.NextSignificant(); ok; t, ok = s.NextSignificant() {
			if t.Kind == sqltok.Word && strings.EqualFold(t.Text, "RETURNING") {
				return true
			}
		}
		return false
	}
	return true
}
