package duckengine

import (
	"errors"
	"regexp"

	"github.com/queryflux/queryflux/internal/mysqlshow"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// MySQL's catalog statements (package mysqlshow), which DuckDB reads otherwise (SHOW TABLES
// lists every schema's tables, DESCRIBE t has DuckDB's columns) or not at all, are answered
// from DuckDB's catalog: a MySQL database is a DuckDB catalog (the client's, or the one named),
// its tables those of its main schema; the compatibility objects (catalog.go) are in another
// schema, and so never listed. A table that does not exist is DuckDB's catalog error (1146 to
// the client, showError).

// duckCatalog writes mysqlshow's relations on DuckDB's catalog.
type duckCatalog struct{}

func (duckCatalog) Engine() string { return "DuckDB" }

func (duckCatalog) NoRoutines() {} // DuckDB has no triggers, stored routines or events (mysqlshow.RoutinelessCatalog)

func (duckCatalog) Tables(db string) string {
	return "SELECT table_name, table_type FROM information_schema.tables WHERE table_type IN ('BASE TABLE', 'VIEW') AND " +
		inSchema("table_catalog", "table_schema", db)
}

func (duckCatalog) Databases() string { return "SELECT datname AS name FROM qf_pg_database" }

// Columns names the table itself, so that one that does not exist is DuckDB's catalog error.
// Key is PRI for a primary key's columns and UNI for a one-column unique constraint's, as MySQL
// marks them.
func (duckCatalog) Columns(db, table string) string {
	return `SELECT c.table_name AS tbl, c.column_name AS name, qf_mysql_column_type(c.data_type, c.pg_type_oid, c.pg_typmod) AS type, c.is_nullable AS nullable, ` +
		columnKey + ` AS key, ` +
		`CASE WHEN NOT ` + autoIncrement + ` THEN ` + mysqlDefault + ` END AS dflt, ` +
		`CASE WHEN ` + autoIncrement + ` THEN 'auto_increment' WHEN ` + onUpdate + ` THEN c.comment ELSE '' END AS extra, ` +
		`CASE WHEN ` + onUpdate + ` THEN '' ELSE coalesce(c.comment, '') END AS comment, c.column_index AS pos ` +
		`FROM qf_pg_columns c WHERE ` + inSchema("c.database_name", "c.schema_name", db) +
		` AND lower(c.table_name) = lower(` + sqltok.StandardString(table) + `) ` +
		`AND (SELECT count(*) FROM (SELECT 1 FROM ` + tableRef(db, table) + ` LIMIT 0)) = 0`
}

// mysqlDefault is column c's default as MariaDB writes it, where DuckDB's text of it is not
// MySQL's (a dump through the proxy restores onto MariaDB): the current time of a DATETIME or
// TIMESTAMP (DuckDB's current_timestamp, or a MySQL client's NOW(n) as mysqlCompat writes it) is
// current_timestamp() with the column's digits, a BOOLEAN's (tinyint(1)'s) default 1 or 0.
const mysqlDefault = `CASE WHEN c.column_default ILIKE '%current_timestamp%' THEN 'current_timestamp(' || ` +
	`CASE WHEN c.data_type = 'TIMESTAMP_MS' THEN '3' WHEN c.data_type IN ('TIMESTAMP', 'TIMESTAMP WITH TIME ZONE') THEN '6' ELSE '' END || ')' ` +
	`WHEN c.data_type = 'BOOLEAN' AND c.column_default IN ('true', 'CAST(''t'' AS BOOLEAN)') THEN '1' ` +
	`WHEN c.data_type = 'BOOLEAN' AND c.column_default IN ('false', 'CAST(''f'' AS BOOLEAN)') THEN '0' ` +
	`WHEN (c.data_type LIKE 'DECIMAL%' OR c.data_type IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', ` +
	`'UBIGINT', 'HUGEINT', 'FLOAT', 'DOUBLE')) AND regexp_full_match(c.column_default, '''-?[0-9]+(\.[0-9]*)?''') THEN trim(c.column_default, '''') ` +
	`ELSE c.column_default END`

// multipleKey is MariaDB's MUL for column c, the first of an index or of a unique key of more
// than one column (a one-column unique index is UNI); NULL otherwise: the result set's column
// flags' reading (mysqlkeys.go), which columnKey's differs from in priority and foreign keys.
const multipleKey = `(SELECT CASE WHEN bool_or(NOT i.is_unique OR len(qf_index_expressions(i.expressions)) > 1) THEN 'MUL' WHEN count(*) > 0 THEN 'UNI' END ` +
	`FROM duckdb_indexes() i WHERE i.table_oid = c.table_oid AND trim(qf_index_expressions(i.expressions)[1], '"') = c.column_name ` +
	`AND NOT ` + caselessIndex + `), ` +
	`(SELECT 'MUL' FROM duckdb_constraints() k WHERE k.table_oid = c.table_oid AND k.constraint_type = 'UNIQUE' ` +
	`AND k.constraint_column_names[1] = c.column_name AND len(k.constraint_column_names) > 1 LIMIT 1)`

// promotedKey is PRI for column c of a table without a primary key when c is in the table's
// first unique key whose columns are all NOT NULL: InnoDB takes that key as the primary key,
// and MariaDB's SHOW COLUMNS and COLUMN_KEY say PRI for its columns (a UNIQUE NOT NULL column
// of such a table is PRI, not UNI); NULL otherwise. The keys are the table's UNIQUE
// constraints, in order, then its unique indexes of plain columns (CREATE UNIQUE INDEX, ALTER
// TABLE ADD UNIQUE) in the order they were created, as MariaDB orders a table's keys.
const promotedKey = `(SELECT CASE WHEN list_contains(u.cols, c.column_name) THEN 'PRI' END FROM (` +
	`SELECT 0 AS kind, f.constraint_index AS pos, f.constraint_column_names AS cols FROM duckdb_constraints() f ` +
	`WHERE f.table_oid = c.table_oid AND f.constraint_type = 'UNIQUE' UNION ALL ` +
	`SELECT 1, i.index_oid, list_transform(qf_index_expressions(i.expressions), x -> trim(x, '"')) FROM duckdb_indexes() i ` +
	`WHERE i.table_oid = c.table_oid AND i.is_unique AND NOT contains(i.index_name, '$qf_ci_')) AS u ` +
	`WHERE len(u.cols) = (SELECT count(*) FROM duckdb_columns() n WHERE n.table_oid = c.table_oid AND NOT n.is_nullable ` +
	`AND list_contains(u.cols, n.column_name)) ` +
	`AND NOT EXISTS (SELECT 1 FROM duckdb_constraints() p WHERE p.table_oid = c.table_oid AND p.constraint_type = 'PRIMARY KEY') ` +
	`ORDER BY u.kind, u.pos LIMIT 1)`

// columnKey is MariaDB's Key (COLUMN_KEY) of column c, the first that applies of: PRI for a
// primary key's columns, or those of the unique key taken as one (promotedKey); UNI for the column of a one-column unique key or index; MUL for the
// first column of an index, of a unique key of more columns, or of a foreign key (InnoDB
// indexes every foreign key: its own index, or another that begins with its columns); else empty.
const columnKey = `coalesce(` + promotedKey + `, (SELECT CASE WHEN bool_or(k.constraint_type = 'PRIMARY KEY') THEN 'PRI' WHEN count(*) > 0 THEN 'UNI' END ` +
	`FROM duckdb_constraints() k WHERE k.database_name = c.database_name AND k.schema_name = c.schema_name ` +
	`AND k.table_name = c.table_name AND (k.constraint_type = 'PRIMARY KEY' AND list_contains(k.constraint_column_names, c.column_name) ` +
	`OR k.constraint_type = 'UNIQUE' AND k.constraint_column_names = [c.column_name])), ` +
	`(SELECT CASE WHEN bool_or(i.is_unique AND len(qf_index_expressions(i.expressions)) = 1) THEN 'UNI' WHEN count(*) > 0 THEN 'MUL' END ` +
	`FROM duckdb_indexes() i WHERE i.table_oid = c.table_oid AND trim(qf_index_expressions(i.expressions)[1], '"') = c.column_name ` +
	`AND NOT ` + caselessIndex + `), ` +
	`(SELECT 'MUL' FROM duckdb_constraints() k WHERE k.table_oid = c.table_oid AND k.constraint_type IN ('UNIQUE', 'FOREIGN KEY') ` +
	`AND k.constraint_column_names[1] = c.column_name LIMIT 1), '')`

// onUpdate is the condition that column c is ON UPDATE CURRENT_TIMESTAMP (mysqlindexes.go).
const onUpdate = `coalesce(starts_with(c.comment, '` + onUpdateComment + `'), false)`

// autoIncrement is the condition that column c is AUTO_INCREMENT (mysqlddl.go).
const autoIncrement = `coalesce(c.column_default LIKE 'nextval(''%` + aiPrefix + `%', false)`

func (duckCatalog) Keys(db, table string) string {
	return `SELECT k.constraint_type AS kind, ` + mysqlUniqueName("k.") + ` AS name, ` +
		`array_to_string(list_transform(k.constraint_column_names, x -> ` + mysqlshow.Tick("x") + `), ',') AS cols, ` +
		`k.constraint_index AS pos FROM duckdb_constraints() k WHERE ` + inSchema("k.database_name", "k.schema_name", db) +
		` AND lower(k.table_name) = lower(` + sqltok.StandardString(table) + `) AND k.constraint_type IN ('PRIMARY KEY', 'UNIQUE')`
}

// Indexes lists the primary key (PRIMARY), the unique constraints (named by their first
// column, as MySQL names a unique key) and the CREATE INDEX indexes of the table; Cardinality
// is the table's rows, where MySQL's is an estimate (of a small table, its rows too).
func (duckCatalog) Indexes(db, table string) string {
	where := inSchema("database_name", "schema_name", db) + ` AND lower(table_name) = lower(` + sqltok.StandardString(table) + `)`
	count := `(SELECT count(*) FROM ` + tableRef(db, table) + `)`
	return `SELECT i.tbl, i.key_name, i.non_unique, i.seq, i.column_name, c.is_nullable AS nullable, ` +
		count + ` AS cardinality, i.pos ` +
		`FROM (SELECT table_oid, table_name AS tbl, ` + mysqlKeyName("") + ` AS key_name, ` +
		`false AS non_unique, unnest(constraint_column_names) AS column_name, unnest(range(1, len(constraint_column_names) + 1)) AS seq, ` +
		`CASE WHEN constraint_type = 'PRIMARY KEY' THEN 0 ELSE 1 + constraint_index END AS pos ` +
		`FROM duckdb_constraints() WHERE ` + where + ` AND constraint_type IN ('PRIMARY KEY', 'UNIQUE') ` +
		`UNION ALL SELECT table_oid, table_name, ` + mysqlIndexName + `, NOT is_unique, trim(unnest(qf_index_expressions(expressions)), '"'), ` +
		`unnest(range(1, len(qf_index_expressions(expressions)) + 1)), 1000000 + index_oid ` +
		`FROM duckdb_indexes() WHERE ` + where + ` AND NOT ` + caselessIndex + ` ` +
		`UNION ALL SELECT table_oid, table_name, key_name, true, unnest(cols), unnest(range(1, len(cols) + 1)), ` + impliedKeyPos + ` ` +
		`FROM (` + foreignKeyIndexes(db, table) + `) AS f) AS i ` +
		`JOIN duckdb_columns() c ON c.table_oid = i.table_oid AND c.column_name = i.column_name ` +
		`WHERE (SELECT count(*) FROM (SELECT 1 FROM ` + tableRef(db, table) + ` LIMIT 0)) = 0`
}

// TableStatus lists the tables and views with DuckDB's estimate of a table's rows and the
// next value of its AUTO_INCREMENT counter (autoinc.go: the sequence's next value and the
// offset in its comment).
func (duckCatalog) TableStatus(db string) string {
	return `SELECT t.table_name AS name, t.table_type = 'VIEW' AS view, ` +
		`(SELECT any_value(estimated_size) FROM duckdb_tables() d WHERE d.database_name = t.table_catalog AND d.schema_name = t.table_schema ` +
		`AND d.table_name = t.table_name) AS rows, ` +
		nextAutoIncrement("c.database_name = t.table_catalog AND c.schema_name = t.table_schema AND c.table_name = t.table_name") + ` AS auto_increment, ` +
		`coalesce((SELECT any_value(comment) FROM duckdb_tables() d WHERE d.database_name = t.table_catalog ` +
		`AND d.schema_name = t.table_schema AND d.table_name = t.table_name), '') AS comment ` +
		`FROM information_schema.tables t WHERE t.table_type IN ('BASE TABLE', 'VIEW') AND ` + inSchema("t.table_catalog", "t.table_schema", db)
}

// nextAutoIncrement is the next value of the AUTO_INCREMENT counter of the table whose columns
// c the condition where selects (the sequence's next value and the offset in its comment), or
// NULL.
func nextAutoIncrement(where string) string {
	return `(SELECT any_value(coalesce(s.last_value + s.increment_by, s.start_value) + ` +
		`coalesce(TRY_CAST(replace(s.comment, '` + aiOffsetComment + `', '') AS BIGINT), 0)) ` +
		`FROM duckdb_columns() c JOIN duckdb_sequences() s ON s.database_name = c.database_name AND s.schema_name = c.schema_name ` +
		`AND s.sequence_name = regexp_extract(c.column_default, 'nextval\(''(?:[^'']*\.)?(` + aiPrefix + `[^'']*)''', 1) ` +
		`WHERE ` + where + `)`
}

// OtherKeys are the table's CREATE INDEX indexes (UNIQUE KEY or KEY, by their names) and its
// foreign keys, named as MariaDB names a key it was not given a name for (t_ibfk_1, ...: DuckDB
// keeps no constraint's name) and with their declared actions (DuckDB's key has none).
func (duckCatalog) OtherKeys(db, table string) string {
	where := inSchema("database_name", "schema_name", db) + ` AND lower(table_name) = lower(` + sqltok.StandardString(table) + `)`
	joined := func(list, sep string) string {
		return `array_to_string(list_transform(` + list + `, x -> ` + mysqlshow.Tick(`trim(x, '"')`) + `), '` + sep + `')`
	}
	ticked := func(list string) string { return joined(list, ",") }
	spaced := func(list string) string { return joined(list, ", ") } // a foreign key's, as MariaDB writes them
	return `SELECT CASE WHEN is_unique THEN 'UNIQUE KEY' ELSE 'KEY' END AS kind, ` + mysqlIndexName + ` AS name, ` +
		ticked("qf_index_expressions(expressions)") + ` AS cols, NULL AS refs, index_oid AS pos FROM duckdb_indexes() WHERE ` + where + ` AND NOT ` + caselessIndex +
		` UNION ALL SELECT 'KEY', key_name, ` + ticked("cols") + `, NULL, ` + impliedKeyPos + ` FROM (` + foreignKeyIndexes(db, table) + `) AS f` +
		` UNION ALL SELECT 'FOREIGN KEY', name, cols, refs, row_number() OVER (ORDER BY name) FROM (SELECT ` +
		mysqlForeignKeyName("") + ` AS name, ` +
		spaced("constraint_column_names") + ` AS cols, ` + mysqlshow.Tick("referenced_table") + ` || ' (' || ` + spaced("referenced_column_names") + ` || ')' || ` + mysqlActions("") + ` AS refs ` +
		`FROM (` + foreignKeys(where) + `)) AS k`
}

// impliedKeyPos places a foreign key's own index after the table's other indexes.
const impliedKeyPos = `1000000000000 + constraint_index`

// TableOptions are MariaDB's for a table of the proxy's: InnoDB (as SHOW TABLE STATUS says),
// the next AUTO_INCREMENT value when it is past 1 (as MariaDB writes it), utf8mb4.
func (duckCatalog) TableOptions(db, table string) string {
	next := nextAutoIncrement(inSchema("c.database_name", "c.schema_name", db) + ` AND lower(c.table_name) = lower(` + sqltok.StandardString(table) + `)`)
	return `SELECT ' ENGINE=InnoDB' || coalesce(' AUTO_INCREMENT=' || CASE WHEN next > 1 THEN next END, '') || ` +
		`' DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci' AS options FROM (SELECT ` + next + ` AS next) AS n`
}

func (duckCatalog) Literal(v string) string { return duckString(v) }

// Condition: DuckDB reads names in any case.
func (duckCatalog) Condition(where string, _ []string) string { return mysqlCompat(where) }

// inSchema is the condition that the catalog and schema columns name db's main schema, or
// the current database's current schema when db is "".
func inSchema(catalogCol, schemaCol, db string) string {
	if db == "" {
		return catalogCol + " = current_database() AND " + schemaCol + " = current_schema()"
	}
	return catalogCol + " = " + sqltok.StandardString(db) + " AND " + schemaCol + " = 'main'"
}

// tableRef is db.t (or t) as DuckDB names it.
func tableRef(db, table string) string {
	if db == "" {
		return quoteIdent(table)
	}
	return quoteIdent(db) + "." + quoteIdent(table)
}

// missingTable finds the table DuckDB's catalog error names.
var missingTable = regexp.MustCompile(`Table with name (.+?) does not exist`)

// showError is err as a MySQL client's SHOW or DESCRIBE (client, run as rewritten) gets it: a
// table that does not exist is MySQL's message, not DuckDB's with the rewritten statement's text.
func showError(client, rewritten *query.Request, err error) error {
	var qe *query.Error
	if !isMySQL(client) || rewritten == nil || rewritten.SQL == client.SQL || !errors.As(err, &qe) || qe.Code != sqlstate.UndefinedTable ||
		!mysqlshow.IsCatalogStatement(client.SQL) {
		return err
	}
	m := missingTable.FindStringSubmatch(qe.Message)
	if m == nil {
		return err
	}
	return &query.Error{Code: qe.Code, Message: mysqlshow.MissingTable("", m[1])}
}
