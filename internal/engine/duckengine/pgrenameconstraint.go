package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// ALTER TABLE t RENAME CONSTRAINT a TO b (Django's RenameIndex and AlterUniqueTogether on a
// named constraint, Rails' rename of a key, pg_dump-made schemas renamed by hand). DuckDB keeps
// no constraint names (it refuses: "Schema element not supported yet!"); PostgreSQL clients'
// names live in the declared catalog (pgdeclared.go), so the rename is one there: a primary
// key's or unique constraint's name not declared yet is first declared under the name it has,
// and a unique constraint added by ALTER TABLE ADD CONSTRAINT c UNIQUE, which is an index named
// c here (pgddl.go), has its index created again as b. PostgreSQL's refusals are its own: a
// name the table has no constraint of (42704), a key's new name that a relation has (its
// index's name, 42P07), another constraint's name on the table (42710).

// renameConstraint is ALTER TABLE [IF EXISTS] [ONLY] t RENAME CONSTRAINT from TO to.
type renameConstraint struct {
	schema, table string
	from, to      string
}

// readRenameConstraint reads sqlText as such a statement; ok is false for any other.
func readRenameConstraint(sqlText string) (a renameConstraint, ok bool) {
	if !containsFold(sqlText, "constraint") {
		return a, false
	}
	r := sqltok.NewWalker(sqltok.SignificantTokens(sqlText, sqltok.Postgres))
	name := alterTableName(r)
	if name == nil || !r.Word("rename") || !r.Word("constraint") {
		return a, false
	}
	a.table = name[len(name)-1]
	if len(name) >= 2 {
		a.schema = duckSchema(name[len(name)-2])
	}
	a.from, a.to, ok = readRenamePair(r, true)
	return a, ok
}

// run renames the constraint.
func (a renameConstraint) run(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	var table string
	err := conn.QueryRowContext(ctx, `SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(table_name) = lower(?)`, a.schema, a.table).Scan(&table)
	if err == sql.ErrNoRows {
		return nil, &query.Error{Code: sqlstate.UndefinedTable, Message: fmt.Sprintf(`relation "%s" does not exist`, a.table)}
	} else if err != nil {
		return nil, wrapErr(err)
	}
	keys, err := renameAlter{schema: a.schema, table: table}.undeclaredKeys(ctx, conn)
	if err != nil {
		return nil, err
	}
	kinds, err := a.constraints(ctx, conn, keys)
	if err != nil {
		return nil, err
	}
	index, err := a.uniqueIndex(ctx, conn, table)
	if err != nil {
		return nil, err
	}
	kind, found := kinds[a.from]
	if !found && index == "" {
		return nil, &query.Error{Code: sqlstate.UndefinedObject, Message: fmt.Sprintf(`constraint "%s" for table "%s" does not exist`, a.from, a.table)}
	}
	if a.to == a.from {
		return engine.TagRows("ALTER TABLE"), nil
	}
	if kind == 'p' || kind == 'u' || index != "" {
		// the key's index is renamed with it: a relation of the name refuses it
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+compatPrefix+"qf_pg_class WHERE relname = ?", a.to).Scan(&n); err != nil {
			return nil, wrapErr(err)
		}
		if n > 0 {
			return nil, &query.Error{Code: sqlstate.DuplicateTable, Message: fmt.Sprintf(`relation "%s" already exists`, a.to)}
		}
	}
	if _, taken := kinds[a.to]; taken {
		return nil, &query.Error{Code: sqlstate.DuplicateObject, Message: fmt.Sprintf(`constraint "%s" for relation "%s" already exists`, a.to, a.table)}
	}
	var stmts []string
	for _, k := range keys {
		stmts = append(stmts, k.insert(a.schema, table))
	}
	if found {
		stmts = append(stmts, "UPDATE "+declaredSchema+".constraints SET name = "+quoteString(a.to)+" WHERE schema_name = "+schemaExpr(a.schema)+
			" AND table_name = lower("+quoteString(table)+") AND name = "+quoteString(a.from))
	} else {
		stmts = append(stmts, "DROP INDEX "+qualified(a.schema, a.from), renamedIndexName(index, a.to))
	}
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		return nil, err
	}
	return engine.TagRows("ALTER TABLE"), nil
}

// constraints are the table's constraints' names (declared, and keys' about to be), each with
// its kind.
func (a renameConstraint) constraints(ctx context.Context, conn *sql.Conn, keys []declaredConstraint) (map[string]byte, error) {
	out := map[string]byte{}
	for _, k := range keys {
		out[k.name] = k.kind
	}
	rows, err := conn.QueryContext(ctx, "SELECT name, kind FROM "+declaredSchema+".constraints WHERE schema_name = coalesce(nullif(?, ''), current_schema()) "+
		"AND table_name = lower(?) AND name IS NOT NULL", a.schema, a.table)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			return nil, wrapErr(err)
		}
		out[name] = kind[0]
	}
	return out, wrapErr(rows.Err())
}

// uniqueIndex is the CREATE UNIQUE INDEX of the table's index named a.from, when it stands for
// a unique constraint (ADD CONSTRAINT c UNIQUE); "" for none.
func (a renameConstraint) uniqueIndex(ctx context.Context, conn *sql.Conn, table string) (string, error) {
	var create string
	err := conn.QueryRowContext(ctx, `SELECT sql FROM duckdb_indexes() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND table_name = ? AND index_name = ? AND is_unique AND sql IS NOT NULL`,
		a.schema, table, a.from).Scan(&create)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return create, wrapErr(err)
}

// renamedIndexName is DuckDB's CREATE [UNIQUE] INDEX create with the index named to.
func renamedIndexName(create, to string) string {
	toks := sqltok.SignificantTokens(create, sqltok.Postgres)
	for i, t := range toks {
		if isWord(t, "index") && i+1 < len(toks) {
			n := toks[i+1]
			if isWord(n, "if") && i+4 < len(toks) { // IF NOT EXISTS name
				n = toks[i+4]
			}
			return create[:n.Pos] + quoteIdent(to) + create[n.Pos+len(n.Text):]
		}
	}
	return strings.Replace(create, "INDEX", "INDEX "+quoteIdent(to), 1)
}
