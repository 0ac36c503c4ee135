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

// ALTER TABLE t RENAME [COLUMN] a TO b and ALTER TABLE t RENAME TO u (migrations, TypeORM's
// synchronize of a renamed entity column, Django's RenameField and RenameModel). DuckDB renames
// no table or column that has an index ("Cannot alter entry ... because there are entries that
// depend on it"): the table's indexes are dropped around the rename and created again under the
// new names. And what the client declared (pgdeclared.go: varchar(n), jsonb, constraint names)
// goes with the new name, in the same transaction, where it would be lost (the column read as
// DuckDB's type again: TypeORM then drops and adds it, its data gone).

// renameAlter is ALTER TABLE [IF EXISTS] [ONLY] t RENAME [COLUMN] from TO to, or RENAME TO to
// (from "").
type renameAlter struct {
	schema, table string
	from, to      string
	sqlText       string
}

// readRename reads sqlText as such a statement; ok is false for any other.
func readRename(sqlText string) (a renameAlter, ok bool) {
	if !containsFold(sqlText, "rename") {
		return a, false
	}
	r := sqltok.NewWalker(sqltok.SignificantTokens(sqlText, sqltok.Postgres))
	name := alterTableName(r)
	if name == nil || !r.Word("rename") {
		return a, false
	}
	a.table, a.sqlText = name[len(name)-1], sqlText // compared without case
	if len(name) >= 2 {
		a.schema = duckSchema(name[len(name)-2])
	}
	renamesTable := r.Word("to")
	if !renamesTable {
		if r.Word("constraint") {
			return a, false // pgrenameconstraint.go
		}
		r.Word("column")
	}
	a.from, a.to, ok = readRenamePair(r, !renamesTable)
	return a, ok
}

// readRenamePair reads "from TO to [;]" (or, withFrom false, only "to [;]") to the statement's
// end, each name as PostgreSQL folds it.
func readRenamePair(r *sqltok.Walker, withFrom bool) (from, to string, ok bool) {
	name := func() (string, bool) {
		t := r.Peek()
		if t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent {
			return "", false
		}
		r.Next()
		return pgIdent(t), true
	}
	if withFrom {
		if from, ok = name(); !ok || !r.Word("to") {
			return "", "", false
		}
	}
	if to, ok = name(); !ok {
		return "", "", false
	}
	r.Punct(";")
	return from, to, !r.More()
}

// run renames, the table's indexes dropped around it, and moves the declaration.
func (a renameAlter) run(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	rows, err := conn.QueryContext(ctx, `SELECT index_name, sql FROM duckdb_indexes() WHERE database_name = current_database()
		AND schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(table_name) = lower(?) AND sql IS NOT NULL`, a.schema, a.table)
	if err != nil {
		return nil, wrapErr(err)
	}
	var drops, creates []string
	for rows.Next() {
		var name, create string
		if err := rows.Scan(&name, &create); err != nil {
			rows.Close()
			return nil, wrapErr(err)
		}
		drops = append(drops, "DROP INDEX "+qualified(a.schema, name))
		creates = append(creates, a.renamedIndex(create))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrapErr(err)
	}
	schema := schemaExpr(a.schema)
	// PostgreSQL keeps the names of the table's keys (t_pkey stays t_pkey under the new name,
	// t_a_key when a is renamed): those not declared yet are, under the names they have now
	// (read before the rename, written after it: DuckDB renames no table after a write to
	// another in its transaction).
	keys, err := a.undeclaredKeys(ctx, conn)
	if err != nil {
		return nil, err
	}
	var moves []string
	if a.from == "" {
		moves = []string{
			"UPDATE " + declaredSchema + ".columns SET table_name = (SELECT any_value(table_name) FROM duckdb_tables() WHERE database_name = current_database() " +
				"AND schema_name = " + schema + " AND lower(table_name) = lower(" + quoteString(a.to) + ")) WHERE schema_name = " + schema +
				" AND lower(table_name) = lower(" + quoteString(a.table) + ")",
			"UPDATE " + declaredSchema + ".constraints SET table_name = lower(" + quoteString(a.to) + ") WHERE schema_name = " + schema +
				" AND table_name = lower(" + quoteString(a.table) + ")",
		}
		for _, k := range keys {
			moves = append(moves, k.insert(a.schema, a.to))
		}
	} else {
		for _, k := range keys {
			moves = append(moves, k.insert(a.schema, a.table))
		}
		moves = append(moves,
			"UPDATE "+declaredSchema+".columns SET column_name = (SELECT any_value(column_name) FROM duckdb_columns() WHERE database_name = current_database() "+
				"AND schema_name = "+schema+" AND lower(table_name) = lower("+quoteString(a.table)+") AND lower(column_name) = lower("+quoteString(a.to)+")) "+
				"WHERE schema_name = "+schema+" AND lower(table_name) = lower("+quoteString(a.table)+") AND lower(column_name) = lower("+quoteString(a.from)+")",
			"UPDATE "+declaredSchema+".constraints SET columns = list_transform(columns, x -> CASE WHEN x = lower("+quoteString(a.from)+") THEN lower("+
				quoteString(a.to)+") ELSE x END) WHERE schema_name = "+schema+" AND table_name = lower("+quoteString(a.table)+")")
	}
	stmts := append(append(append(drops, pgCompat(&query.Request{SQL: a.sqlText, Protocol: query.ProtocolPostgres})), creates...), moves...)
	if family, ok, err := tableFamily(ctx, conn, a.schema, a.table); err != nil {
		return nil, err
	} else if ok {
		// keys involved: the family is created again under the new names (pgrebuild.go)
		if err := a.check(ctx, conn); err != nil {
			return nil, err
		}
		stmts = append(rebuildFamily(family, a.familyDDL, a.familyIndex, a.familyName), moves...)
	}
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		return nil, err
	}
	return engine.TagRows("ALTER TABLE"), nil
}

// check refuses a rename PostgreSQL refuses, as it does, before the family is created again
// (which would rename nothing, or fail less clearly).
func (a renameAlter) check(ctx context.Context, conn *sql.Conn) error {
	count := func(sqlText string, args ...any) (n int, err error) {
		err = wrapErr(conn.QueryRowContext(ctx, sqlText, args...).Scan(&n))
		return n, err
	}
	inTable := `SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = coalesce(nullif(?, ''), current_schema())
		AND lower(table_name) = lower(?) AND lower(column_name) = lower(?)`
	if a.from == "" {
		n, err := count(`SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = coalesce(nullif(?, ''), current_schema())
			AND lower(table_name) = lower(?)`, a.schema, a.to)
		if err == nil && n > 0 && !strings.EqualFold(a.to, a.table) {
			err = &query.Error{Code: sqlstate.DuplicateTable, Message: fmt.Sprintf(`relation "%s" already exists`, a.to)}
		}
		return err
	}
	n, err := count(inTable, a.schema, a.table, a.from)
	if err == nil && n == 0 {
		return &query.Error{Code: sqlstate.UndefinedColumn, Message: fmt.Sprintf(`column "%s" does not exist`, a.from)}
	}
	if n, err = count(inTable, a.schema, a.table, a.to); err == nil && n > 0 && !strings.EqualFold(a.to, a.from) {
		err = &query.Error{Code: sqlstate.DuplicateColumn, Message: fmt.Sprintf(`column "%s" of relation "%s" already exists`, a.to, a.table)}
	}
	return err
}

// familyDDL is a family table's CREATE TABLE after the rename.
func (a renameAlter) familyDDL(t familyTable) string {
	own := strings.EqualFold(t.name, a.table)
	if a.from == "" {
		return renamedInDDL(t.ddl, a.table, "", a.table, a.to, own)
	}
	return renamedInDDL(t.ddl, a.table, a.from, a.from, a.to, own)
}

// familyIndex is a family table's index after the rename: the renamed table's renamed.
func (a renameAlter) familyIndex(t familyTable, create string) string {
	if strings.EqualFold(t.name, a.table) {
		return a.renamedIndex(create)
	}
	return create
}

// familyName is a family table's name after the rename.
func (a renameAlter) familyName(t familyTable) string {
	if a.from == "" && strings.EqualFold(t.name, a.table) {
		return a.to
	}
	return t.name
}

// undeclaredKeys are the table's primary key and unique constraints with no declared name, each
// under the name the catalog gives it now.
func (a renameAlter) undeclaredKeys(ctx context.Context, conn *sql.Conn) ([]declaredConstraint, error) {
	kind := "CASE k.constraint_type WHEN 'PRIMARY KEY' THEN 'p' ELSE 'u' END"
	cols := "list_transform(k.constraint_column_names, x -> lower(x))"
	rows, err := conn.QueryContext(ctx, "SELECT "+kind+", "+cols+", "+compatPrefix+"qf_constraint_name(k.database_name, k.schema_name, k.table_name, k.constraint_type, "+
		"k.constraint_column_names, CASE k.constraint_type WHEN 'PRIMARY KEY' THEN k.table_name || '_pkey' ELSE k.constraint_name END) "+
		"FROM duckdb_constraints() k WHERE k.database_name = current_database() AND k.schema_name = coalesce(nullif(?, ''), current_schema()) "+
		"AND lower(k.table_name) = lower(?) AND k.constraint_type IN ('PRIMARY KEY', 'UNIQUE') AND NOT EXISTS (SELECT 1 FROM "+declaredSchema+
		".constraints d WHERE d.schema_name = k.schema_name AND d.table_name = lower(k.table_name) AND d.kind = "+kind+" AND d.columns = "+cols+")",
		a.schema, a.table)
	if err != nil {
		return nil, wrapErr(err)
	}
	defer rows.Close()
	var out []declaredConstraint
	for rows.Next() {
		var kind, name string
		var cols []any
		if err := rows.Scan(&kind, &cols, &name); err != nil {
			return nil, wrapErr(err)
		}
		c := declaredConstraint{kind: kind[0], name: name}
		for _, col := range cols {
			c.columns = append(c.columns, fmt.Sprint(col))
		}
		out = append(out, c)
	}
	return out, wrapErr(rows.Err())
}

// renamedIndex is an index's CREATE INDEX (DuckDB's text of it) on the renamed table or column.
func (a renameAlter) renamedIndex(create string) string {
	toks := sqltok.SignificantTokens(create, sqltok.Postgres)
	var out strings.Builder
	from, on := 0, -1
	for i, t := range toks {
		if on < 0 {
			if isWord(t, "on") {
				on = i
			}
			continue
		}
		name := t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent
		if !name {
			continue
		}
		var replace bool
		if a.from == "" {
			// the table's name: the last part of the name after ON
			replace = i > on && (i+1 >= len(toks) || toks[i+1].Text != ".") && strings.EqualFold(pgIdent(t), a.table) && i <= on+3
		} else {
			// the column's name, in the parentheses after the table's
			replace = i > on+1 && (i+1 >= len(toks) || toks[i+1].Text != "(") && strings.EqualFold(pgIdent(t), a.from) && toks[i-1].Text != "."
		}
		if replace {
			out.WriteString(create[from:t.Pos])
			out.WriteString(quoteIdent(a.to))
			from = t.Pos + len(t.Text)
			if a.from == "" {
				break
			}
		}
	}
	out.WriteString(create[from:])
	return out.String()
}

// addedColumn is ALTER TABLE t ADD [COLUMN] [IF NOT EXISTS] c type ... of a type known here
// (readPGType): its declared type is recorded, as CREATE TABLE's are, where DuckDB would keep
// one VARCHAR for varchar(7).
type addedColumn struct {
	table       declaredTable
	ifNotExists bool
}

// readAddedColumn reads sqlText as such a statement; ok is false for any other.
func readAddedColumn(sqlText string) (a addedColumn, ok bool) {
	if !containsFold(sqlText, "add") {
		return a, false
	}
	r, toks, ok := alterTableAdd(sqlText, &a.table.schema, &a.table.name) // pgcheck.go
	if !ok {
		return a, false
	}
	r.Word("column")
	a.ifNotExists = r.Word("if") && r.Word("not") && r.Word("exists")
	at := len(toks)
	for i := range toks {
		if toks[i].Pos == r.Peek().Pos && r.More() {
			at = i
			break
		}
	}
	if at+1 >= len(toks) || toks[at].Kind != sqltok.Word && toks[at].Kind != sqltok.QuotedIdent || tableConstraintStart(toks[at]) {
		return a, false
	}
	if sqltok.TopLevel(toks[at+1:], func(t sqltok.Token) bool { return t.Text == "," }) >= 0 {
		return a, false // several actions
	}
	oid, typmod, _, known := readPGType(toks[at+1:])
	if !known {
		return a, false
	}
	a.table.columns = []declaredColumn{{name: pgIdent(toks[at]), oid: oid, typmod: typmod}}
	return a, true
}

// wrap runs inner, the ADD COLUMN, and records the column's type in the same transaction.
func (a addedColumn) wrap(inner ownRun) ownRun {
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		col := a.table.columns[0].name
		if a.ifNotExists {
			var n int
			if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database()
				AND schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(table_name) = lower(?) AND lower(column_name) = lower(?)`,
				a.table.schema, a.table.name, col).Scan(&n); err != nil {
				return nil, wrapErr(err)
			}
			if n > 0 { // PostgreSQL's notice: nothing added, nothing declared
				return inner(ctx, conn, inTx)
			}
		}
		if !inTx {
			if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
				return nil, wrapErr(err)
			}
		}
		rows, err := inner(ctx, conn, true)
		if err == nil {
			err = runAll(ctx, conn, []string{"DELETE FROM " + declaredSchema + ".columns WHERE " + a.table.declaredWhere() +
				" AND lower(column_name) = lower(" + quoteString(col) + ")", a.table.record()[2]}, true)
		}
		if c := a.table.columns[0]; err == nil && lengthCheck(c.name, c.oid, c.typmod) != "" {
			// a varchar(n)'s length check (pglength.go): DuckDB adds no column with a
			// constraint, so the table is created again with it (rows too long: 22001)
			var fit []string
			if fit, err = lengthCheckRetyped(ctx, conn, a.table.schema, a.table.name, c.name, 0, -1, c.oid, c.typmod); err == nil {
				err = runAll(ctx, conn, fit, true)
			}
		}
		if !inTx {
			if err != nil {
				_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			} else if _, cerr := conn.ExecContext(ctx, "COMMIT"); cerr != nil {
				_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
				err = wrapErr(cerr)
			}
		}
		if err != nil {
			return nil, err
		}
		return rows, nil
	}
}

// plainRun runs sqlText (a PostgreSQL client's) as DuckDB's, in the transaction or one of its own.
func plainRun(sqlText, tag string) ownRun {
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		if err := runAll(ctx, conn, []string{pgCompat(&query.Request{SQL: sqlText, Protocol: query.ProtocolPostgres})}, inTx); err != nil {
			return nil, err
		}
		return engine.TagRows(tag), nil
	}
}
