package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Rows written in any order with FOREIGN_KEY_CHECKS=0: MariaDB checks no key while the
// session's checks are off (a data-only dump's INSERTs in table name order, a child's rows
// before its parent's, fixtures loaded in any order, a parent emptied by DELETE or TRUNCATE
// before its children, a key set to a row that comes later) and none of the rows when they
// are turned back on. DuckDB checks every declared key on every row. So, while a MySQL
// client's session has the checks off, a statement that writes rows (INSERT, REPLACE, UPDATE,
// DELETE, TRUNCATE, LOAD) and names a table a foreign key involves first takes those keys out
// of DuckDB: the tables are created again without them (rows and indexes kept, in the
// statement's transaction when there is one) and the keys kept as deferred
// (mysqlfkchecks.go), the table's own keys and the keys that reference it, and those of the
// tables that reach it through keys. SET FOREIGN_KEY_CHECKS=1 adds them back, checking the
// rows then: a key that rows still break waits, pending, and holds the rows written after
// (mysqlfkpending.go), as MariaDB's does. As on MariaDB with the checks off, no ON DELETE action
// runs while the keys are out.

// writesRows reports whether a MySQL client's statement writes a table's rows.
func writesRows(q *query.Request) bool {
	return isMySQL(q) && sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "insert", "replace", "update", "delete", "truncate", "load")
}

// releaseKeysFor takes out of DuckDB the foreign keys that involve a table the statement
// sqlText names (the current schema's), noting them as deferred.
func releaseKeysFor(ctx context.Context, conn *sql.Conn, sqlText string, inTx bool) error {
	named := namedWords(sqlText)
	rows, err := conn.QueryContext(ctx, `SELECT DISTINCT t.table_name FROM duckdb_constraints() k JOIN duckdb_tables() t ON t.table_oid = k.table_oid
		WHERE k.constraint_type = 'FOREIGN KEY' AND k.database_name = current_database() AND k.schema_name = current_schema()
		UNION SELECT DISTINCT r.table_name FROM duckdb_constraints() k JOIN duckdb_tables() r ON r.database_name = k.database_name
		AND r.schema_name = k.schema_name AND lower(r.table_name) = lower(k.referenced_table)
		WHERE k.constraint_type = 'FOREIGN KEY' AND k.database_name = current_database() AND k.schema_name = current_schema()`)
	if err != nil {
		return wrapErr(err)
	}
	var involved, roots []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return wrapErr(err)
		}
		involved = append(involved, name)
		if named[strings.ToLower(name)] {
			roots = append(roots, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(roots) == 0 {
		return wrapErr(err)
	}
	family, _, err := tableFamily(ctx, conn, "", roots...)
	if err != nil || len(family) == 0 {
		return err
	}
	names := make([]string, len(family))
	for i, t := range family {
		names[i] = t.name
	}
	released := map[string][]tableKey{}
	stmts := rebuildFamily(family, func(t familyTable) string {
		to := names
		if slices.Contains(roots, t.name) {
			to = involved // a named table's keys to tables outside the family too
		}
		ddl, keys := withoutKeysTo(t.ddl, to)
		released[t.name] = keys
		return ddl
	}, func(_ familyTable, s string) string { return s }, func(t familyTable) string { return t.name })
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		return err
	}
	for _, t := range family {
		if err := noteDeferred(ctx, conn, t.name, released[t.name]); err != nil {
			return err
		}
	}
	return nil
}

// namesForeignKeyChecks reports cheaply whether a MySQL client's statement may set
// FOREIGN_KEY_CHECKS.
func namesForeignKeyChecks(q *query.Request) bool {
	return isMySQL(q) && len(q.SQL) > len("foreign_key_checks") &&
		strings.Contains(strings.ToLower(q.SQL), "foreign_key_checks") && sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "set")
}
