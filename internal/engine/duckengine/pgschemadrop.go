package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// DROP SCHEMA public CASCADE; CREATE SCHEMA public: how test suites and reset scripts empty a
// PostgreSQL database. main (public to these clients, pgschema.go) cannot be dropped, so DROP
// SCHEMA public drops what it holds, as PostgreSQL drops the schema's objects: views, tables
// (a referencing table before the one it references), sequences, macros and types, in one
// transaction; without CASCADE only an empty schema is "dropped" (2BP01 otherwise, as in
// PostgreSQL). CREATE SCHEMA public succeeds when the schema is empty, as after such a drop, and
// fails with 42P06 when it holds anything, as an existing schema does.

// publicSchemaStatement reads q as DROP SCHEMA [IF EXISTS] public [CASCADE | RESTRICT] or
// CREATE SCHEMA public; handled is false for any other statement.
func publicSchemaStatement(q *query.Request) (run ownRun, handled bool) {
	if !containsFold(q.SQL, "public") {
		return nil, false
	}
	r := sqltok.NewWalker(q.Analysis().Tokens)
	create := r.Word("create")
	if !create && !r.Word("drop") || !r.Word("schema") {
		return nil, false
	}
	if !create && r.Word("if") {
		r.Word("exists")
	}
	if name := r.Name(); !strings.EqualFold(name, "public") && name != `"public"` {
		return nil, false
	}
	cascade := !create && r.Word("cascade")
	if !create && !cascade {
		r.Word("restrict")
	}
	if r.Punct(";"); r.More() {
		return nil, false
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		objects, err := publicObjects(ctx, conn)
		switch {
		case err != nil:
			return nil, err
		case create && len(objects) > 0:
			return nil, queryError(sqlstate.DuplicateSchema, `schema "public" already exists`)
		case create:
			return engine.TagRows("CREATE SCHEMA"), nil
		case len(objects) > 0 && !cascade:
			return nil, queryError(sqlstate.DependentObjectsStillExist,
				"cannot drop schema public because other objects depend on it (use DROP ... CASCADE to drop the dependent objects too)")
		}
		if err := runAll(ctx, conn, objects, inTx); err != nil {
			return nil, err
		}
		return engine.TagRows("DROP SCHEMA"), nil
	}, true
}

// publicObjects are the statements that drop what main holds, in an order DuckDB takes.
func publicObjects(ctx context.Context, conn *sql.Conn) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT kind, name, referenced FROM (
		SELECT 1 AS kind, view_name AS name, []::VARCHAR[] AS referenced FROM duckdb_views()
			WHERE NOT internal AND database_name = current_database() AND schema_name = 'main'
		UNION ALL SELECT 2, t.table_name, coalesce(list(k.referenced_table) FILTER (WHERE k.referenced_table <> t.table_name), [])
			FROM duckdb_tables() t LEFT JOIN duckdb_constraints() k ON k.constraint_type = 'FOREIGN KEY'
			AND k.database_name = t.database_name AND k.schema_name = t.schema_name AND k.table_name = t.table_name
			WHERE t.database_name = current_database() AND t.schema_name = 'main' GROUP BY t.table_name
		UNION ALL SELECT 3, sequence_name, [] FROM duckdb_sequences()
			WHERE database_name = current_database() AND schema_name = 'main'
		UNION ALL SELECT DISTINCT CASE WHEN function_type = 'table_macro' THEN 5 ELSE 4 END, function_name, [] FROM duckdb_functions()
			WHERE NOT internal AND function_type IN ('macro', 'table_macro') AND database_name = current_database() AND schema_name = 'main'
		UNION ALL SELECT 6, type_name, [] FROM duckdb_types()
			WHERE NOT internal AND database_name = current_database() AND schema_name = 'main' AND logical_type = 'ENUM'
		) ORDER BY kind, name`)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var views, seqs, rest []string
	refs := map[string][]string{} // each table's, the tables its keys reference
	var tables []string
	for rows.Next() {
		var kind int
		var name string
		var referenced []any
		if err := rows.Scan(&kind, &name, &referenced); err != nil {
			return nil, wrapErr(err)
		}
		q := "main." + quoteIdent(name)
		switch kind {
		case 1:
			views = append(views, "DROP VIEW "+q)
		case 2:
			tables = append(tables, name)
			for _, r := range referenced {
				refs[name] = append(refs[name], fmt.Sprint(r))
			}
		case 3:
			seqs = append(seqs, "DROP SEQUENCE "+q)
		case 4:
			rest = append(rest, "DROP MACRO "+q)
		case 5:
			rest = append(rest, "DROP MACRO TABLE "+q)
		default:
			rest = append(rest, "DROP TYPE "+q)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(err)
	}
	return slices.Concat(views, dropOrder(tables, refs), seqs, rest), nil
}

// dropOrder drops each table once no table left references it.
func dropOrder(tables []string, refs map[string][]string) []string {
	var out []string
	left := slices.Clone(tables)
	for len(left) > 0 {
		next := left[:0:0]
		for _, t := range left {
			referenced := slices.ContainsFunc(left, func(o string) bool { return o != t && slices.Contains(refs[o], t) })
			if referenced {
				next = append(next, t)
			} else {
				out = append(out, "DROP TABLE main."+quoteIdent(t))
			}
		}
		if len(next) == len(left) { // a cycle DuckDB would not have let in: its own error tells
			for _, t := range next {
				out = append(out, "DROP TABLE main."+quoteIdent(t))
			}
			break
		}
		left = next
	}
	return out
}
