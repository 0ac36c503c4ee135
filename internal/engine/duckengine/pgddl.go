package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/pgcopy"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// ownRun runs a statement this engine runs itself on conn; inTx: conn is in the client's
// transaction, which the statement joins; otherwise it runs in one of its own.
type ownRun func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error)

// ownStatement reads q for what this engine runs itself rather than hand to DuckDB as written:
// a COPY FROM STDIN with the client's data, PostgreSQL DDL that DuckDB takes only one
// object at a time (what pgbench -i sends), and a MySQL client's CREATE TABLE (mysqlddl.go). handled is false for anything else.
func ownStatement(q *query.Request) (run ownRun, handled bool, err error) {
	if isMySQL(q) {
		if run, handled, err := mysqlSet(q); handled {
			return run, true, err
		}
		run, handled := mysqlOwnStatement(q)
		return run, handled, nil
	}
	if q.Protocol == query.ProtocolTrino {
		run, handled := trinoCreateTable(q) // trinotables.go
		return run, handled, nil
	}
	if q.Protocol != query.ProtocolPostgres {
		return nil, false, nil
	}
	if q.CopyIn != nil {
		if cf, ok, err := pgcopy.Parse(q); ok && cf.In {
			return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
				return loadCopy(ctx, conn, cf, q.CopyIn, q.Sequences, inTx)
			}, true, err
		}
	}
	if run, ok := pgDumpSequence(q); ok && strings.EqualFold(sqltok.FirstWord(q.Analysis().Tokens), "create") { // pgidentity.go
		return run, true, nil
	}
	if run, ok, err := setConstraintsOutside(q); ok { // pgdeferred.go
		return run, true, err
	}
	if run, ok, err := addForeignKey(q); ok {
		return run, true, err
	}
	if run, ok := dropTableCascade(q); ok {
		return run, true, nil
	}
	if run, ok := publicSchemaStatement(q); ok {
		return run, true, nil
	}
	if run, ok := lockShare(q); ok { // pgdump.go
		return run, true, nil
	}
	if run, ok := resetIgnored(q); ok { // pgsetconfig.go
		return run, true, nil
	}
	if strings.EqualFold(sqltok.FirstWord(q.Analysis().Tokens), "alter") {
		if run, ok := addIdentity(q); ok { // pgidentity.go
			return run, true, nil
		}
		if run, ok := pgDumpSequence(q); ok {
			return run, true, nil
		}
		if run, ok := addTableKey(q); ok {
			return run, true, nil
		}
		if a, ok := readRenameConstraint(q.SQL); ok {
			return a.run, true, nil
		}
		if a, ok := readRename(q.SQL); ok {
			return a.run, true, nil
		}
		if added, ok := readAddedColumn(q.SQL); ok {
			inner := plainRun(q.SQL, "ALTER TABLE")
			if a, ok := pgIndexedAlter(q.SQL); ok {
				inner = a.run
			}
			return added.wrap(inner), true, nil
		}
		if a, ok := readColumnAlter(q.SQL); ok {
			return a.run, true, nil
		}
		if d, ok := readDropConstraint(q.SQL); ok {
			return d.run, true, nil
		}
		if a, ok := readAddCheck(q.SQL); ok { // pgcheck.go
			return a.run, true, nil
		}
		if a, ok := pgIndexedAlter(q.SQL); ok {
			return a.run, true, nil
		}
	}
	stmts, fresh, tag, ok, err := expandDDL(q)
	var decl *declaredTable
	if err == nil && strings.EqualFold(sqltok.FirstWord(q.Analysis().Tokens), "create") && (!ok || tag == "CREATE TABLE") {
		// Every CREATE TABLE of a PostgreSQL client records what it declares (pgdeclared.go).
		if decl = readDeclaredTable(q.SQL); decl != nil && !ok {
			stmts, tag, ok = []string{pgCompat(q)}, "CREATE TABLE", true
		}
		stmts = withLengthChecks(stmts, decl) // pglength.go
	}
	if !ok || err != nil {
		return nil, ok, err
	}
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		drops, err := fresh.statements(ctx, conn)
		if err != nil {
			return nil, err
		}
		record, err := decl.statements(ctx, conn)
		if err != nil {
			return nil, err
		}
		if err := runAll(ctx, conn, slices.Concat(drops, stmts, record), inTx); err != nil {
			return nil, serialTableExists(err)
		}
		return engine.TagRows(tag), nil
	}, true, nil
}

// runAll runs stmts in one transaction: all of them or none.
func runAll(ctx context.Context, conn *sql.Conn, stmts []string, inTx bool) error {
	if !inTx {
		stmts = append(append([]string{"BEGIN TRANSACTION"}, stmts...), "COMMIT")
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			if !inTx {
				_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			}
			return wrapErr(err)
		}
	}
	return nil
}

// expandDDL reads the DDL PostgreSQL runs as one statement and DuckDB as several:
//   - DROP TABLE|VIEW|INDEX|SEQUENCE|SCHEMA [IF EXISTS] a, b [CASCADE|RESTRICT];
//   - TRUNCATE [TABLE] [ONLY] a, b [CONTINUE IDENTITY] [RESTRICT];
//   - ALTER TABLE [IF EXISTS] [ONLY] t ADD [CONSTRAINT c] PRIMARY KEY (columns): DuckDB adds no
//     key to an existing table, so it becomes what the key enforces, NOT NULL columns and a
//     unique index (named c, or t_pkey as PostgreSQL names the key); ADD [CONSTRAINT c]
//     UNIQUE (columns) (Knex's unique()) the unique index (c, or t_<columns>_key).
//
// ok is false for anything else, DuckDB's to run or refuse.
func expandDDL(q *query.Request) (stmts []string, fresh *freshSequences, tag string, ok bool, err error) {
	toks := q.Analysis().Tokens
	switch w := sqltok.FirstWord(toks); {
	case strings.EqualFold(w, "drop"), strings.EqualFold(w, "truncate"), strings.EqualFold(w, "alter"):
	case strings.EqualFold(w, "create"):
		if stmt, ok := pgCreateIndex(q.SQL); ok {
			return []string{stmt}, nil, "CREATE INDEX", true, nil
		}
		stmts, fresh, ok := pgCreateTable(q.SQL)
		return stmts, fresh, "CREATE TABLE", ok, nil
	default:
		return nil, nil, "", false, nil // most statements: not worth copying the tokens
	}
	r := sqltok.NewWalker(toks)
	switch {
	case r.Word("drop"):
		stmts, tag, ok, err = expandDrop(r)
	case r.Word("truncate"):
		stmts, tag, ok, err = expandTruncate(r)
	case r.Word("alter"):
		stmts, tag, ok, err = expandAddPrimaryKey(r)
	}
	return stmts, nil, tag, ok, err
}

func expandDrop(r *sqltok.Walker) ([]string, string, bool, error) {
	kind := strings.ToLower(r.Next())
	switch kind {
	case "table", "view", "index", "sequence", "schema":
	default:
		return nil, "", false, nil
	}
	prefix := "DROP " + strings.ToUpper(kind) + " "
	if r.Word("if") && r.Word("exists") {
		prefix += "IF EXISTS "
	}
	names, ok := r.Names()
	suffix := ""
	for _, w := range []string{"cascade", "restrict"} {
		if r.Word(w) {
			suffix = " " + strings.ToUpper(w)
		}
	}
	if r.Punct(";"); !ok || len(names) < 2 || r.More() {
		return nil, "", false, nil
	}
	stmts := make([]string, len(names))
	for i, n := range names {
		stmts[i] = prefix + n + suffix
	}
	return stmts, "DROP " + strings.ToUpper(kind), true, nil
}

func expandTruncate(r *sqltok.Walker) ([]string, string, bool, error) {
	r.Word("table")
	only := r.Word("only")
	names, ok := r.Names()
	options := false
	for r.More() && !r.Punct(";") {
		switch {
		case r.Word("continue") && r.Word("identity"), r.Word("restrict"):
			options = true
		case r.Word("restart"), r.Word("cascade"):
			return nil, "", true, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "TRUNCATE ... RESTART IDENTITY and CASCADE are not supported on DuckDB"}
		default:
			return nil, "", false, nil
		}
	}
	if !ok || r.More() || len(names) < 2 && !only && !options {
		return nil, "", false, nil
	}
	stmts := make([]string, len(names))
	for i, n := range names {
		stmts[i] = "TRUNCATE " + n
	}
	return stmts, "TRUNCATE TABLE", true, nil
}

func expandAddPrimaryKey(r *sqltok.Walker) ([]string, string, bool, error) {
	if !r.Word("table") {
		return nil, "", false, nil
	}
	prefix := "ALTER TABLE "
	if r.Word("if") && r.Word("exists") {
		prefix += "IF EXISTS "
	}
	r.Word("only")
	table := duckRelation(r.Name())
	last := r.Last().Text
	if table == "" || !r.Word("add") {
		return nil, "", false, nil
	}
	index := ""
	named := r.Word("constraint")
	if named {
		index = r.Name()
	}
	unique := r.Word("unique")
	if !unique && (!r.Word("primary") || !r.Word("key")) || !r.Punct("(") {
		return nil, "", false, nil
	}
	cols, ok := r.Names()
	if !ok || !r.Punct(")") {
		return nil, "", false, nil
	}
	if r.Punct(";"); r.More() {
		return nil, "", false, nil // USING INDEX, INCLUDE, ...: DuckDB's to refuse
	}
	if unique { // Knex's unique(): the index that enforces it, named as PostgreSQL names the constraint
		if index == "" {
			name := tokenName(last)
			for _, c := range cols {
				name += "_" + tokenName(c)
			}
			index = quoteIdent(name + "_key")
		}
		// An unnamed one IF NOT EXISTS: Sequelize's sync({alter: true}) adds it again at every start
		// (PostgreSQL then makes a duplicate, <t>_<cols>_key1). A name given twice is refused, as
		// PostgreSQL refuses it (42P07, relation already exists).
		ifNotExists := "IF NOT EXISTS "
		if named {
			ifNotExists = ""
		}
		return []string{fmt.Sprintf("CREATE UNIQUE INDEX %s%s ON %s (%s)", ifNotExists, index, table, strings.Join(cols, ", "))}, "ALTER TABLE", true, nil
	}
	if index == "" {
		index = quoteIdent(tokenName(last) + "_pkey")
	}
	var stmts []string
	for _, c := range cols {
		stmts = append(stmts, fmt.Sprintf("%s%s ALTER COLUMN %s SET NOT NULL", prefix, table, c))
	}
	stmts = append(stmts, fmt.Sprintf("CREATE UNIQUE INDEX %s ON %s (%s)", index, table, strings.Join(cols, ", ")))
	return stmts, "ALTER TABLE", true, nil
}

// tokenName is the name an identifier token stands for: unquoted, or folded to lower case.
func tokenName(tok string) string {
	if len(tok) >= 2 && tok[0] == '"' {
		return strings.ReplaceAll(tok[1:len(tok)-1], `""`, `"`)
	}
	return strings.ToLower(tok)
}

// copyOutQuery is the query a COPY ... TO STDOUT reads, for a client that reads the rows as
// COPY data (q.CopyOut): DuckDB's own COPY would write to the daemon's standard output.
func copyOutQuery(q *query.Request) (*query.Request, error) {
	if !q.CopyOut {
		return q, nil
	}
	st, ok, err := pgcopy.Parse(q)
	if !ok || err != nil || st.In {
		return q, err
	}
	sel := st.Query
	if sel == "" {
		cols := "*"
		if st.Columns != nil {
			cols = strings.Join(st.Columns, ", ")
		}
		sel = "SELECT " + cols + " FROM " + st.Table
	}
	c := *q
	c.SQL, c.CopyOut = sel, false
	return &c, nil
}
