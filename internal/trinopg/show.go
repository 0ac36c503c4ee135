package trinopg

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinoshow"
)

// Trino's SHOW CATALOGS, SHOW SCHEMAS [FROM catalog], SHOW TABLES [FROM [catalog.]schema],
// SHOW COLUMNS FROM table and DESCRIBE table, each optionally filtered by LIKE 'pattern'
// [ESCAPE 'c'], as queries of PostgreSQL's catalog with Trino's columns (Catalog; Schema;
// Table; Column, Type, Extra, Comment). A Trino catalog is the engine's database, the only one
// its connections reach; a schema is a PostgreSQL schema. A column's Type is the Trino type
// the frontend announces for that column in a result (trinoType below). A schema or table that
// does not exist is PostgreSQL's error for it (regnamespace, regclass), which Trino clients
// read as SCHEMA_NOT_FOUND and TABLE_NOT_FOUND.

// showSQL is the query answering a Trino SHOW or DESCRIBE; ok is false for a statement it does
// not read (PostgreSQL's own SHOW name, say, which goes as written).
func showSQL(sqlText string, s Session) (string, bool, error) {
	r := sqltok.NewWalker(sqltok.Tokenize(sqlText, sqltok.Trino))
	describe := r.Word("describe") || r.Word("desc")
	if !describe && !r.Word("show") {
		return "", false, nil
	}
	var l trinoshow.Listing
	switch {
	case describe || r.Word("columns") && (r.Word("from") || r.Word("in")):
		parts := r.NameParts(true)
		if len(parts) == 0 || len(parts) > 3 {
			return "", false, nil
		}
		if len(parts) == 3 {
			if err := s.reaches(parts[0]); err != nil {
				return "", false, err
			}
			parts = parts[1:]
		}
		l = showColumns(s.schemaOr(parts[:len(parts)-1]), parts[len(parts)-1])
	case r.Word("catalogs"):
		l = trinoshow.Listing{Cols: `"Catalog"`, Inner: `SELECT current_database()::text AS "Catalog"`}
	case r.Word("schemas"):
		if parts, ok := from(r); ok {
			if len(parts) != 1 {
				return "", false, nil
			}
			if err := s.reaches(parts[0]); err != nil {
				return "", false, err
			}
		}
		l = trinoshow.Listing{Cols: `"Schema"`, Inner: `SELECT nspname::text AS "Schema" FROM pg_namespace
			WHERE nspname NOT LIKE 'pg\_%' OR nspname = 'pg_catalog'`}
	case r.Word("tables"):
		parts, _ := from(r)
		if len(parts) > 2 {
			return "", false, nil
		}
		if len(parts) == 2 {
			if err := s.reaches(parts[0]); err != nil {
				return "", false, err
			}
			parts = parts[1:]
		}
		l = trinoshow.Listing{Cols: `"Table"`, Inner: `SELECT relname::text AS "Table" FROM pg_class
			WHERE relkind IN ('r', 'p', 'v', 'm', 'f') AND relnamespace = ` + namespaceOf(s.schemaOr(parts))}
	default:
		return "", false, nil
	}
	out, ok := l.SQL(r, showDialect)
	return out, ok, nil
}

// from reads FROM or IN and a possibly qualified name.
func from(r *sqltok.Walker) ([]string, bool) {
	if r.Word("from") || r.Word("in") {
		return r.NameParts(true), true
	}
	return nil, false
}

// reaches is nil when catalog names the engine's database, else Trino's CATALOG_NOT_FOUND.
func (s Session) reaches(catalog string) error {
	if s.Database != "" && !strings.EqualFold(catalog, s.Database) && !strings.EqualFold(catalog, s.Catalog) {
		return catalogNotFound(catalog)
	}
	return nil
}

// schemaOr is the one name of parts, else the session's schema ("": the connection's current).
func (s Session) schemaOr(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return s.Schema
}

// namespaceOf is the oid of schema, the current one when "", failing when it does not exist.
func namespaceOf(schema string) string {
	if schema == "" {
		return "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"
	}
	return "CAST(" + sqltok.StandardString(quoteIdent(schema)) + " AS regnamespace)"
}

// showColumns lists a table's columns in their order; a table that does not exist fails as a
// query of it does.
func showColumns(schema, table string) trinoshow.Listing {
	rel := quoteIdent(table)
	if schema != "" {
		rel = quoteIdent(schema) + "." + rel
	}
	return trinoshow.Listing{Cols: `"Column", "Type", "Extra", "Comment"`, Order: "attnum",
		Inner: `SELECT a.attname::text AS "Column", ` + trinoType + ` AS "Type", ''::text AS "Extra", ` +
			`coalesce(col_description(a.attrelid, a.attnum), '') AS "Comment", a.attnum ` +
			`FROM pg_attribute a CROSS JOIN LATERAL (SELECT format_type(a.atttypid, a.atttypmod) AS whole) f ` +
			`CROSS JOIN LATERAL (SELECT regexp_replace(f.whole, '(\[\])+$', '') AS t) d ` +
			`WHERE a.attrelid = CAST(` + sqltok.StandardString(rel) + ` AS regclass) AND a.attnum > 0 AND NOT a.attisdropped`}
}

// trinoType is the Trino type of d.t, a PostgreSQL type as format_type writes it (an array's
// element type), in array(...) when f.whole is an array's.
const trinoType = `CASE WHEN f.whole LIKE '%[]' THEN 'array(' || ` + scalarType + ` || ')' ELSE ` + scalarType + ` END`

const scalarType = `CASE WHEN d.t IN ('integer', 'smallint', 'bigint', 'real', 'boolean', 'date', 'uuid') THEN d.t ` +
	`WHEN d.t = 'double precision' THEN 'double' WHEN d.t IN ('text', 'character varying', 'name') THEN 'varchar' ` +
	`WHEN d.t IN ('json', 'jsonb') THEN 'json' WHEN d.t = 'bytea' THEN 'varbinary' WHEN d.t = 'numeric' THEN 'number' ` +
	`WHEN d.t LIKE 'numeric(%' THEN 'decimal' || substr(d.t, 8) ` +
	`WHEN d.t LIKE 'character varying(%' THEN 'varchar' || substr(d.t, 18) WHEN d.t LIKE 'character(%' THEN 'char' || substr(d.t, 10) ` +
	`WHEN d.t LIKE 'timestamp%with time zone' THEN 'timestamp' || ` + digits + ` || ' with time zone' ` +
	`WHEN d.t LIKE 'timestamp%' THEN 'timestamp' || ` + digits + ` ` +
	`WHEN d.t LIKE 'time%with time zone' THEN 'time' || ` + digits + ` || ' with time zone' ` +
	`WHEN d.t LIKE 'time%' THEN 'time' || ` + digits + ` ` +
	`WHEN d.t LIKE 'interval%' THEN 'interval day to second' ELSE 'varchar' END`

// digits is d.t's precision in parentheses, PostgreSQL's default (6) when it names none.
const digits = `coalesce(substring(d.t from '\(\d\)'), '(6)')`

// showDialect: PostgreSQL reads a Trino string literal as written; its LIKE is case-sensitive.
var showDialect = trinoshow.Dialect{Like: "LIKE", Literal: func(s string) string { return s }}

// quoteIdent quotes a name as PostgreSQL reads it; an unquoted Trino name is lower case.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
