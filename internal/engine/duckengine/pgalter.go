package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Sequelize's sync({alter: true}) (an application's start) sends, for every column of every
// model, ALTER TABLE t ALTER COLUMN c SET NOT NULL | DROP NOT NULL, DROP DEFAULT | SET DEFAULT v,
// and TYPE x, whether or not anything changed, and DuckDB refuses each on a table another
// table's foreign key references ("Cannot alter entry ... because there are entries that depend
// on it") or that has an index. A change that changes nothing is answered here without DuckDB:
// the column already (not) null, with no default or that one, of that PostgreSQL type (declared,
// pgdeclared.go). Any other change goes to DuckDB as before, and a TYPE change records the new
// declared type.

// columnAlter is ALTER TABLE t ALTER [COLUMN] c <action>.
type columnAlter struct {
	schema, table, column string
	action                string // "set not null", "drop not null", "drop default", "set default", "type"
	value                 string // SET DEFAULT's expression
	oid                   uint32 // TYPE's PostgreSQL type
	typmod                int32
	typed                 bool // TYPE named a type known here
	sqlText               string
}

// readColumnAlter reads sqlText as such a statement; ok is false for any other.
func readColumnAlter(sqlText string) (a columnAlter, ok bool) {
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	at := 0
	word := func(w string) bool {
		if at < len(toks) && isWord(toks[at], w) {
			at++
			return true
		}
		return false
	}
	if !word("alter") || !word("table") {
		return a, false
	}
	if word("if") && !word("exists") {
		return a, false
	}
	word("only")
	var name []string
	for at < len(toks) && (toks[at].Kind == sqltok.Word || toks[at].Kind == sqltok.QuotedIdent) && !isWord(toks[at], "alter") {
		name = append(name, pgIdent(toks[at]))
		if at++; at < len(toks) && toks[at].Text == "." {
			at++
		}
	}
	if len(name) == 0 || len(name) > 3 || !word("alter") {
		return a, false
	}
	a.table = name[len(name)-1]
	if len(name) >= 2 {
		a.schema = duckSchema(name[len(name)-2])
	}
	word("column")
	if at >= len(toks) || toks[at].Kind != sqltok.Word && toks[at].Kind != sqltok.QuotedIdent {
		return a, false
	}
	a.column, a.sqlText = pgIdent(toks[at]), sqlText
	at++
	switch {
	case word("set") && word("not") && word("null"):
		a.action = "set not null"
	case word("drop") && word("not") && word("null"):
		a.action = "drop not null"
	case at >= 1 && isWord(toks[at-1], "drop") && word("default"):
		a.action = "drop default"
	case at >= 1 && isWord(toks[at-1], "set") && word("default"):
		if at >= len(toks) {
			return a, false
		}
		a.action, a.value = "set default", strings.TrimSpace(sqlText[toks[at].Pos:toks[len(toks)-1].Pos+len(toks[len(toks)-1].Text)])
		return a, true
	default:
		if isWord(toks[at-1], "set") {
			word("data") // SET DATA TYPE
		}
		if !word("type") {
			return a, false
		}
		a.action = "type"
		oid, typmod, n, known := readPGType(toks[at:])
		a.oid, a.typmod, a.typed = oid, typmod, known && at+n == len(toks) // USING ...: a change
	}
	return a, at <= len(toks)
}

// run answers the change, when it changes nothing, else runs it (and records a new type).
func (a columnAlter) run(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	var nullable bool
	var def sql.NullString
	var oid uint32
	var typmod int32
	err := conn.QueryRowContext(ctx, `SELECT is_nullable, column_default, pg_type_oid, pg_typmod FROM `+compatPrefix+`qf_pg_columns
		WHERE database_name = current_database() AND schema_name = coalesce(nullif(?, ''), current_schema())
		AND lower(table_name) = lower(?) AND lower(column_name) = lower(?)`, a.schema, a.table, a.column).Scan(&nullable, &def, &oid, &typmod)
	if err != nil && err != sql.ErrNoRows {
		return nil, wrapErr(err)
	}
	found := err == nil
	if err == nil && a.unchanged(ctx, conn, nullable, def, oid, typmod) {
		return engine.TagRows("ALTER TABLE"), nil
	}
	stmts := []string{pgCompat(&query.Request{SQL: a.sqlText, Protocol: query.ProtocolPostgres})}
	if a.action == "type" && a.typed && err == nil && textTypes[oid] && textTypes[a.oid] {
		// varchar(30) to varchar(150) (Django's auth migrations), text, char(n): DuckDB's
		// VARCHAR either way, which it would not alter on a key's column; the declared
		// type changes
		stmts = nil
	}
	if ia, ok := pgIndexedAlter(a.sqlText); ok {
		if _, err := ia.run(ctx, conn, inTx); err != nil {
			return nil, err
		}
		stmts = nil
	}
	if stmts != nil && a.schema == "" {
		if stmts, err = a.aroundFreshTable(ctx, conn, stmts); err != nil {
			return nil, err
		}
	}
	if a.action == "type" && a.typed && found { // a varchar(n)'s length check (pglength.go)
		retyped, rerr := lengthCheckRetyped(ctx, conn, a.schema, a.table, a.column, oid, typmod, a.oid, a.typmod)
		if rerr != nil {
			return nil, rerr
		}
		stmts = append(retyped, stmts...)
	}
	if a.action == "type" {
		col := declaredColumn{name: a.column, oid: a.oid, typmod: a.typmod}
		d := declaredTable{schema: a.schema, name: a.table}
		stmts = append(stmts, "DELETE FROM "+declaredSchema+".columns WHERE "+d.declaredWhere()+" AND lower(column_name) = lower("+quoteString(a.column)+")")
		if a.typed {
			d.columns = []declaredColumn{col}
			stmts = append(stmts, d.record()[2])
		}
	}
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		return nil, err
	}
	return engine.TagRows("ALTER TABLE"), nil
}

// aroundFreshTable is stmts (the ALTER) on a table DuckDB alters in place, else run on the
// table created again: DuckDB alters no table that has an index or that another's key
// references ("Cannot alter entry ... because there are entries that depend on it": Django's
// contenttypes migration drops NOT NULL of django_content_type.name, which has a unique index
// and is referenced). The table and those referencing it are copied and dropped, the table is
// created again from DuckDB's text of it and altered while it has no index and nothing
// references it, then the rows, the referencing tables and the indexes come back
// (rebuildFamily), in one transaction. An index dropped in a transaction keeps its name until
// it commits, so the indexes cannot simply be dropped and created again around the ALTER.
func (a columnAlter) aroundFreshTable(ctx context.Context, conn *sql.Conn, stmts []string) ([]string, error) {
	var blocking int
	err := conn.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM duckdb_indexes() WHERE database_name = current_database()
			AND schema_name = current_schema() AND lower(table_name) = lower(?)) + (SELECT count(*) FROM duckdb_constraints()
			WHERE constraint_type = 'FOREIGN KEY' AND database_name = current_database() AND schema_name = current_schema()
			AND lower(referenced_table) = lower(?))`, a.table, a.table).Scan(&blocking)
	if err != nil || blocking == 0 {
		return stmts, wrapErr(err)
	}
	family, _, err := tableFamily(ctx, conn, "", a.table)
	if err != nil {
		return nil, err
	}
	at := slices.IndexFunc(family, func(t familyTable) bool { return strings.EqualFold(t.name, a.table) })
	if at < 0 {
		return stmts, nil // no such table: DuckDB's error
	}
	same := func(t familyTable) string { return t.name }
	rebuilt := rebuildFamily(family, func(t familyTable) string { return t.ddl }, func(_ familyTable, s string) string { return s }, same)
	after := 2*len(family) + at + 1 // the copies, the drops, then the creates up to the table's own
	return slices.Concat(rebuilt[:after], stmts, rebuilt[after:]), nil
}

// textTypes are PostgreSQL's text types, each DuckDB's VARCHAR: text, varchar, char.
var textTypes = map[uint32]bool{25: true, 1043: true, 1042: true}

// unchanged reports whether the change leaves the column as it is.
func (a columnAlter) unchanged(ctx context.Context, conn *sql.Conn, nullable bool, def sql.NullString, oid uint32, typmod int32) bool {
	switch a.action {
	case "set not null":
		return !nullable
	case "drop not null":
		return nullable
	case "drop default":
		return !def.Valid
	case "type":
		return a.typed && a.oid == oid && a.typmod == typmod
	case "set default":
		return def.Valid && sameConstant(ctx, conn, def.String, a.value)
	}
	return false
}

// sameConstant reports whether a column's default (DuckDB's text of it) and a default given
// anew are the same constant: both literals, or casts of one, of equal value. Anything else
// (now(), nextval(...)) is not evaluated here.
func sameConstant(ctx context.Context, conn *sql.Conn, def, value string) bool {
	if def == value {
		return true
	}
	if !isConstant(def) || !isConstant(value) {
		return false
	}
	var same bool
	err := conn.QueryRowContext(ctx, "SELECT CAST(("+def+") AS VARCHAR) IS NOT DISTINCT FROM CAST(("+value+") AS VARCHAR)").Scan(&same)
	return err == nil && same
}

// isConstant reports whether text is a literal (a number, a string, true, false, NULL) or
// CAST(literal AS type) / literal::type.
func isConstant(text string) bool {
	toks := sqltok.SignificantTokens(text, sqltok.Postgres)
	literal := func(t sqltok.Token) bool {
		return t.Kind == sqltok.Number || t.Kind == sqltok.String || isWord(t, "true") || isWord(t, "false") || isWord(t, "null")
	}
	switch {
	case len(toks) == 1:
		return literal(toks[0])
	case len(toks) == 2 && toks[0].Text == "-":
		return toks[1].Kind == sqltok.Number
	case len(toks) >= 6 && isWord(toks[0], "cast") && toks[1].Text == "(" && literal(toks[2]) && isWord(toks[3], "as") && toks[len(toks)-1].Text == ")":
		for _, t := range toks[4 : len(toks)-1] {
			if t.Kind != sqltok.Word && t.Text != "(" && t.Text != ")" && t.Text != "," && t.Kind != sqltok.Number {
				return false
			}
		}
		return true
	case len(toks) >= 3 && literal(toks[0]) && toks[1].Text == "::":
		for _, t := range toks[2:] {
			if t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent {
				return false
			}
		}
		return true
	}
	return false
}

// dropForeignKey is ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name [CASCADE | RESTRICT] of a
// foreign key, which DuckDB cannot drop (Sequelize's sync({alter: true}) drops and adds every
// key again): the table is created again without it, its rows and indexes kept, unless another
// table's key references it. A unique constraint ALTER TABLE ... ADD CONSTRAINT c UNIQUE added
// is an index named c (pgddl.go): its index is dropped (Django's RemoveConstraint). Any other
// constraint is DuckDB's to refuse.
type dropForeignKey struct {
	schema, table, name string
	ifExists            bool
	sqlText             string
}

// alterTableName reads ALTER TABLE [IF EXISTS] [ONLY] name from r: the name's one to three
// parts as written; nil when the statement does not start so.
func alterTableName(r *sqltok.Walker) []string {
	if !r.Word("alter") || !r.Word("table") || r.Word("if") && !r.Word("exists") {
		return nil
	}
	r.Word("only")
	if name := nameParts(r); len(name) > 0 && len(name) <= 3 {
		return name
	}
	return nil
}

// readDropConstraint reads sqlText as ALTER TABLE ... DROP CONSTRAINT; ok is false for any
// other statement.
func readDropConstraint(sqlText string) (d dropForeignKey, ok bool) {
	if !containsFold(sqlText, "constraint") {
		return d, false
	}
	r := sqltok.NewWalker(sqltok.SignificantTokens(sqlText, sqltok.Postgres))
	name := alterTableName(r)
	if name == nil || !r.Word("drop") || !r.Word("constraint") {
		return d, false
	}
	d.table, d.sqlText = name[len(name)-1], sqlText
	if len(name) >= 2 {
		d.schema = duckSchema(name[len(name)-2])
	}
	d.ifExists = r.Word("if") && r.Word("exists")
	con := nameParts(r)
	if len(con) != 1 {
		return d, false
	}
	d.name = con[0]
	if !r.Word("cascade") {
		r.Word("restrict")
	}
	if r.Punct(";"); r.More() {
		return d, false
	}
	return d, true
}

func (d dropForeignKey) run(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
	var text, ddl string
	var referenced int
	err := conn.QueryRowContext(ctx, `SELECT c.qf_definition, t.sql, (SELECT count(*) FROM duckdb_constraints() o
			WHERE o.constraint_type = 'FOREIGN KEY' AND o.database_name = t.database_name AND o.schema_name = t.schema_name
			AND lower(o.referenced_table) = lower(t.table_name) AND o.table_oid <> t.table_oid)
		FROM `+compatPrefix+`qf_pg_constraint c JOIN duckdb_tables() t ON t.table_oid = c.conrelid
		WHERE c.contype = 'f' AND c.conname = ? AND t.database_name = current_database()
		AND t.schema_name = coalesce(nullif(?, ''), current_schema()) AND lower(t.table_name) = lower(?)`,
		d.name, d.schema, d.table).Scan(&text, &ddl, &referenced)
	if err == sql.ErrNoRows { // not a foreign key: DuckDB's, or the index of a unique constraint ALTER TABLE added
		stmt := pgCompat(&query.Request{SQL: d.sqlText, Protocol: query.ProtocolPostgres})
		if dropped, err := d.dropCheck(ctx, conn, inTx); dropped || err != nil { // pgcheck.go
			if err != nil {
				return nil, err
			}
			return engine.TagRows("ALTER TABLE"), nil
		}
		if index, err := (renameConstraint{schema: d.schema, from: d.name}).uniqueIndex(ctx, conn, d.table); err != nil {
			return nil, err
		} else if index != "" {
			stmt = "DROP INDEX " + qualified(d.schema, d.name)
		} else if named, err := d.named(ctx, conn); err != nil {
			return nil, err
		} else if !named && d.ifExists {
			return engine.TagRows("ALTER TABLE"), nil // PostgreSQL: a notice, "does not exist, skipping"
		} else if !named {
			return nil, &query.Error{Code: sqlstate.UndefinedObject, Message: `constraint "` + d.name + `" of relation "` + d.table + `" does not exist`}
		}
		if err := runAll(ctx, conn, []string{stmt}, inTx); err != nil {
			return nil, err
		}
		return engine.TagRows("ALTER TABLE"), nil
	} else if err != nil {
		return nil, wrapErr(err)
	}
	return d.dropKey(ctx, conn, inTx, text, ddl, referenced, nil)
}

// named reports whether d's table has a constraint named as d's.
func (d dropForeignKey) named(ctx context.Context, conn *sql.Conn) (bool, error) {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM `+compatPrefix+`qf_pg_constraint c JOIN duckdb_tables() t ON t.table_oid = c.conrelid
		WHERE c.conname = ? AND t.database_name = current_database() AND t.schema_name = coalesce(nullif(?, ''), current_schema())
		AND lower(t.table_name) = lower(?)`, d.name, d.schema, d.table).Scan(&n)
	return n > 0, wrapErr(err)
}

// dropKey creates d's table (ddl its DuckDB text) again without the key whose text that is,
// unless referenced tables reference it, forgets the key's declared name and runs after.
func (d dropForeignKey) dropKey(ctx context.Context, conn *sql.Conn, inTx bool, text, ddl string, referenced int, after []string) (query.Rows, error) {
	ddl = strings.TrimSuffix(strings.TrimSpace(ddl), ";")
	without := strings.Replace(ddl, ", "+text, "", 1)
	if referenced > 0 || without == ddl {
		return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "cannot drop foreign key " + d.name + " of table " + d.table +
			": DuckDB drops a foreign key only by creating its table again, which other foreign keys reference"}
	}
	stmts, err := rebuildTable(ctx, conn, d.schema, d.table, without)
	if err != nil {
		return nil, err
	}
	stmts = append(stmts, "DELETE FROM "+declaredSchema+".constraints WHERE schema_name = "+schemaExpr(d.schema)+
		" AND table_name = lower("+quoteString(d.table)+") AND kind = 'f' AND name = "+quoteString(d.name))
	if err := runAll(ctx, conn, append(stmts, after...), inTx); err != nil {
		return nil, err
	}
	return engine.TagRows("ALTER TABLE"), nil
}
