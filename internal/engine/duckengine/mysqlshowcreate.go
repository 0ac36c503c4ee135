package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/mysqlshow"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// SHOW CREATE TABLE v of a view answers as MariaDB's does, with other columns than a table's:
// View, Create View (CREATE ALGORITHM=UNDEFINED ... VIEW `v` AS select ...),
// character_set_client, collation_connection; SHOW CREATE VIEW v too, and MariaDB's 1347 for
// a table. mariadb-dump and mysqldump tell a view by the first column's name and write its
// CREATE VIEW from the second: a view dumped through the proxy was its stand-in table only,
// and restored as an empty table. Which columns the result has depends on the catalog, so the
// statement is run here (an ownRun) rather than written as one SELECT (mysqlshow): a view's
// row from duckdb_views(), a table's from mysqlshow's SELECT.
//
// The view's text is DuckDB's (the client's SELECT as mysqlCompat wrote it, as DuckDB writes it
// back) after its AS, its "names" and strings as MySQL reads them (mysqlText);
// SQL SECURITY INVOKER, as DuckDB runs a view (as its reader), and no DEFINER.

// showCreate is a MySQL client's SHOW CREATE {TABLE | VIEW} [db.]name.
type showCreate struct {
	view     bool // SHOW CREATE VIEW
	db, name string
}

// readShowCreate reads q as SHOW CREATE TABLE or SHOW CREATE VIEW.
func readShowCreate(q *query.Request) (showCreate, bool) {
	if !isMySQL(q) || !sqltok.FirstKeywordIs(q.SQL, sqltok.MySQL, "show") {
		return showCreate{}, false
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if n := len(toks); n > 0 && toks[n-1].Text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) < 4 || !toks[1].IsWord("create") || !toks[2].IsWord("table", "view") {
		return showCreate{}, false
	}
	name := func(t sqltok.Token) (string, bool) {
		if t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent && !t.Unterminated {
			return identText(t), true
		}
		return "", false
	}
	sc := showCreate{view: toks[2].IsWord("view")}
	var ok bool
	switch len(toks) {
	case 4:
		sc.name, ok = name(toks[3])
	case 6:
		if toks[4].Text != "." {
			return showCreate{}, false
		}
		var dbOK bool
		sc.db, dbOK = name(toks[3])
		sc.name, ok = name(toks[5])
		ok = ok && dbOK
	}
	return sc, ok
}

// isShowCreateView reports a MySQL client's SHOW CREATE VIEW, which mysqlshow does not answer.
func isShowCreateView(q *query.Request) bool {
	sc, ok := readShowCreate(q)
	return ok && sc.view
}

// showCreateSchema is SHOW CREATE TABLE's columns; showCreateViewSchema SHOW CREATE VIEW's.
var (
	showCreateSchema = arrow.NewSchema([]arrow.Field{
		engine.DuckDBField("Table", "VARCHAR", arrow.BinaryTypes.String),
		engine.DuckDBField("Create Table", "VARCHAR", arrow.BinaryTypes.String),
	}, nil)
	showCreateViewSchema = arrow.NewSchema([]arrow.Field{
		engine.DuckDBField("View", "VARCHAR", arrow.BinaryTypes.String),
		engine.DuckDBField("Create View", "VARCHAR", arrow.BinaryTypes.String),
		engine.DuckDBField("character_set_client", "VARCHAR", arrow.BinaryTypes.String),
		engine.DuckDBField("collation_connection", "VARCHAR", arrow.BinaryTypes.String),
	}, nil)
)

// mysqlShowCreate runs SHOW CREATE TABLE and SHOW CREATE VIEW as MariaDB answers them.
func mysqlShowCreate(q *query.Request) (ownRun, bool) {
	sc, ok := readShowCreate(q)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, conn *sql.Conn, _ bool) (query.Rows, error) {
		where := inSchema("database_name", "schema_name", sc.db) + " AND lower(view_name) = lower(" + sqltok.StandardString(sc.name) + ")"
		var view, text string
		err := conn.QueryRowContext(ctx, "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND "+where).Scan(&view, &text)
		switch {
		case err == nil:
			return stringRows(showCreateViewSchema, view, "CREATE ALGORITHM=UNDEFINED SQL SECURITY INVOKER VIEW "+mysqlTick(view)+" AS "+mysqlText(viewBody(text)),
				"utf8mb4", "utf8mb4_general_ci"), nil
		case !errors.Is(err, sql.ErrNoRows):
			return nil, wrapErr(err)
		case sc.view:
			return nil, notAView(cmp.Or(sc.db, q.Database), sc.name)
		}
		// a table: mysqlshow's SELECT
		show, _, err := mysqlshow.SQL(q.SQL, q.Database, duckCatalog{})
		if err != nil {
			return nil, err
		}
		var table, create string
		if err := conn.QueryRowContext(ctx, show).Scan(&table, &create); err != nil {
			rewritten := *q
			rewritten.SQL = show
			return nil, showError(q, &rewritten, wrapErr(err))
		}
		return stringRows(showCreateSchema, table, create), nil
	}, true
}

// viewBody is what follows AS in DuckDB's text of a CREATE VIEW, without its semicolon.
func viewBody(createView string) string {
	toks := sqltok.SignificantTokens(createView, sqltok.Postgres)
	i := sqltok.TopLevel(toks, func(t sqltok.Token) bool { return t.IsWord("as") })
	if i < 0 {
		return createView
	}
	return strings.TrimRight(strings.TrimSpace(createView[toks[i].Pos+len(toks[i].Text):]), ";")
}

// mysqlText is DuckDB's SQL text as a MySQL client reads it: a "quoted" name `quoted` (in
// MySQL a string), a string's backslashes doubled (in MySQL an escape).
func mysqlText(duck string) string {
	var b strings.Builder
	for _, t := range sqltok.Tokenize(duck, sqltok.Postgres) {
		switch {
		case t.Kind == sqltok.QuotedIdent && strings.HasPrefix(t.Text, `"`) && !t.Unterminated:
			b.WriteString(mysqlTick(strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)))
		case t.Kind == sqltok.String && strings.HasPrefix(t.Text, "'"):
			b.WriteString(strings.ReplaceAll(t.Text, `\`, `\\`))
		default:
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// mysqlTick is name as a MySQL `quoted` identifier.
func mysqlTick(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// notAView is MariaDB's error 1347 for SHOW CREATE VIEW of a table.
func notAView(db, name string) error {
	if db != "" {
		name = db + "." + name
	}
	return &query.Error{Code: "HY000", Message: "'" + name + "' is not of type 'VIEW' (MySQL error " + strconv.Itoa(1347) + ")"}
}

// stringRows is a result of one row of text values.
func stringRows(schema *arrow.Schema, values ...string) query.Rows {
	done := false
	return engine.NewStream(schema, func(_ context.Context, b *engine.BatchBuilder) (bool, error) {
		if done {
			return false, nil
		}
		done = true
		for i, v := range values {
			if err := b.Append(i, v); err != nil {
				return false, err
			}
		}
		b.EndRow()
		return false, nil
	}, func() string { return "SELECT 1" }, func() error { return nil })
}
