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

// ALTER TABLE t ADD [CONSTRAINT c] FOREIGN KEY (columns) REFERENCES r [(columns)]: how ORMs
// create foreign keys (TypeORM's synchronize and most migration tools create every table
// first, then its keys). DuckDB declares foreign keys only in CREATE TABLE, so an empty table
// that no other key references is created again with the key, in one transaction with its
// indexes; a table that holds rows or is referenced is refused, naming the way out. DuckDB
// has no referential actions: ON DELETE/UPDATE CASCADE, SET NULL and SET DEFAULT are left out
// (and performed by pgcascade.go); DEFERRABLE is checked at once (deferrability).

// foreignKey is the statement read.
type foreignKey struct {
	table    []string // [schema.]name, as written
	clause   string   // FOREIGN KEY (...) REFERENCES ...(...), without actions
	declared declaredConstraint
}

// addForeignKey reads q as ALTER TABLE ... ADD ... FOREIGN KEY; handled is false for any
// other statement.
func addForeignKey(q *query.Request) (run ownRun, handled bool, err error) {
	toks := q.Analysis().Tokens
	if !strings.EqualFold(sqltok.FirstWord(toks), "alter") || !containsFold(q.SQL, "foreign") {
		return nil, false, nil
	}
	r := sqltok.NewWalker(toks)
	table := alterTableName(r)
	if table == nil || len(table) > 2 || !r.Word("add") {
		return nil, false, nil
	}
	declared := declaredConstraint{kind: 'f', onDelete: 'a', onUpdate: 'a'}
	if r.Word("constraint") {
		declared.name = tokenName(r.Name()) // DuckDB keeps no name for a foreign key: the declared catalog does (pgdeclared.go)
	}
	if !r.Word("foreign") || !r.Word("key") || !r.Punct("(") {
		return nil, false, nil
	}
	cols, ok := r.Names()
	if !ok || !r.Punct(")") || !r.Word("references") {
		return nil, false, nil
	}
	for _, c := range cols {
		declared.columns = append(declared.columns, tokenName(c))
	}
	ref := r.Name()
	if len(ref) > len("public.") && strings.EqualFold(ref[:len("public.")], "public.") {
		ref = "main." + ref[len("public."):] // pg_dump's public.t: DuckDB's main (pgschema.go)
	}
	clause := "FOREIGN KEY (" + strings.Join(cols, ", ") + ") REFERENCES " + ref
	if r.Punct("(") {
		refCols, ok := r.Names()
		if !ok || !r.Punct(")") {
			return nil, false, nil
		}
		clause += " (" + strings.Join(refCols, ", ") + ")"
	}
	for r.Word("on") {
		action := &declared.onUpdate
		if r.Word("delete") {
			action = &declared.onDelete
		} else if !r.Word("update") {
			return nil, false, nil
		}
		// Left out of DuckDB's key, as in CREATE TABLE (pgrefactions.go), and kept in the
		// declared catalog.
		switch {
		case r.Word("no") && r.Word("action"):
		case r.Word("restrict"):
			*action = 'r'
		case r.Word("cascade"):
			*action = 'c'
		case r.Word("set") && r.Word("null"):
			*action = 'n'
		case r.Word("default"):
			*action = 'd'
		default:
			return nil, false, nil
		}
	}
	if declared.deferral, ok = deferrability(r); !ok {
		return nil, false, nil
	}
	if r.Punct(";"); r.More() {
		return nil, false, nil // NOT VALID, MATCH ...: DuckDB's to refuse
	}
	if declared.name == "" {
		declared.name = foreignKeyName(tokenName(table[len(table)-1]), declared.columns)
	}
	fk := foreignKey{table: table, clause: clause, declared: declared}
	return fk.run, true, nil
}

// deferrability reads a key's [NOT] DEFERRABLE [INITIALLY DEFERRED | IMMEDIATE] (Django
// declares every foreign key DEFERRABLE INITIALLY DEFERRED) as declaredConstraint.deferral;
// ok is false when it is written otherwise. A deferred key is checked at COMMIT (pgdeferred.go).
func deferrability(r *sqltok.Walker) (deferral byte, ok bool) {
	for {
		switch {
		case r.Word("deferrable"):
			deferral = max(deferral, 'i')
		case r.Word("not"):
			if !r.Word("deferrable") {
				return 0, false
			}
			deferral = 0
		case r.Word("initially"):
			switch {
			case r.Word("deferred"):
				deferral = 'd'
			case !r.Word("immediate"):
				return 0, false
			}
		default:
			return deferral, true
		}
	}
}

// run creates the table again with the key, if it may.
func (fk foreignKey) run(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	schema, name := "", fk.table[len(fk.table)-1]
	if len(fk.table) == 2 {
		schema = duckSchema(fk.table[0])
	}
	var ddl string
	err := conn.QueryRowContext(ctx, `SELECT sql FROM duckdb_tables() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND table_name = ?`, schema, name).Scan(&ddl)
	if err == sql.ErrNoRows {
		return nil, &query.Error{Code: sqlstate.UndefinedTable, Message: `relation "` + name + `" does not exist`}
	} else if err != nil {
		return nil, wrapErr(err)
	}
	ref := quoteIdent(name)
	if schema != "" {
		ref = quoteIdent(schema) + "." + ref
	}
	var referenced int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'
		AND database_name = current_database() AND referenced_table = ?`, name).Scan(&referenced); err != nil {
		return nil, wrapErr(err)
	}
	if referenced > 0 {
		return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "DuckDB adds a foreign key only to a table " +
			"that no other foreign key references (it creates the table again with the key); declare the key in CREATE TABLE instead"}
	}
	ddl = strings.TrimSuffix(strings.TrimSpace(ddl), ";")
	end := strings.LastIndex(ddl, ")")
	if end < 0 {
		return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "cannot read the definition of table " + name}
	}
	// The rows go back through the key's check: one that references nothing fails the statement
	// (23503), as PostgreSQL's validation of the new key does.
	stmts, err := rebuildTable(ctx, conn, schema, name, ddl[:end]+", "+fk.clause+ddl[end:])
	if err != nil {
		return nil, err
	}
	replaced := "" // a named key keeps another key's name of the same columns (MySQL's two keys of one column)
	if fk.declared.name != "" {
		replaced = " AND (name IS NULL OR name = " + quoteString(fk.declared.name) + ")"
	}
	stmts = append(stmts, "DELETE FROM "+declaredSchema+".constraints WHERE schema_name = "+schemaExpr(duckSchema(schema))+
		" AND table_name = lower("+quoteString(name)+") AND kind = 'f' AND columns = "+fk.declared.columnList()+replaced,
		fk.declared.insert(duckSchema(schema), name))
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		return nil, err
	}
	return engine.TagRows("ALTER TABLE"), nil
}

// tableIndexes are the statements that create the table's own indexes (not its keys'), in the
// order they were created: created again so, a MySQL client's SHOW INDEX lists them as before.
func tableIndexes(ctx context.Context, conn *sql.Conn, schema, name string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT sql FROM duckdb_indexes() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND table_name = ? AND sql IS NOT NULL ORDER BY index_oid`, schema, name)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, wrapErr(err)
		}
		out = append(out, s)
	}
	return out, wrapErr(rows.Err())
}

// rebuildTable are the statements that create table schema.name again as ddl, its rows and
// indexes kept.
func rebuildTable(ctx context.Context, conn *sql.Conn, schema, name, ddl string) ([]string, error) {
	indexes, err := tableIndexes(ctx, conn, schema, name)
	if err != nil {
		return nil, err
	}
	table, copy := qualified(duckSchema(schema), name), quoteIdent("qf_rebuild_"+name)
	return append([]string{"CREATE TEMPORARY TABLE " + copy + " AS SELECT * FROM " + table, "DROP TABLE " + table, ddl,
		"INSERT INTO " + table + " SELECT * FROM " + copy, "DROP TABLE temp.main." + copy}, indexes...), nil
}
