package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
)

// The referencing tables hidden instead of created again (pgrefatomic.go's set-aside, without
// the copy). DuckDB checks a DELETE of a referenced row (or an UPDATE of its key) against the
// key index of each referencing table, found by the name the referenced table keeps of it, in
// the statement's transaction. A referencing table renamed away and a stand-in of the same name
// and columns, empty, its keys referencing key tables of its own, leave nothing for the check to
// find; the stand-in and its key tables dropped and the table renamed back, the referenced
// table's list of referencing tables is as it was (a rename changes none of it; the stand-in
// never named the referenced table, so its drop takes nothing from the list). Renames and
// creates are catalog changes: the cost is no longer a copy of the referencing rows. The rows
// the statement leaves referencing none are counted as with the tables created again
// (orphanChecks). DuckDB renames no table with an index of its own: its indexes are dropped
// first and created again last (Django and Rails index every key column; an index's build is
// a fraction of the rows' re-insert). Nor a table a key references: such a family (two
// levels) is created again.

// hideable reports whether every referencing table of a family can be hidden: not one with a
// unique index (uniqueIndexDDL), which DuckDB does not create again under its name in the
// transaction that dropped it (a MySQL client's ADD UNIQUE INDEX: Sequelize's destroy()).
func hideable(children []familyTable) bool {
	for _, t := range children {
		if t.referenced || slices.ContainsFunc(t.indexes, uniqueIndexDDL) {
			return false
		}
	}
	return len(children) > 0
}

// standIn are the statements that create, with t renamed to hidden (its indexes dropped), its
// stand-in (named as t, t's columns, each of its keys to schema.table referencing a key table
// of the same types) and those that drop it and rename t back (its indexes are created again
// by the caller, last: t.indexes).
func standIn(ctx context.Context, conn *sql.Conn, t familyTable, schema, table, hidden string) (create, restore []step, err error) {
	create, err = indexDrops(ctx, conn, t)
	if err != nil {
		return nil, nil, err
	}
	rows, err := conn.QueryContext(ctx, `SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database()
		AND schema_name = ? AND table_name = ? ORDER BY column_index`, t.schema, t.name)
	if err != nil {
		return nil, nil, wrapErr(err)
	}
	types := map[string]string{}
	var columns []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return nil, nil, wrapErr(err)
		}
		types[strings.ToLower(name)] = typ
		columns = append(columns, quoteIdent(name)+" "+typ)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, wrapErr(err)
	}
	keys, err := conn.QueryContext(ctx, `SELECT CAST(constraint_column_names AS VARCHAR[]) FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'
		AND database_name = current_database() AND schema_name = ? AND table_name = ? AND lower(referenced_table) = lower(?)
		AND schema_name = coalesce(nullif(?, ''), current_schema())`, t.schema, t.name, table, schema)
	if err != nil {
		return nil, nil, wrapErr(err)
	}
	defer keys.Close()
	create = append(create, step{"ALTER TABLE " + qualified(t.schema, t.name) + " RENAME TO " + quoteIdent(hidden), false})
	var drops []step
	for k := 0; keys.Next(); k++ {
		var cols []any
		if err := keys.Scan(&cols); err != nil {
			return nil, nil, wrapErr(err)
		}
		keyTable := fmt.Sprintf("%s_key_%d", hidden, k)
		var defs, names []string
		for _, c := range cols {
			name := quoteIdent(fmt.Sprint(c))
			defs, names = append(defs, name+" "+types[strings.ToLower(fmt.Sprint(c))]), append(names, name)
		}
		create = append(create, step{"CREATE TABLE " + qualified(t.schema, keyTable) + " (" + strings.Join(defs, ", ") + ", PRIMARY KEY (" + strings.Join(names, ", ") + "))", false})
		columns = append(columns, "FOREIGN KEY ("+strings.Join(names, ", ")+") REFERENCES "+qualified(t.schema, keyTable)+" ("+strings.Join(names, ", ")+")")
		drops = append(drops, step{"DROP TABLE " + qualified(t.schema, keyTable), false})
	}
	if err := keys.Err(); err != nil {
		return nil, nil, wrapErr(err)
	}
	create = append(create, step{"CREATE TABLE " + qualified(t.schema, t.name) + " (" + strings.Join(columns, ", ") + ")", false})
	restore = append(append([]step{{"DROP TABLE " + qualified(t.schema, t.name), false}}, drops...),
		step{"ALTER TABLE " + qualified(t.schema, hidden) + " RENAME TO " + quoteIdent(t.name), false})
	return create, restore, nil
}

// withReferencingHidden is withReferencingRebuilt's set-aside with the referencing tables
// (children, hideable) hidden: actions run on the tables themselves, before the statement, or
// after it when late (they read what the statement wrote: an UPDATE's new keys). The
// transaction is the caller's.
func withReferencingHidden(ctx context.Context, conn *sql.Conn, schema, table string, children []familyTable, args []any, before []step,
	actions func(tableOf func(schema, table string) string) []step, late bool, again func() (query.Rows, error)) (query.Rows, error) {
	var hide, restore, indexes []step
	for i, t := range children {
		create, back, err := standIn(ctx, conn, t, schema, table, fmt.Sprintf("qf_hidden_%d", i))
		if err != nil {
			return nil, err
		}
		hide, restore = append(hide, create...), append(restore, back...)
		for _, index := range t.indexes {
			indexes = append(indexes, step{index, false})
		}
	}
	checks, err := orphanChecks(ctx, conn, schema, table)
	if err != nil {
		return nil, err
	}
	steps := actions(qualified)
	if late {
		before, restore = append(before, hide...), append(restore, steps...)
	} else {
		before = append(append(before, steps...), hide...)
	}
	if err := execSteps(ctx, conn, before, args); err != nil {
		return nil, err
	}
	rows, err := again()
	if err != nil {
		return nil, err
	}
	if err := execSteps(ctx, conn, append(restore, indexes...), args); err != nil {
		return nil, err
	}
	return rows, countOrphans(ctx, conn, checks)
}

// indexDrops are the DROP INDEX statements of t's indexes (those t.indexes creates).
func indexDrops(ctx context.Context, conn *sql.Conn, t familyTable) ([]step, error) {
	rows, err := conn.QueryContext(ctx, `SELECT index_name FROM duckdb_indexes() WHERE database_name = current_database()
		AND schema_name = ? AND table_name = ? AND sql IS NOT NULL ORDER BY index_oid`, t.schema, t.name)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var drops []step
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, wrapErr(err)
		}
		drops = append(drops, step{"DROP INDEX " + qualified(t.schema, name), false})
	}
	return drops, wrapErr(rows.Err())
}

// countOrphans runs orphanChecks' queries: errOrphans when one counts a row.
func countOrphans(ctx context.Context, conn *sql.Conn, checks []string) error {
	for _, check := range checks {
		var orphans int64
		if err := conn.QueryRowContext(ctx, check).Scan(&orphans); err != nil {
			return wrapErr(err)
		} else if orphans > 0 {
			return errOrphans
		}
	}
	return nil
}
