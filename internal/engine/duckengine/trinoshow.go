package duckengine

import (
	"cmp"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino's SHOW statements, as a Trino client (the CLI, DBeaver, Superset) browses a catalog:
// SHOW CATALOGS, SHOW SCHEMAS [FROM catalog], SHOW TABLES [FROM [catalog.]schema], SHOW COLUMNS
// FROM table and DESCRIBE table, each with Trino's columns (Catalog; Schema; Table; Column,
// Type, Extra, Comment) and names, optionally filtered by LIKE 'pattern'. DuckDB's own SHOW
// answers other columns, lists the compatibility catalog's relations beside the client's, and
// has no SHOW CATALOGS. A column's Type is the Trino type the frontend announces for that
// column in a result (trinohttp's mapping of the value DuckDB sends): qf_trino_type.

// trinoShowSQL creates the type names' macros.
var trinoShowSQL = []string{
	`CREATE MACRO {c}.main.qf_trino_scalar_type(t) AS CASE
		WHEN t IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'DOUBLE', 'BOOLEAN', 'DATE', 'VARCHAR', 'UUID', 'JSON') THEN lower(t)
		WHEN t = 'HUGEINT' THEN 'decimal(38,0)' WHEN t = 'UHUGEINT' THEN 'decimal(39,0)'
		WHEN t = 'UTINYINT' THEN 'smallint' WHEN t = 'USMALLINT' THEN 'integer' WHEN t = 'UINTEGER' THEN 'bigint'
		WHEN t = 'UBIGINT' THEN 'decimal(20,0)' WHEN t = 'FLOAT' THEN 'real'
		WHEN t LIKE 'DECIMAL(%' THEN lower(replace(t, ' ', ''))
		WHEN t = 'TIMESTAMP' THEN 'timestamp(6)' WHEN t = 'TIMESTAMP_S' THEN 'timestamp(0)'
		WHEN t = 'TIMESTAMP_MS' THEN 'timestamp(3)' WHEN t = 'TIMESTAMP_NS' THEN 'timestamp(9)'
		WHEN t = 'TIMESTAMP WITH TIME ZONE' THEN 'timestamp(6) with time zone' WHEN t = 'TIME WITH TIME ZONE' THEN 'time(6) with time zone'
		WHEN t = 'TIME' THEN 'time(6)' WHEN t = 'BLOB' THEN 'varbinary' WHEN t = 'INTERVAL' THEN 'interval day to second'
		WHEN t = 'BIT' OR t LIKE 'ENUM(%' OR t LIKE 'VARCHAR(%' THEN 'varchar'
		ELSE lower(t) END`,
	`CREATE MACRO {c}.main.qf_trino_type(t) AS CASE WHEN t LIKE '%[]'
		THEN 'array(' || {c}.main.qf_trino_scalar_type(left(t, length(t) - 2)) || ')'
		ELSE {c}.main.qf_trino_scalar_type(t) END`,
}

// trinoShow is a Trino client's SHOW statement as DuckDB SQL; ok is false for any other
// statement. A catalog or schema not named is the client's current one (DuckDB's current
// database, and main, when the client has none).
func trinoShow(q *query.Request) (string, bool) {
	if q.Protocol != query.ProtocolTrino {
		return "", false
	}
	first := sqltok.FirstKeywordIs
	if !first(q.SQL, sqltok.Trino, "show") && !first(q.SQL, sqltok.Trino, "describe") && !first(q.SQL, sqltok.Trino, "desc") {
		return "", false
	}
	r := sqltok.NewWalker(sqltok.Tokenize(q.SQL, sqltok.Trino))
	from := func() []string {
		if r.Word("from") || r.Word("in") {
			return nameParts(r)
		}
		return nil
	}
	describe := r.Word("describe") || r.Word("desc")
	if !describe && !r.Word("show") {
		return "", false
	}
	var s listing
	switch {
	case describe || r.Word("columns") && (r.Word("from") || r.Word("in")):
		parts := nameParts(r)
		if len(parts) == 0 || len(parts) > 3 {
			return "", false
		}
		full := append([]string{q.Database, q.Schema}[:3-len(parts)], parts...) // schema.table, catalog.schema.table
		s = showColumns(full)
	case r.Word("catalogs"):
		s = listing{cols: `"Catalog"`, inner: `SELECT database_name AS "Catalog" FROM duckdb_databases()
			WHERE NOT internal AND database_name NOT IN ('memory', '` + compatCatalog + `')`}
	case r.Word("schemas"):
		catalog := q.Database
		if parts := from(); len(parts) == 1 {
			catalog = parts[0]
		} else if parts != nil {
			return "", false
		}
		s = listing{cols: `"Schema"`, inner: `SELECT schema_name AS "Schema", database_name FROM duckdb_schemas() WHERE schema_name <> '` + declaredSchema + `'`,
			where: `lower(database_name) = ` + catalogLit(catalog) + ` AND ` + mustExist("Catalog", catalogLit(catalog), "")}
	case r.Word("tables"):
		schema := []string{q.Database, q.Schema}
		if parts := from(); len(parts) == 1 || len(parts) == 2 {
			schema = append([]string{q.Database}, parts...)[len(parts)-1:]
		} else if parts != nil {
			return "", false
		}
		s = listing{cols: `"Table"`, inner: `SELECT table_name AS "Table", database_name, schema_name FROM duckdb_tables()
			UNION ALL SELECT view_name, database_name, schema_name FROM duckdb_views() WHERE NOT internal`,
			where: `lower(database_name) = ` + catalogLit(schema[0]) + ` AND lower(schema_name) = ` + schemaLit(schema[1]) +
				` AND ` + mustExist("Schema", catalogLit(schema[0]), schemaLit(schema[1]))}
	default:
		return "", false
	}
	return s.sql(r)
}

// listing is a SHOW statement's answer: cols selected from inner (the first filtered by the
// statement's LIKE), where, in order (default: by the first).
type listing struct{ cols, inner, where, order string }

// sql reads an optional LIKE 'pattern' [ESCAPE 'c'] and the end of the statement.
func (s listing) sql(r *sqltok.Walker) (string, bool) {
	first, _, _ := strings.Cut(s.cols, ",")
	where := []string{}
	if s.where != "" {
		where = append(where, s.where)
	}
	if r.Word("like") {
		pattern := r.Peek()
		if pattern.Kind != sqltok.String {
			return "", false
		}
		r.Next()
		like := first + " LIKE " + pattern.Text
		if r.Word("escape") {
			esc := r.Peek()
			if esc.Kind != sqltok.String {
				return "", false
			}
			r.Next()
			like += " ESCAPE " + esc.Text
		}
		where = append(where, like)
	}
	r.Punct(";")
	if r.More() {
		return "", false
	}
	sql := "SELECT " + s.cols + " FROM (" + s.inner + ")"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	return sql + " ORDER BY " + cmp.Or(s.order, first), true
}

// showColumns lists a table's columns (catalog, schema, name) in their order, each typed as
// declared where DuckDB's type says less (trinotables.go). A table that does
// not exist fails as a query of it fails (DuckDB's catalog error: TABLE_NOT_FOUND): the last
// condition reads it.
func showColumns(table []string) listing {
	return listing{cols: `"Column", "Type", "Extra", "Comment"`, order: "column_index",
		inner: `SELECT column_name AS "Column", coalesce(` + compatPrefix + `qf_trino_declared(pg_type_oid, pg_typmod), ` +
			compatPrefix + `qf_trino_type(data_type)) AS "Type", '' AS "Extra", coalesce(comment, '') AS "Comment", column_index,
			database_name, schema_name, table_name FROM ` + compatPrefix + `qf_pg_columns`,
		where: `lower(database_name) = ` + catalogLit(table[0]) + ` AND lower(schema_name) = ` + schemaLit(table[1]) +
			` AND lower(table_name) = lower(` + quoteString(table[2]) + `)
			AND (SELECT count(*) FROM (SELECT 1 FROM ` + trinoTableRef(table) + ` LIMIT 0)) = 0`}
}

// trinoTableRef names a table in FROM, its catalog and schema the session's where not given.
func trinoTableRef(table []string) string {
	ref := quoteIdent(table[2])
	if table[1] != "" || table[0] != "" {
		ref = quoteIdent(cmp.Or(table[1], "main")) + "." + ref
	}
	if table[0] != "" {
		ref = quoteIdent(table[0]) + "." + ref
	}
	return ref
}

// mustExist is a condition that fails the statement, as Trino does, when the catalog (schema
// "") or the schema does not exist; duckError gives the error its class (3D000, 3F000).
func mustExist(what, catalog, schema string) string {
	cond, name := "lower(database_name) = "+catalog, catalog
	if schema != "" {
		cond += " AND lower(schema_name) = " + schema
		name += " || '.' || " + schema
	}
	return "(EXISTS (SELECT 1 FROM duckdb_schemas() WHERE " + cond + ") OR error('" + what + " ''' || " + name + " || ''' does not exist'))"
}

// catalogLit and schemaLit compare a lower-cased name: the session's when empty.
func catalogLit(name string) string {
	if name == "" {
		return "lower(current_database())"
	}
	return "lower(" + quoteString(name) + ")"
}

func schemaLit(name string) string { return "lower(" + quoteString(cmp.Or(name, "main")) + ")" }

// nameParts reads a possibly qualified name's parts, unquoted, in the case written: DuckDB
// matches names without regard to case, and keeps the case a name was created with.
func nameParts(r *sqltok.Walker) []string { return r.NameParts(false) }
