package duckengine

import (
	"cmp"
	"context"
	"database/sql"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A table's declared types as Trino reports them: a Trino client's varchar(5), char(3),
// timestamp(3) with time zone and time(3) columns are DuckDB's VARCHAR, TIMESTAMPTZ and TIME
// (DuckDB keeps no length, and microseconds whatever the precision), and Trino answers with the
// declared type in a result's columns, DESCRIBE, SHOW COLUMNS and information_schema.columns.
// A Trino client's CREATE TABLE records what it declares in the catalog a PostgreSQL client's
// does (pgdeclared.go: PostgreSQL's oid and typmod of each column), so a table either client
// created reads back as declared by both. A SELECT of a single table's columns (by name, or
// *) gives each column its declared type (engine.MetaTrinoDeclared); any other statement's
// columns keep DuckDB's types.

// trinoColumnSQL creates qf_trino_declared(oid, typmod), the Trino type of a declared column
// where it says more than DuckDB's type (NULL elsewhere), and makes a Trino client's
// information_schema.columns read it.
var trinoColumnSQL = []string{
	`CREATE MACRO {c}.main.qf_trino_declared(type_oid, type_mod) AS CASE
		WHEN type_oid = 1043 AND type_mod > 4 THEN 'varchar(' || (type_mod - 4) || ')'
		WHEN type_oid = 1042 AND type_mod > 4 THEN 'char(' || (type_mod - 4) || ')'
		WHEN type_oid = 1184 AND type_mod BETWEEN 0 AND 6 THEN 'timestamp(' || type_mod || ') with time zone'
		WHEN type_oid = 1114 AND type_mod BETWEEN 0 AND 6 THEN 'timestamp(' || type_mod || ')'
		WHEN type_oid = 1083 AND type_mod BETWEEN 0 AND 6 THEN 'time(' || type_mod || ')' END`,
	// Trino's information_schema.columns has these columns only (and hidden comment,
	// extra_info and column_comment, which a view cannot hide and * would list).
	`CREATE OR REPLACE VIEW {c}.infoschema.trino_columns AS
		SELECT i.table_catalog, i.table_schema, i.table_name, i.column_name, CAST(i.ordinal_position AS BIGINT) AS ordinal_position,
		i.column_default, i.is_nullable,
		coalesce({c}.main.qf_trino_declared(p.pg_type_oid, p.pg_typmod), {c}.main.qf_trino_type(i.data_type)) AS data_type
		FROM {c}.infoschema.columns i LEFT JOIN {c}.main.qf_pg_columns p ON p.database_name = i.table_catalog
		AND p.schema_name = i.table_schema AND p.table_name = i.table_name AND p.column_name = i.column_name`,
}

// trinoCreateTable runs a Trino client's CREATE TABLE that declares a column's type, and
// records the declaration in the same transaction; handled is false for any other statement.
func trinoCreateTable(q *query.Request) (ownRun, bool) {
	if !sqltok.FirstKeywordIs(q.SQL, sqltok.Trino, "create") {
		return nil, false
	}
	decl := readDeclaredTable(q.SQL)
	if decl == nil || len(decl.columns) == 0 {
		return nil, false
	}
	stmt := pgCompat(q)
	return func(ctx context.Context, conn *sql.Conn, inTx bool) (query.Rows, error) {
		record, err := decl.statements(ctx, conn)
		if err != nil {
			return nil, err
		}
		if err := runAll(ctx, conn, append([]string{stmt}, record...), inTx); err != nil {
			return nil, err
		}
		return engine.TagRows("CREATE TABLE"), nil
	}, true
}

// trinoTableTypes is the declared Trino type of each column of a Trino client's SELECT of one
// table's columns (qf_trino_declared; "" for a column without one); nil for any other
// statement, or when no column has one.
func trinoTableTypes(ctx context.Context, conn *sql.Conn, q *query.Request) []string {
	if q.Protocol != query.ProtocolTrino {
		return nil
	}
	table, items, ok := singleTableSelect(cmp.Or(q.ClientSQL, q.SQL))
	if !ok {
		return nil
	}
	full := append([]string{q.Database, q.Schema}[:3-len(table)], table...)
	rows, err := conn.QueryContext(ctx, `SELECT column_name, coalesce(`+compatPrefix+`qf_trino_declared(pg_type_oid, pg_typmod), '')
		FROM `+compatPrefix+`qf_pg_columns WHERE lower(database_name) = `+catalogLit(full[0])+` AND lower(schema_name) = `+schemaLit(full[1])+
		` AND lower(table_name) = lower(`+quoteString(full[2])+`) ORDER BY column_index`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var names, types []string
	byName := map[string]string{}
	for rows.Next() {
		var name, typ string
		if rows.Scan(&name, &typ) != nil {
			return nil
		}
		names, types = append(names, name), append(types, typ)
		byName[strings.ToLower(name)] = typ
	}
	if rows.Err() != nil {
		return nil
	}
	var declared []string
	some := false
	for _, item := range items {
		if item == "*" {
			declared = append(declared, types...)
			for _, t := range types {
				some = some || t != ""
			}
			continue
		}
		t := byName[strings.ToLower(item)]
		declared = append(declared, t)
		some = some || t != ""
	}
	if !some {
		return nil
	}
	return declared
}

// singleTableSelect reads SELECT items FROM table [[AS] alias] [WHERE ... | ORDER BY ... |
// LIMIT ... | OFFSET ... | FETCH ...]: the table's name parts and each item's column name, "*"
// for a * (alone or qualified), "" for an item that is not a column (its type is DuckDB's).
// ok is false for any other statement: a join, a subquery or table function in FROM, a WITH
// (whose names may hide a table), a set operation, a grouping.
func singleTableSelect(sqlText string) (table, items []string, ok bool) {
	sel, ok := readSingleTableSelect(sqlText)
	return sel.table, sel.items, ok
}

// tableSelect is what readSingleTableSelect reads of a SELECT of one table.
type tableSelect struct {
	table []string // the table's name parts
	alias string   // "" when it has none
	items []string // as singleTableSelect's
	// counts are the items that are a COUNT(...): MariaDB says those are never NULL.
	counts []bool
}

// readSingleTableSelect is singleTableSelect with the table's alias and its COUNT items.
func readSingleTableSelect(sqlText string) (sel tableSelect, ok bool) {
	return tableSelectOf(sqltok.SignificantTokens(sqlText, sqltok.Trino))
}

// tableSelectOf is readSingleTableSelect of a statement's significant tokens.
func tableSelectOf(toks []sqltok.Token) (sel tableSelect, ok bool) {
	var table, items []string
	if len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 4 || !isWord(toks[0], "select") {
		return sel, false
	}
	from, depth := -1, 0
	for i := 1; i < len(toks) && from < 0; i++ {
		if depth == 0 && isWord(toks[i], "from") {
			from = i
		}
		depth += sqltok.ParenStep(toks[i])
	}
	if from < 0 {
		return sel, false
	}
	// the table: name parts, then an optional alias, then the end or a clause that keeps columns
	i := from + 1
	for i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent) {
		table = append(table, trinoIdentText(toks[i]))
		i++
		if i >= len(toks) || toks[i].Text != "." {
			break
		}
		i++
	}
	if len(table) == 0 || len(table) > 3 {
		return sel, false
	}
	if i < len(toks) && isWord(toks[i], "as") {
		i++
	}
	if i < len(toks) && (toks[i].Kind == sqltok.QuotedIdent || toks[i].Kind == sqltok.Word && !tableClauseWords[strings.ToLower(toks[i].Text)]) {
		sel.alias = trinoIdentText(toks[i])
		i++ // the alias
	}
	if i < len(toks) && !tableClauseWords[strings.ToLower(toks[i].Text)] {
		return sel, false // a join, a comma, a sample, a set operation
	}
	for j := i; j < len(toks); j++ {
		if isWord(toks[j], "union") || isWord(toks[j], "intersect") || isWord(toks[j], "except") || isWord(toks[j], "group") {
			return sel, false
		}
	}
	start := 1
	if isWord(toks[1], "distinct") || isWord(toks[1], "all") {
		start = 2
	}
	depth = 0
	for j := start; j <= from; j++ {
		if j < from && (depth != 0 || toks[j].Text != ",") {
			depth += sqltok.ParenStep(toks[j])
			continue
		}
		if j == start {
			return sel, false
		}
		items = append(items, itemColumn(toks[start:j]))
		sel.counts = append(sel.counts, sqltok.IsCountItem(toks[start:j]))
		start = j + 1
	}
	sel.table, sel.items = table, items
	return sel, true
}

// tableClauseWords may follow a single table in FROM without changing its columns.
var tableClauseWords = map[string]bool{"where": true, "order": true, "limit": true, "offset": true, "fetch": true}

// itemColumn is the column a select item names: name or q.name with or without an alias; "*"
// for * or q.*; "" for any other item.
func itemColumn(item []sqltok.Token) string {
	n := len(item)
	if n >= 3 && isWord(item[n-2], "as") {
		n -= 2
	} else if n == 2 || n == 4 && item[1].Text == "." {
		n-- // an alias without AS
	}
	item = item[:n]
	if n == 3 && item[1].Text == "." && (item[0].Kind == sqltok.Word || item[0].Kind == sqltok.QuotedIdent) {
		item = item[2:]
	}
	switch {
	case len(item) != 1:
		return ""
	case item[0].Text == "*":
		return "*"
	case item[0].Kind == sqltok.QuotedIdent, item[0].Kind == sqltok.Word && !trinoExpressionWords[strings.ToLower(item[0].Text)]:
		return trinoIdentText(item[0])
	}
	return ""
}

// trinoIdentText is a name token's name: a quoted one without its quotes.
func trinoIdentText(t sqltok.Token) string {
	if t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' {
		return sqltok.MySQLIdent(t) // a MySQL client's text (mysqlkeys.go)
	}
	if t.Kind == sqltok.QuotedIdent {
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)
	}
	return t.Text
}

// declareMore gives each column without a declared type the one of more, where more has one.
func declareMore(declared, more []string) []string {
	if more == nil {
		return declared
	}
	if declared == nil {
		return more
	}
	if len(declared) != len(more) {
		return declared
	}
	for i := range declared {
		if declared[i] == "" {
			declared[i] = more[i]
		}
	}
	return declared
}
