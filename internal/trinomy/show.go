package trinomy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinoshow"
)

// Trino's SHOW CATALOGS, SHOW SCHEMAS [FROM catalog], SHOW TABLES [FROM [catalog.]schema],
// SHOW COLUMNS FROM table and DESCRIBE table, each optionally filtered by LIKE 'pattern'
// [ESCAPE 'c'], as queries of MariaDB's information_schema with Trino's columns (Catalog;
// Schema; Table; Column, Type, Extra, Comment). The MariaDB server is one catalog, named as the
// client names it (X-Trino-Catalog), "mariadb" when it names none; a schema is a database.

// defaultCatalog names the server's one catalog to a client that named none.
const defaultCatalog = "mariadb"

// showSQL is the query answering a Trino SHOW or DESCRIBE; ok is false for a statement it does
// not read (MariaDB's own SHOW VARIABLES, say, which goes as written).
func showSQL(sqlText string, s Session) (string, bool) {
	r := sqltok.NewWalker(sqltok.Tokenize(sqlText, sqltok.Trino))
	describe := r.Word("describe") || r.Word("desc")
	if !describe && !r.Word("show") {
		return "", false
	}
	var l trinoshow.Listing
	switch {
	case describe || r.Word("columns") && (r.Word("from") || r.Word("in")):
		parts := r.NameParts(true)
		if len(parts) == 0 || len(parts) > 3 {
			return "", false
		}
		schema := s.Schema
		if len(parts) > 1 {
			schema = parts[len(parts)-2]
		}
		table := parts[len(parts)-1]
		l = trinoshow.Listing{Cols: "`Column`, `Type`, `Extra`, `Comment`", Order: "ordinal_position",
			Inner: "SELECT column_name AS `Column`, " + trinoType + " AS `Type`, '' AS `Extra`, column_comment AS `Comment`, ordinal_position " +
				"FROM information_schema.columns WHERE table_schema = " + schemaOr(schema) + " AND table_name = " + quote(table) +
				" AND NOT EXISTS (SELECT 1 FROM " + tableRef(schema, table) + " WHERE 1 = 0)"}
	case r.Word("catalogs"):
		catalog := s.Catalog
		if catalog == "" {
			catalog = defaultCatalog
		}
		l = trinoshow.Listing{Cols: "`Catalog`", Inner: "SELECT " + quote(catalog) + " AS `Catalog`"}
	case r.Word("schemas"):
		if parts, ok := from(r); ok && len(parts) != 1 {
			return "", false
		}
		l = trinoshow.Listing{Cols: "`Schema`", Inner: "SELECT schema_name AS `Schema` FROM information_schema.schemata"}
	case r.Word("tables"):
		parts, _ := from(r)
		if len(parts) > 2 {
			return "", false
		}
		schema := s.Schema
		if len(parts) > 0 {
			schema = parts[len(parts)-1]
		}
		l = trinoshow.Listing{Cols: "`Table`", Inner: "SELECT table_name AS `Table` FROM information_schema.tables WHERE table_schema = " + schemaOr(schema)}
	default:
		return "", false
	}
	return l.SQL(r, showDialect)
}

// from reads FROM or IN and a possibly qualified name.
func from(r *sqltok.Walker) ([]string, bool) {
	if r.Word("from") || r.Word("in") {
		return r.NameParts(true), true
	}
	return nil, false
}

// schemaOr is schema as a literal, the connection's database when "".
func schemaOr(schema string) string {
	if schema == "" {
		return "database()"
	}
	return quote(schema)
}

// tableRef names table in FROM, in schema ("": the connection's database). A DESCRIBE of a
// table that does not exist fails as a query of it does (1146, which Trino clients read as
// TABLE_NOT_FOUND), where information_schema alone would answer no rows.
func tableRef(schema, table string) string {
	if schema == "" {
		return backtick(table)
	}
	return backtick(schema) + "." + backtick(table)
}

// backtick is name quoted as MariaDB reads a name.
func backtick(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// quote is v as a MariaDB string literal, whatever its sql_mode (backslashes doubled).
func quote(v string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), "'", "''") + "'"
}

// trinoType is the Trino type of an information_schema.columns row, as the frontend announces
// a value of it in a result.
const trinoType = `CASE WHEN data_type IN ('tinyint', 'smallint', 'bigint', 'date', 'json') THEN data_type ` +
	`WHEN data_type IN ('int', 'mediumint') THEN 'integer' WHEN data_type = 'double' THEN 'double' WHEN data_type = 'float' THEN 'real' ` +
	`WHEN data_type = 'decimal' THEN concat('decimal(', numeric_precision, ',', numeric_scale, ')') ` +
	`WHEN data_type = 'varchar' THEN concat('varchar(', character_maximum_length, ')') ` +
	`WHEN data_type = 'char' THEN concat('char(', character_maximum_length, ')') ` +
	`WHEN data_type IN ('datetime', 'timestamp') THEN concat('timestamp(', datetime_precision, ')') ` +
	`WHEN data_type = 'time' THEN concat('time(', datetime_precision, ')') ` +
	`WHEN data_type LIKE '%blob' OR data_type IN ('binary', 'varbinary') THEN 'varbinary' ` +
	`WHEN data_type = 'bit' AND numeric_precision = 1 THEN 'boolean' ELSE 'varchar' END`

// showDialect: MariaDB reads a backslash in a string as an escape, Trino as itself; LIKE
// BINARY is case-sensitive as Trino's LIKE.
var showDialect = trinoshow.Dialect{Like: "LIKE BINARY", Literal: func(s string) string { return strings.ReplaceAll(s, `\`, `\\`) }}
