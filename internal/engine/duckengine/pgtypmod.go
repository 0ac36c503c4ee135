package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/queryflux/queryflux/internal/engine"

	"github.com/queryflux/queryflux/internal/query"
)

// A PostgreSQL client's SELECT of a table's varchar(n), char(n) and varchar columns describes
// them as PostgreSQL does: RowDescription's type 1043 (varchar) or 1042 (bpchar) with the
// type modifier n+4 (-1 without a length), which JDBC's ResultSetMetaData.getPrecision,
// psycopg's cursor.description (internal_size) and SQLAlchemy's reflection of a query read;
// DuckDB keeps one VARCHAR for all of them, which went out as text (25). The declared type is
// the one the compatibility catalog keeps (pgdeclared.go, qf_pg_columns), read once per table
// and kept for the statements of pooled connections as MySQL's column keys are
// (columnkeycache.go). A char(n) value goes out padded with spaces to n characters, as
// PostgreSQL's does. Only a SELECT of one table's columns (by name, with or without an alias,
// or *) gets them (readSingleTableSelect), and only for a column DuckDB answers as VARCHAR; an
// expression's column, a join's, keeps DuckDB's type, as most of PostgreSQL's expressions are
// text.

// pgColumnType is a column's PostgreSQL type where it says more than DuckDB's VARCHAR: oid
// 1043 or 1042 and its typmod; oid 0 for any other column.
type pgColumnType struct {
	oid    uint32
	typmod int32
}

// pgTypedColumn is one of a table's columns as pgTableTypes reads it.
type pgTypedColumn struct {
	name string
	typ  pgColumnType
}

// pgTableTypes is each result column's pgColumnType for a PostgreSQL client's SELECT of one
// table's columns; nil for any other statement, or when no column is a varchar or char.
func pgTableTypes(ctx context.Context, conn *sql.Conn, q *query.Request) []pgColumnType {
	if q.Protocol != query.ProtocolPostgres {
		return nil
	}
	a := q.ClientAnalysis() // the core's tokens: the client's statement is not read again
	if len(a.Statements) != 1 {
		return nil
	}
	sel, ok := tableSelectOf(a.Statements[0].Significant)
	if !ok {
		return nil
	}
	// the session's database (DuckDB's current one, not the name the client logged in with)
	// and the default schema, unless the statement names them
	full := append([]string{"", "main"}[:3-len(sel.table)], sel.table...)
	if strings.EqualFold(full[1], "public") {
		full[1] = "main"
	}
	cols := cachedPgTypes(ctx, conn, full[0], full[1], full[2])
	var out []pgColumnType
	some := false
	for _, item := range sel.items {
		if item == "*" {
			for _, c := range cols {
				out = append(out, c.typ)
				some = some || c.typ.oid != 0
			}
			continue
		}
		var typ pgColumnType
		for _, c := range cols {
			if strings.EqualFold(c.name, item) {
				typ = c.typ
				break
			}
		}
		out = append(out, typ)
		some = some || typ.oid != 0
	}
	if !some {
		return nil
	}
	return out
}

// cachedPgTypes is readPgTypes, kept for the statements of pooled connections
// (columnkeycache.go).
func cachedPgTypes(ctx context.Context, conn *sql.Conn, db, schema, table string) []pgTypedColumn {
	c := columnKeysCacheOf(ctx)
	if c == nil {
		cols, _ := readPgTypes(ctx, conn, db, schema, table)
		return cols
	}
	t := tableName{db: strings.ToLower(db) + "\x00" + strings.ToLower(schema), table: strings.ToLower(table)}
	return keptRead(c, &c.pgTypes, t, func() ([]pgTypedColumn, bool) { return readPgTypes(ctx, conn, db, schema, table) })
}

// readPgTypes reads db.schema.table's columns in order with their declared varchar and char
// types (qf_pg_columns); ok is false when the catalog could not be read.
func readPgTypes(ctx context.Context, conn *sql.Conn, db, schema, table string) (cols []pgTypedColumn, ok bool) {
	rows, err := conn.QueryContext(ctx, `SELECT column_name, CASE WHEN data_type = 'VARCHAR' AND pg_type_oid IN (1042, 1043) THEN pg_type_oid ELSE 0 END, pg_typmod
		FROM `+compatPrefix+`qf_pg_columns WHERE lower(database_name) = `+catalogLit(db)+` AND lower(schema_name) = `+schemaLit(schema)+
		` AND lower(table_name) = lower(`+quoteString(table)+`) ORDER BY column_index`)
	if err != nil {
		return nil, false
	}
	defer rows.Close()
	for rows.Next() {
		var c pgTypedColumn
		var oid int64
		if rows.Scan(&c.name, &oid, &c.typ.typmod) != nil {
			return nil, false
		}
		if c.typ.oid = uint32(oid); oid == 0 {
			c.typ.typmod = 0
		}
		cols = append(cols, c)
	}
	return cols, rows.Err() == nil
}

// pgTyped gives each column its pgColumnType (one per column, else none).
func pgTyped(cols []column, types []pgColumnType) {
	if len(types) != len(cols) {
		return
	}
	for i := range cols {
		if cols[i].dbType == "VARCHAR" {
			cols[i].pg = types[i]
		}
	}
}

// bpcharPad is a char(n) value (typmod n+4) padded with spaces to n characters; other values
// as they are.
func bpcharPad(v any, typmod int32) any {
	s, ok := v.(string)
	n := int(typmod) - 4
	if !ok || n <= 0 || len(s) >= n*utf8.UTFMax {
		return v
	}
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return v
}

// withPgType is md with t as the PostgreSQL type (engine.MetaPGOID, MetaPGTypmod).
func withPgType(md arrow.Metadata, t pgColumnType) arrow.Metadata {
	return arrow.NewMetadata(slices.Concat(md.Keys(), []string{engine.MetaPGOID, engine.MetaPGTypmod}),
		slices.Concat(md.Values(), []string{strconv.FormatUint(uint64(t.oid), 10), strconv.FormatInt(int64(t.typmod), 10)}))
}

// pgTypedSchema is s with each VARCHAR column given its pgColumnType (one per column, else s).
func pgTypedSchema(s *arrow.Schema, types []pgColumnType) *arrow.Schema {
	if s == nil || len(types) != s.NumFields() {
		return s
	}
	fields := s.Fields()
	for i, t := range types {
		if d, _ := fields[i].Metadata.GetValue(engine.MetaDuckDBType); t.oid != 0 && d == "VARCHAR" {
			fields[i].Metadata = withPgType(fields[i].Metadata, t)
		}
	}
	return arrow.NewSchema(fields, nil)
}
