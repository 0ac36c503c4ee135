package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// MySQL's information_schema views of keys, as MariaDB answers them (ORMs' introspection reads
// them: Sequelize's removeConstraint and sync({alter}) table_constraints, SQLAlchemy's and
// TypeORM's reflection key_column_usage and referential_constraints, Knex's and Laravel's
// hasIndex statistics). Every key is named as SHOW INDEX and SHOW CREATE TABLE name it: PRIMARY,
// a unique key by the name its CREATE TABLE gave (the declared catalog) else its first column,
// an index by its MariaDB name (mysqlindexes.go), a foreign key by its declared name
// (mysqlfkchecks.go) else <table>_ibfk_<nth>, and the index InnoDB makes for a foreign key no
// other index begins with (foreignKeyIndexes).

// inClientDatabases limits a scan of duckdb_constraints() or duckdb_indexes() (columns prefixed
// by alias) to the tables of the databases a client sees.
func inClientDatabases(alias string) string {
	return alias + `schema_name = 'main' AND ` + alias + `database_name IN (SELECT datname FROM ` + compatPrefix + `qf_pg_database)`
}

// mysqlUniqueName is the MariaDB name of the UNIQUE constraint of duckdb_constraints() (columns
// prefixed by alias).
func mysqlUniqueName(alias string) string {
	return compatPrefix + `qf_constraint_name(` + alias + `database_name, ` + alias + `schema_name, ` + alias + `table_name, 'UNIQUE', ` +
		alias + `constraint_column_names, ` + alias + `constraint_column_names[1])`
}

// mysqlKeyName is the MariaDB name of a primary or unique key of duckdb_constraints().
func mysqlKeyName(alias string) string {
	return `CASE WHEN ` + alias + `constraint_type = 'PRIMARY KEY' THEN 'PRIMARY' ELSE ` + mysqlUniqueName(alias) + ` END`
}

// mysqlForeignKeyAction is the declared action letter of the foreign key of foreignKeys()
// (columns prefixed by alias): which is 'd' for ON DELETE, 'u' for ON UPDATE.
func mysqlForeignKeyAction(alias, which string) string {
	return compatPrefix + `qf_mysql_fk_action(` + alias + `database_name, ` + alias + `schema_name, ` + alias + `table_name, ` +
		alias + `constraint_column_names, ` + alias + `same_n, '` + which + `')`
}

// mysqlActions are the ON DELETE / ON UPDATE words SHOW CREATE TABLE writes after the foreign
// key of foreignKeys() (alias): none for RESTRICT, as MariaDB writes it.
func mysqlActions(alias string) string {
	word := func(which string) string {
		return `CASE ` + mysqlForeignKeyAction(alias, which) + ` WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' WHEN 'a' THEN 'NO ACTION' END`
	}
	return `coalesce(' ON DELETE ' || ` + word("d") + `, '') || coalesce(' ON UPDATE ' || ` + word("u") + `, '')`
}

// mysqlRule is information_schema's UPDATE_RULE / DELETE_RULE of a declared action letter:
// RESTRICT for a key declared with none, as MariaDB says.
func mysqlRule(letter string) string {
	return `CASE ` + letter + ` WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' WHEN 'a' THEN 'NO ACTION' ELSE 'RESTRICT' END`
}

// mysqlNumericPrecision and mysqlNumericScale are information_schema.COLUMNS' NUMERIC_PRECISION
// and NUMERIC_SCALE of column c as MariaDB reports them: an integer type's decimal digits (DuckDB's
// are bits: INTEGER 32, MariaDB's int 10) and scale 0, a FLOAT's 12 and a DOUBLE's 22 without a
// scale, a DECIMAL's own.
const (
	mysqlNumericPrecision = `CASE WHEN ` + yearColumn + ` THEN NULL WHEN c.data_type IN ('TINYINT', 'UTINYINT', 'BOOLEAN') THEN 3 WHEN c.data_type IN ('SMALLINT', 'USMALLINT') THEN 5
		WHEN c.data_type IN ('INTEGER', 'UINTEGER') THEN 10 WHEN c.data_type = 'BIGINT' THEN 19 WHEN c.data_type = 'UBIGINT' THEN 20
		WHEN c.data_type = 'FLOAT' THEN 12 WHEN c.data_type = 'DOUBLE' THEN 22 ELSE c.numeric_precision END::BIGINT`
	mysqlNumericScale = `CASE WHEN ` + yearColumn + ` THEN NULL WHEN c.data_type IN ('TINYINT', 'UTINYINT', 'BOOLEAN', 'SMALLINT', 'USMALLINT', 'INTEGER', 'UINTEGER', 'BIGINT', 'UBIGINT') THEN 0
		WHEN c.data_type IN ('FLOAT', 'DOUBLE') THEN NULL ELSE c.numeric_scale END::BIGINT`
)

// mysqlTablesSQL is MySQL's information_schema.TABLES, every column MariaDB's has (a database
// is DuckDB's catalog, its tables those of the catalog's main schema, so TABLE_SCHEMA is the
// database's name: SQLAlchemy's has_table counts information_schema.tables WHERE table_schema
// = the database): AUTO_INCREMENT the next id of a table with an AUTO_INCREMENT column, as
// SHOW CREATE TABLE's (ORMs and admin tools read it; was 1054), NULL for one without; a view's
// row has NULL where MariaDB's has, and the comment VIEW.
var mysqlTablesSQL = `CREATE VIEW {c}.main.qf_mysql_tables AS SELECT 'def' AS "TABLE_CATALOG", t.table_catalog AS "TABLE_SCHEMA",
	t.table_name AS "TABLE_NAME", t.table_type AS "TABLE_TYPE", CASE WHEN base THEN 'DuckDB' END AS "ENGINE",
	CASE WHEN base THEN 10 END::BIGINT AS "VERSION", CASE WHEN base THEN 'Dynamic' END AS "ROW_FORMAT",
	NULL::BIGINT AS "TABLE_ROWS", CASE WHEN base THEN 0 END::BIGINT AS "AVG_ROW_LENGTH",
	CASE WHEN base THEN 16384 END::BIGINT AS "DATA_LENGTH", CASE WHEN base THEN 0 END::BIGINT AS "MAX_DATA_LENGTH",
	CASE WHEN base THEN 0 END::BIGINT AS "INDEX_LENGTH", CASE WHEN base THEN 0 END::BIGINT AS "DATA_FREE",
	CASE WHEN base THEN ` + nextAutoIncrement(`c.database_name = t.table_catalog AND c.schema_name = 'main' AND c.table_name = t.table_name`) + ` END::BIGINT AS "AUTO_INCREMENT",
	NULL::TIMESTAMP AS "CREATE_TIME", NULL::TIMESTAMP AS "UPDATE_TIME", NULL::TIMESTAMP AS "CHECK_TIME",
	CASE WHEN base THEN 'utf8mb4_general_ci' END AS "TABLE_COLLATION", NULL::BIGINT AS "CHECKSUM",
	CASE WHEN base THEN '' END AS "CREATE_OPTIONS", CASE WHEN base THEN '' ELSE 'VIEW' END AS "TABLE_COMMENT",
	CASE WHEN base THEN 0 END::BIGINT AS "MAX_INDEX_LENGTH", CASE WHEN base THEN 'N' END AS "TEMPORARY"
	FROM (SELECT *, table_type = 'BASE TABLE' AS base FROM information_schema.tables) t
	WHERE t.table_schema = 'main' AND t.table_type IN ('BASE TABLE', 'VIEW')
	AND t.table_catalog IN (SELECT datname FROM {c}.main.qf_pg_database)`

var mysqlInfoSchemaSQL = []string{
	mysqlTablesSQL,
	yearMacroSQL, // mysqlyear.go
	charMacroSQL, // mysqlcharlen.go
	// qf_mysql_column_type(t, oid, typmod): the MySQL type of a column of DuckDB type t, its
	// declared type (qf_pg_columns, mysqldeclared.go) a VARCHAR(n) or CHAR(n) of that length, or
	// TINYINT(1).
	`CREATE MACRO {c}.main.qf_mysql_column_type(t, type_oid, type_mod) AS CASE
		WHEN type_oid = 1043 AND type_mod > 4 THEN 'varchar(' || (type_mod - 4) || ')'
		WHEN type_oid = 1042 AND type_mod > 4 THEN 'char(' || (type_mod - 4) || ')'
		WHEN type_oid = 21 AND type_mod = 1 AND t = 'TINYINT' THEN 'tinyint(1)'
		WHEN type_oid = 21 AND type_mod = 4 AND t = 'USMALLINT' THEN 'year(4)' ELSE {c}.main.qf_mysql_type(t) END`,
	// MySQL's information_schema.COLUMNS (mysqlcompat.go reads a MySQL client's
	// information_schema.X as qf_mysql_X): a database is DuckDB's catalog, its tables those of
	// the catalog's main schema; COLUMN_DEFAULT as MariaDB writes it (a string quoted, a number
	// not, NULL for an AUTO_INCREMENT column's, 'NULL' for that of a column without a default
	// that takes NULL), a VARCHAR(n)'s length (mysqldeclared.go).
	`CREATE VIEW {c}.main.qf_mysql_columns AS SELECT 'def' AS "TABLE_CATALOG", c.database_name AS "TABLE_SCHEMA",
		c.table_name AS "TABLE_NAME", c.column_name AS "COLUMN_NAME", c.column_index::BIGINT AS "ORDINAL_POSITION",
		CASE WHEN ` + autoIncrement + ` THEN NULL ELSE coalesce(` + mysqlDefault + `, CASE WHEN c.is_nullable THEN 'NULL' END) END AS "COLUMN_DEFAULT",
		CASE WHEN c.is_nullable THEN 'YES' ELSE 'NO' END AS "IS_NULLABLE",
		regexp_replace({c}.main.qf_mysql_column_type(c.data_type, c.pg_type_oid, c.pg_typmod), '[( ].*', '') AS "DATA_TYPE",
		CASE WHEN c.pg_type_oid IN (1042, 1043) AND c.pg_typmod > 4 THEN c.pg_typmod - 4 WHEN c.data_type = 'VARCHAR' THEN 65535
			ELSE c.character_maximum_length END::BIGINT AS "CHARACTER_MAXIMUM_LENGTH",
		CASE WHEN c.pg_type_oid IN (1042, 1043) AND c.pg_typmod > 4 THEN (c.pg_typmod - 4) * 4 WHEN c.data_type = 'VARCHAR' THEN 65535
			END::BIGINT AS "CHARACTER_OCTET_LENGTH",
		` + mysqlNumericPrecision + ` AS "NUMERIC_PRECISION", ` + mysqlNumericScale + ` AS "NUMERIC_SCALE",
		CASE WHEN c.data_type = 'TIMESTAMP_S' THEN 0 WHEN c.data_type = 'TIMESTAMP_MS' THEN 3
			WHEN c.data_type IN ('TIMESTAMP', 'TIMESTAMP WITH TIME ZONE', 'TIME') THEN 6 END::BIGINT AS "DATETIME_PRECISION",
		CASE WHEN c.data_type LIKE 'VARCHAR%' THEN 'utf8mb4' END AS "CHARACTER_SET_NAME",
		CASE WHEN c.data_type LIKE 'VARCHAR%' THEN 'utf8mb4_general_ci' END AS "COLLATION_NAME",
		{c}.main.qf_mysql_column_type(c.data_type, c.pg_type_oid, c.pg_typmod) AS "COLUMN_TYPE",
		` + strings.ReplaceAll(columnKey, "qf_index_expressions", "{c}.main.qf_index_expressions") + ` AS "COLUMN_KEY",
		CASE WHEN ` + autoIncrement + ` THEN 'auto_increment' ELSE '' END AS "EXTRA",
		'select,insert,update,references' AS "PRIVILEGES", coalesce(c.comment, '') AS "COLUMN_COMMENT",
		'NEVER' AS "IS_GENERATED", NULL::VARCHAR AS "GENERATION_EXPRESSION"
		FROM {c}.main.qf_pg_columns c WHERE c.schema_name = 'main' AND c.database_name IN (SELECT datname FROM {c}.main.qf_pg_database)`,
	// qf_mysql_fk_name(db, schema, table, cols, nth, default): the declared name of the nth
	// foreign key of table's of the columns cols, else default.
	`CREATE MACRO {c}.main.qf_mysql_fk_name(in_db, in_schema, in_table, in_cols, in_nth, in_default) AS
		coalesce((SELECT any_value(name) FROM (SELECT d.name, row_number() OVER (ORDER BY d.rowid) AS nth FROM {declared}.constraints d
			WHERE in_db = current_database() AND d.schema_name = in_schema AND d.table_name = lower(in_table) AND d.kind = 'f'
			AND d.columns = list_transform(in_cols, x -> lower(x))) WHERE nth = in_nth), in_default)`,
	// statistics: every index's columns, one row each; Cardinality DuckDB's estimate of the rows.
	`CREATE VIEW {c}.main.qf_mysql_statistics AS SELECT 'def' AS "TABLE_CATALOG", i.database_name AS "TABLE_SCHEMA",
		i.table_name AS "TABLE_NAME", i.non_unique::BIGINT AS "NON_UNIQUE", i.database_name AS "INDEX_SCHEMA", i.index_name COLLATE NOCASE AS "INDEX_NAME",
		i.seq::BIGINT AS "SEQ_IN_INDEX", i.column_name AS "COLUMN_NAME", 'A' AS "COLLATION",
		(SELECT any_value(estimated_size) FROM duckdb_tables() t WHERE t.table_oid = i.table_oid)::BIGINT AS "CARDINALITY",
		NULL::BIGINT AS "SUB_PART", NULL::VARCHAR AS "PACKED",
		CASE WHEN (SELECT any_value(is_nullable) FROM duckdb_columns() c WHERE c.table_oid = i.table_oid AND c.column_name = i.column_name)
			THEN 'YES' ELSE '' END AS "NULLABLE", 'BTREE' AS "INDEX_TYPE", '' AS "COMMENT", '' AS "INDEX_COMMENT", 'NO' AS "IGNORED"
		FROM (SELECT database_name, table_oid, table_name, ` + mysqlKeyName("") + ` AS index_name,
				0 AS non_unique, unnest(constraint_column_names) AS column_name, unnest(range(1, len(constraint_column_names) + 1)) AS seq
			FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE') AND ` + inClientDatabases("") + `
			UNION ALL SELECT database_name, table_oid, table_name, ` + mysqlIndexName + `, CASE WHEN is_unique THEN 0 ELSE 1 END,
				trim(unnest({c}.main.qf_index_expressions(expressions)), '"'), unnest(range(1, len({c}.main.qf_index_expressions(expressions)) + 1))
			FROM duckdb_indexes() WHERE NOT ` + caselessIndex + ` AND ` + inClientDatabases("") + `
			UNION ALL SELECT database_name, table_oid, table_name, key_name, 1, unnest(cols), unnest(range(1, len(cols) + 1))
			FROM (` + foreignKeyIndexesWhere(inClientDatabases("")) + `)) AS i`,
	// key_column_usage: the columns of every primary and unique key (unique indexes too) and of
	// every foreign key, one row each; PRIMARY after the other keys' names, as MariaDB orders.
	`CREATE VIEW {c}.main.qf_mysql_key_column_usage AS SELECT 'def' AS "CONSTRAINT_CATALOG", "TABLE_SCHEMA" AS "CONSTRAINT_SCHEMA",
		"INDEX_NAME" AS "CONSTRAINT_NAME", 'def' AS "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME",
		"SEQ_IN_INDEX" AS "ORDINAL_POSITION", NULL::BIGINT AS "POSITION_IN_UNIQUE_CONSTRAINT", NULL::VARCHAR AS "REFERENCED_TABLE_SCHEMA",
		NULL::VARCHAR AS "REFERENCED_TABLE_NAME", NULL::VARCHAR AS "REFERENCED_COLUMN_NAME"
		FROM {c}.main.qf_mysql_statistics WHERE "NON_UNIQUE" = 0
		UNION ALL SELECT 'def', k.database_name, ` + mysqlForeignKeyName("k.") + ` COLLATE NOCASE,
		'def', k.database_name, k.table_name, c.name, c.pos::BIGINT, c.pos::BIGINT, k.database_name,
		k.referenced_table, k.referenced_column_names[c.pos]
		FROM (` + foreignKeys(inClientDatabases("")) + `) k,
		LATERAL (SELECT unnest(k.constraint_column_names) AS name, unnest(range(1, len(k.constraint_column_names) + 1)) AS pos) c`,
	// qf_mysql_fk_action(db, schema, table, cols, nth, which): the declared ON DELETE (which
	// 'd') or ON UPDATE action of that key, pg_constraint's letter; 'r' when none is recorded.
	`CREATE MACRO {c}.main.qf_mysql_fk_action(in_db, in_schema, in_table, in_cols, in_nth, in_which) AS
		coalesce((SELECT any_value(CASE WHEN in_which = 'd' THEN on_delete ELSE on_update END) FROM (SELECT d.on_delete, d.on_update,
			row_number() OVER (ORDER BY d.rowid) AS nth FROM {declared}.constraints d
			WHERE in_db = current_database() AND d.schema_name = in_schema AND d.table_name = lower(in_table) AND d.kind = 'f'
			AND d.columns = list_transform(in_cols, x -> lower(x))) WHERE nth = in_nth), 'r')`,
	// table_constraints: every primary and unique key (unique indexes too) and foreign key.
	`CREATE VIEW {c}.main.qf_mysql_table_constraints AS SELECT DISTINCT 'def' AS "CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA",
		"CONSTRAINT_NAME", "TABLE_SCHEMA", "TABLE_NAME", CASE WHEN "REFERENCED_TABLE_NAME" IS NOT NULL THEN 'FOREIGN KEY'
		WHEN "CONSTRAINT_NAME" = 'PRIMARY' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END AS "CONSTRAINT_TYPE"
		FROM {c}.main.qf_mysql_key_column_usage`,
	// referential_constraints: every foreign key, the key it references named, its declared
	// actions (RESTRICT when none was).
	`CREATE VIEW {c}.main.qf_mysql_referential_constraints AS SELECT 'def' AS "CONSTRAINT_CATALOG", k.database_name AS "CONSTRAINT_SCHEMA",
		` + mysqlForeignKeyName("k.") + ` COLLATE NOCASE AS "CONSTRAINT_NAME", 'def' AS "UNIQUE_CONSTRAINT_CATALOG",
		k.database_name AS "UNIQUE_CONSTRAINT_SCHEMA",
		(SELECT any_value(u.name) FROM (SELECT "INDEX_NAME" AS name, list("COLUMN_NAME" ORDER BY "SEQ_IN_INDEX") AS cols
			FROM {c}.main.qf_mysql_statistics s WHERE s."TABLE_SCHEMA" = k.database_name AND s."TABLE_NAME" = k.referenced_table
			AND s."NON_UNIQUE" = 0 GROUP BY "INDEX_NAME") u
			WHERE list_transform(u.cols, x -> lower(x)) = list_transform(k.referenced_column_names, x -> lower(x))) AS "UNIQUE_CONSTRAINT_NAME",
		'NONE' AS "MATCH_OPTION",
		` + mysqlRule(mysqlForeignKeyAction("k.", "u")) + ` AS "UPDATE_RULE", ` + mysqlRule(mysqlForeignKeyAction("k.", "d")) + ` AS "DELETE_RULE",
		k.table_name AS "TABLE_NAME", k.referenced_table AS "REFERENCED_TABLE_NAME"
		FROM (` + foreignKeys(inClientDatabases("")) + `) k`,
}

// uniqueKeyNames are the statements that record the names a MySQL client's CREATE TABLE gives
// its unique keys (UNIQUE [KEY | INDEX] name (cols), CONSTRAINT name UNIQUE ...), over any
// recorded for an earlier table of the name: DuckDB keeps no constraint's name.
func uniqueKeyNames(table string, defs [][]sqltok.Token) []string {
	stmts := []string{"DELETE FROM " + declaredSchema + ".constraints WHERE schema_name = current_schema() AND table_name = lower(" +
		quoteString(table) + ") AND kind = 'u'"}
	for _, d := range defs {
		name, cols := namedUniqueKey(d)
		if name != "" && len(cols) > 0 {
			stmts = append(stmts, declaredConstraint{kind: 'u', columns: cols, name: name}.insert("", table))
		}
	}
	return stmts
}

// namedUniqueKey reads a definition [CONSTRAINT [c]] UNIQUE [KEY | INDEX] [name] [USING t]
// (cols): the key's name (name, else c; "" when neither is given) and its columns.
func namedUniqueKey(d []sqltok.Token) (name string, cols []string) {
	i := 0
	if len(d) > 2 && d[0].IsWord("constraint") && !d[1].IsWord("unique") {
		name, i = identText(d[1]), 2
	} else if len(d) > 1 && d[0].IsWord("constraint") {
		i = 1
	}
	if i >= len(d) || !d[i].IsWord("unique") {
		return "", nil
	}
	i++
	if i < len(d) && d[i].IsWord("key", "index") {
		i++
	}
	if i < len(d) && d[i].Text != "(" && !d[i].IsWord("using") {
		name, i = identText(d[i]), i+1
	}
	if i+1 < len(d) && d[i].IsWord("using") {
		i += 2
	}
	return name, keyColumns(d[i:])
}

// foreignKeyIndexesWhere are the indexes InnoDB creates for the foreign keys k of
// duckdb_constraints() that cond selects: one per key no index, primary key, unique key or
// longer or later foreign key begins with the columns of (MariaDB drops a key's own index
// once another covers it): database_name, table_oid, table_name, key_name (the key's given
// name, else its first column, as MariaDB names the index), cols and constraint_index. DuckDB
// checks a key through an index it lists nowhere.
func foreignKeyIndexesWhere(cond string) string {
	same := func(list string) string {
		return `list_transform(` + list + `, x -> lower(trim(x, '"'))) = list_transform(k.constraint_column_names, x -> lower(x))`
	}
	name := mysqlForeignKeyName("k.")
	return `SELECT k.database_name, k.table_oid, k.table_name, CASE WHEN regexp_full_match(` + name + `, k.table_name || '_ibfk_[0-9]+') ` +
		`THEN k.constraint_column_names[1] ELSE ` + name + ` END AS key_name, k.constraint_column_names AS cols, k.constraint_index ` +
		`FROM (` + foreignKeys(cond) + `) k WHERE ` +
		`NOT EXISTS (SELECT 1 FROM duckdb_constraints() o WHERE o.table_oid = k.table_oid AND (o.constraint_type IN ('PRIMARY KEY', 'UNIQUE') ` +
		`OR o.constraint_type = 'FOREIGN KEY' AND (len(o.constraint_column_names) > len(k.constraint_column_names) OR o.constraint_index > k.constraint_index)) ` +
		`AND ` + same(`o.constraint_column_names[1:len(k.constraint_column_names)]`) + `) ` +
		`AND NOT EXISTS (SELECT 1 FROM duckdb_indexes() i WHERE i.table_oid = k.table_oid AND NOT contains(i.index_name, '$qf_ci_') ` +
		`AND ` + same(compatPrefix+`qf_index_expressions(i.expressions)[1:len(k.constraint_column_names)]`) + `)`
}

// foreignKeyIndexes are foreignKeyIndexesWhere's of table (db's).
func foreignKeyIndexes(db, table string) string {
	return foreignKeyIndexesWhere(inSchema("database_name", "schema_name", db) + ` AND lower(table_name) = lower(` + sqltok.StandardString(table) + `)`)
}

// foreignKeys are the foreign keys of duckdb_constraints() that cond selects, each with n, its
// place among its table's keys, and same_n, among those of the same columns.
func foreignKeys(cond string) string {
	return `SELECT *, row_number() OVER (PARTITION BY database_name, schema_name, table_name ORDER BY constraint_index) AS n, ` +
		`row_number() OVER (PARTITION BY database_name, schema_name, table_name, constraint_column_names ORDER BY constraint_index) AS same_n ` +
		`FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND ` + cond
}

// mysqlForeignKeyName is the name of the foreign key of foreignKeys() (columns prefixed by
// alias) as MariaDB names it: the one its CREATE TABLE or ALTER TABLE gave or MariaDB would have
// given (the declared catalog, mysqlfkchecks.go; two keys of the same columns in the order
// they were declared), else <table>_ibfk_<n>.
func mysqlForeignKeyName(alias string) string {
	return compatPrefix + `qf_mysql_fk_name(` + alias + `database_name, ` + alias + `schema_name, ` + alias + `table_name, ` +
		alias + `constraint_column_names, ` + alias + `same_n, ` + alias + `table_name || '_ibfk_' || ` + alias + `n)`
}

// mysqlInfoSchemaViews are the information_schema tables a MySQL client's query reads from the
// proxy's views (mysqlInformationSchema).
var mysqlInfoSchemaViews = map[string]bool{"tables": true, "columns": true, "schemata": true, "key_column_usage": true,
	"statistics": true, "triggers": true, "files": true, "partitions": true, "table_constraints": true, "referential_constraints": true}
