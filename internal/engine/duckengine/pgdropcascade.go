package duckengine

import (
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// DROP TABLE t CASCADE where other tables' foreign keys reference t: PostgreSQL drops those keys
// (not the tables) and t; DuckDB refuses to drop a referenced table and has no way to drop a
// key. TypeORM's dropSchema sends it for every table, in no order, and Sequelize's
// sync({force: true}) for every model's. Each referencing table is created again without its
// keys to t, its rows and indexes kept (as pgforeignkey.go adds a key), then t is dropped. A
// referencing table that is itself referenced cannot be created again: refused, as DuckDB does.

// dropTableCascade reads q as DROP TABLE [IF EXISTS] name[, ...] CASCADE; handled is false for
// any other statement.
func dropTableCascade(q *query.Request) (run ownRun, handled bool) {
	toks := q.Analysis().Tokens
	if !strings.EqualFold(sqltok.FirstWord(toks), "drop") || !containsFold(q.SQL, "cascade") {
		return nil, false
	}
	r := sqltok.NewWalker(toks)
	if !r.Word("drop") || !r.Word("table") {
		return nil, false
	}
	ifExists := r.Word("if") && r.Word("exists")
	var tables [][]string
	for {
		name := nameParts(r)
		if len(name) == 0 || len(name) > 2 {
			return nil, false
		}
		tables = append(tables, name)
		if !r.Punct(",") {
			break
		}
	}
	if !r.Word("cascade") {
		return nil, false
	}
	if r.Punct(";"); r.More() {
		return nil, false
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		var stmts []string
		for _, name := range tables {
			schema, table := "", name[len(name)-1]
			if len(name) == 2 {
				schema = duckSchema(name[0])
			}
			rebuilds, err := dropKeysTo(ctx, conn, schema, table)
			if err != nil {
				return nil, err
			}
			drop := "DROP TABLE "
			if ifExists {
				drop += "IF EXISTS "
			}
			stmts = append(append(stmts, rebuilds...), drop+qualified(schema, table))
		}
		if err := runAll(ctx, conn, stmts, inTx); err != nil {
			return nil, err
		}
		return engine.TagRows("DROP TABLE"), nil
	}, true
}

// dropKeysTo are the statements that create every other table whose foreign key references
// schema.table again without those keys.
func dropKeysTo(ctx context.Context, conn *sql.Conn, schema, table string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT k.schema_name, k.table_name, list(k.constraint_text), any_value(t.sql),
			(SELECT count(*) FROM duckdb_constraints() o WHERE o.constraint_type = 'FOREIGN KEY' AND o.database_name = k.database_name
				AND o.schema_name = k.schema_name AND o.referenced_table = k.table_name AND o.table_name <> k.table_name)
		FROM duckdb_constraints() k JOIN duckdb_tables() t ON t.table_oid = k.table_oid
		WHERE k.constraint_type = 'FOREIGN KEY' AND k.database_name = current_database()
			AND k.schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(k.referenced_table) = lower(?)
			AND lower(k.table_name) <> lower(?)
		GROUP BY k.database_name, k.schema_name, k.table_name`, schema, table, table)
	if err != nil {
		return nil, wrapErr(err)
	}
	type referencing struct {
		schema, name, ddl string
		keys              []any
		referenced        int
	}
	var refs []referencing
	for rows.Next() {
		var r referencing
		var keys any
		if err := rows.Scan(&r.schema, &r.name, &keys, &r.ddl, &r.referenced); err != nil {
			rows.Close()
			return nil, wrapErr(err)
		}
		r.keys, _ = keys.([]any)
		refs = append(refs, r)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, wrapErr(err)
	}
	rows.Close()
	var stmts []string
	for _, r := range refs {
		ddl := strings.TrimSuffix(strings.TrimSpace(r.ddl), ";")
		for _, k := range r.keys {
			text, _ := k.(string)
			without := strings.Replace(ddl, ", "+text, "", 1)
			if text == "" || without == ddl {
				return nil, cannotDropKeys(r.name, table)
			}
			ddl = without
		}
		if r.referenced > 0 {
			return nil, cannotDropKeys(r.name, table)
		}
		indexes, err := tableIndexes(ctx, conn, r.schema, r.name)
		if err != nil {
			return nil, err
		}
		name, copy := qualified(r.schema, r.name), quoteIdent("qf_rebuild_"+r.name)
		stmts = append(append(stmts, "CREATE TEMPORARY TABLE "+copy+" AS SELECT * FROM "+name, "DROP TABLE "+name, ddl,
			"INSERT INTO "+name+" SELECT * FROM "+copy, "DROP TABLE temp.main."+copy), indexes...)
	}
	return stmts, nil
}

func cannotDropKeys(referencing, table string) error {
	return &query.Error{Code: sqlstate.FeatureNotSupported, Message: "cannot drop table " + table +
		" CASCADE: DuckDB drops the foreign keys of table " + referencing + " to it only by creating that table again, " +
		"which other foreign keys reference"}
}

// qualified is [schema.]name, quoted.
func qualified(schema, name string) string {
	if schema == "" {
		return quoteIdent(name)
	}
	return quoteIdent(schema) + "." + quoteIdent(name)
}

// duckSchema is a PostgreSQL client's schema name as DuckDB's: public is main (pgschema.go).
func duckSchema(name string) string {
	if strings.EqualFold(name, "public") {
		return "main"
	}
	return name
}
