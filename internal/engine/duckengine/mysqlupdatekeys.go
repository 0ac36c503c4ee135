package duckengine

import (
	"context"
	"database/sql"
	"strings"

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
// An indexed column that does change in a referenced row is still refused by DuckDB (sent as
// MariaDB's 1451).

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
