package duckengine

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// ON DELETE / ON UPDATE actions in a PostgreSQL client's own transaction. DuckDB's refusal of
// the statement ("still referenced") fails its transaction, so nothing can follow it there: in
// a transaction, a DELETE of a table a key with an ON DELETE action references, or an UPDATE
// that sets a column such a key (ON UPDATE) references, is performed with its actions from the
// start (the referencing tables set aside, pgrefatomic.go), in the client's transaction. No
// savepoint is needed to undo a failing step: as in PostgreSQL, the statement's error fails
// the transaction (the session answers 25P02 until the client rolls back, and a COMMIT rolls
// back), and DuckDB's rollback takes every step back with the rest of it.
//
// Which tables have such keys is a catalog query, so it is asked only while the engine may
// have one (actionsMaybe: a key with an action in the declared catalog when the database was
// opened, or a PostgreSQL client's DDL declaring one since).

// noteActions marks the engine as maybe having a key with an action when client's statement,
// one the engine runs as its own DDL, declares one.
func (e *Engine) noteActions(client *query.Request) {
	e.noteDeferrable(client)
	e.noteIdentity(client)
	if !withActionsOf(client) || e.actionsMaybe.Load() || !containsFold(client.SQL, "references") { // MySQL's: mysqlactions.go
		return
	}
	if _, declares := withoutReferentialActions(client.SQL); declares {
		e.actionsMaybe.Store(true)
	}
}

// noteDeclaredActions marks the engine as maybe having a key with an action when db's declared
// catalog holds one (or cannot be read).
func (e *Engine) noteDeclaredActions(db *sql.DB) {
	var n int
	err := db.QueryRow("SELECT count(*) FROM " + declaredSchema + ".constraints WHERE kind = 'f' AND (on_delete IN ('c', 'n', 'd') OR on_update IN ('c', 'n', 'd'))").Scan(&n)
	if err != nil || n > 0 {
		e.actionsMaybe.Store(true)
	}
}

// actionsInTransaction runs client's statement q (p prepared on conn, in the client's
// transaction) with the actions of the keys referencing its table, when it is a DELETE or a
// key-setting UPDATE of a table such keys reference; ok is false for any other statement, left
// to run as it is. note is told each table of the current schema the statement writes (the
// statement's, those its actions write), for pgWrite's later statements (pgrefwrites.go).
func (e *Engine) actionsInTransaction(ctx context.Context, conn *sql.Conn, client, q *query.Request, p *prepared, note func(table string)) (rows query.Rows, ok bool, err error) {
	instead := func(sqlText string) (query.Rows, error) { return runInstead(ctx, conn, q, p, sqlText) }
	refused := &query.Error{Code: sqlstate.ForeignKeyViolation, Message: "a foreign key without an action references a row the statement deletes or changes"}
	if d := pgRefDelete(client, p.sqlText); d != nil {
		acts, err := d.actions(ctx, conn)
		if err != nil || len(acts) == 0 {
			return nil, err != nil, err
		}
		args, err := coerceArgs(p.params, q.Args, true)
		if err != nil {
			return nil, true, err
		}
		rows, err := d.cascade(ctx, conn, true, args, refused, instead)
		if err == nil && d.schema == "" {
			note(d.table)
			for _, a := range d.reached {
				note(a.table)
			}
		}
		return rows, true, err
	}
	u := pgRefUpdate(client, p.sqlText)
	if u == nil {
		return nil, false, nil
	}
	acts, err := referencingActions(ctx, conn, u.schema, u.table, "on_update")
	if err != nil {
		return nil, true, err
	}
	setsKey := false
	for _, a := range acts {
		for _, ref := range a.refs {
			_, set := u.sets[strings.ToLower(ref)]
			setsKey = setsKey || set
		}
	}
	if !setsKey {
		return nil, false, nil
	}
	args, err := coerceArgs(p.params, q.Args, true)
	if err != nil {
		return nil, true, err
	}
	rows, err = u.cascade(ctx, conn, true, args, refused, instead)
	if err == nil && u.schema == "" {
		note(u.table)
		for _, a := range acts {
			note(a.table)
		}
	}
	return rows, true, err
}
