package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// DuckDB updates a row's indexed column (a key's, an index's) as a delete and an insert, and
// refuses the delete of a row another table's foreign key references ("Violates foreign key
// constraint because key ... is still referenced"), even when the value stays as it was.
// Django's Model.save() sets every field, so its first save() of a product a review references
// failed on its unique slug. A MySQL client's UPDATE of a table a foreign key references
// leaves out the assignments that change no row it matches (the same count that tells MySQL's
// changed rows, per assignment, in the same transaction): MariaDB writes the same rows. An
// assignment is left out only when its expression reads no parameter and calls nothing (a
// function could answer otherwise when the UPDATE runs than when it was counted). When every
// assignment is left out, nothing is run: the rows matched are counted, none changed.
//
// An indexed column that does change in a referenced row (Django's save() of a unique_together
// field, update(stock=F('stock') + 1) of an indexed column) is refused by DuckDB whatever the
// value. Outside a transaction, such an UPDATE runs again with the tables referencing its
// table set aside around it (withReferencingRebuilt, pgrefatomic.go: copied, dropped, created
// again with their rows, one transaction), which DuckDB then takes; when a row is left
// referencing none (the UPDATE changed a referenced key), nothing is changed and the client
// gets MariaDB's 1451. In a transaction, where DuckDB's refusal would abort it, the tables are
// set aside before such an UPDATE runs: one of a referenced table that changes (by the count) or
// may change an indexed column (changesReferencedKeys).

// unchangedSets are the assignments of an UPDATE that may be left out.
type unchangedSets struct {
	sqlText string       // the UPDATE as it runs
	all     []assignment // its assignments, in order
	sets    []int        // the ones that may be left out, by index in all
	conds   []string     // each one's condition that a row changes, by index in sets
	end     int          // where the SET list written by the client ends in sqlText
}

// leavableSets are the assignments of u that may be left out, conds being their conditions of
// a change; none when no foreign key references u's table. The caller sets sqlText.
func leavableSets(ctx context.Context, conn *sql.Conn, u update, conds []string) unchangedSets {
	l := unchangedSets{all: u.sets, end: u.setsEnd}
	for i, a := range u.sets {
		if plainExpression(a.expr) {
			l.sets, l.conds = append(l.sets, i), append(l.conds, conds[i])
		}
	}
	if len(l.sets) == 0 || !referencedTable(ctx, conn, u.db, u.table) {
		return unchangedSets{}
	}
	return l
}

// plainExpression reports whether expr reads no parameter, calls nothing and assigns nothing.
func plainExpression(expr string) bool {
	for _, t := range sqltok.SignificantTokens(expr, sqltok.Generic) {
		if t.Kind == sqltok.Param || t.Text == "(" || t.Text == "?" || strings.Contains(t.Text, ":=") || strings.Contains(t.Text, "@") {
			return false
		}
	}
	return true
}

// referencedTable reports whether a foreign key references table db.table (db "": the current
// database's).
func referencedTable(ctx context.Context, conn *sql.Conn, db, table string) bool {
	var n int
	err := conn.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND "+
		inSchema("database_name", "schema_name", db)+" AND lower(referenced_table) = lower(?)", table).Scan(&n)
	return err == nil && n > 0
}

// counts are the count query's columns that count, for each assignment that may be left out,
// the rows it changes.
func (l unchangedSets) counts() string {
	var b strings.Builder
	for _, c := range l.conds {
		b.WriteString(", count(*) FILTER (WHERE " + c + ")")
	}
	return b.String()
}

// without is the UPDATE without the assignments that change no row (changes: each one's count
// of rows changed); runs is false when none would be left.
func (l unchangedSets) without(changes []int64) (sqlText string, runs bool) {
	leave := map[int]bool{}
	for k, i := range l.sets {
		if changes[k] == 0 {
			leave[i] = true
		}
	}
	if len(leave) == 0 {
		return l.sqlText, true
	}
	if len(leave) == len(l.all) {
		return "", false
	}
	var kept []string
	for i, a := range l.all {
		if !leave[i] {
			kept = append(kept, l.sqlText[a.from:a.to])
		}
	}
	return l.sqlText[:l.all[0].from] + strings.Join(kept, ", ") + l.sqlText[l.end:], true
}

// retryAside runs the UPDATE q (prepared as p), which DuckDB refused with first because rows
// of other tables reference a row it changes, again with those tables set aside; outside a
// transaction only, on the current database's table.
func (u *updateCount) retryAside(ctx context.Context, conn *sql.Conn, q *query.Request, p *prepared, first error) (query.Rows, error) {
	if !stillReferenced(first) || u.db != "" {
		return nil, first
	}
	rows, err := withReferencingRebuilt(ctx, conn, false, "", u.table, nil, nil, noActions, func() (query.Rows, error) {
		return u.run(ctx, conn, true, q, p)
	})
	if err != nil {
		return nil, first
	}
	return rows, nil
}

// noActions are no steps on the set-aside tables' copies: MySQL's keys here have no action.
func noActions(func(schema, table string) string) []step { return nil }

// changesReferencedKeys reports whether the UPDATE, its assignments' changes counted
// (changes, by leavable index), changes an indexed column (a key's, an index's) of a table
// another table's key references: DuckDB would refuse it for a referenced row.
func (u *updateCount) changesReferencedKeys(ctx context.Context, conn *sql.Conn, changes []int64) bool {
	if u.db != "" || u.table == "" || !referencedTable(ctx, conn, "", u.table) {
		return false
	}
	indexed := indexedColumns(ctx, conn, u.table)
	for i, a := range u.sets {
		if k := slices.Index(u.leavable.sets, i); k >= 0 && changes[k] == 0 {
			continue // left out
		}
		if indexed[strings.ToLower(a.column)] {
			return true
		}
	}
	return false
}

// indexedColumns are the columns of table (the current schema's) that a key or an index
// names, in lower case; an index's expression counts every name in it.
func indexedColumns(ctx context.Context, conn *sql.Conn, table string) map[string]bool {
	cols := map[string]bool{}
	rows, err := conn.QueryContext(ctx, `SELECT CAST(constraint_column_names AS VARCHAR) FROM duckdb_constraints() WHERE database_name = current_database()
		AND schema_name = current_schema() AND lower(table_name) = lower(?) AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY')
		UNION ALL SELECT CAST(expressions AS VARCHAR) FROM duckdb_indexes() WHERE database_name = current_database()
		AND schema_name = current_schema() AND lower(table_name) = lower(?)`, table, table)
	if err != nil {
		return cols
	}
	defer rows.Close()
	for rows.Next() {
		var list string
		if rows.Scan(&list) != nil {
			continue
		}
		for _, t := range sqltok.SignificantTokens(strings.Trim(list, "[]"), sqltok.Postgres) {
			switch t.Kind {
			case sqltok.Word, sqltok.QuotedIdent:
				cols[pgIdent(t)] = true
			case sqltok.String: // '(lower(email))'
				for _, in := range sqltok.SignificantTokens(sqltok.MySQLStringValue(t.Text), sqltok.Postgres) {
					if in.Kind == sqltok.Word || in.Kind == sqltok.QuotedIdent {
						cols[pgIdent(in)] = true
					}
				}
			}
		}
	}
	return cols
}
