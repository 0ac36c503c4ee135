package duckengine

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/mysqlshow"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL catalog compatibility: DuckDB emulates part of pg_catalog (pg_class, pg_attribute,
// pg_namespace, pg_type, pg_proc, format_type, pg_table_is_visible, ...). What client tools ask
// for beyond that (psql's \dt, \d, \l, \dn, \df; JDBC's getTables/getColumns) is made to work
// in two steps:
//   - the catalog functions and relations DuckDB lacks are created, once per database, in a
//     pg_catalog schema of the engine's own in-memory catalog, which every connection searches
//     (compatSQL);
//   - PostgreSQL-only syntax in a statement that mentions pg_catalog, a reg* cast or a bytea
//     cast is rewritten into DuckDB's (pgCompat): OPERATOR(pg_catalog.~) becomes ~, COLLATE
//     pg_catalog.default goes, ::pg_catalog.text becomes ::VARCHAR, 'name'::regclass looks the
//     relation up, another ::regclass cast keeps the oid, pg_get_expr takes psql's third
//     argument, and '\x0100ff'::bytea (psycopg2's bytes) becomes unhex('0100ff') rather than
//     DuckDB's reading of it (byte 0x01, then the text "00ff").

// compatCatalog is the in-memory catalog holding the compatibility objects, in its main schema:
// DuckDB keeps the name pg_catalog for its system catalog's schema.
const compatCatalog = "queryflux_pg_compat"

// compatPrefix qualifies a compatibility object's name.
const compatPrefix = `"` + compatCatalog + `".main.`

// compatNames are the names of the compatibility objects: pg_catalog.X, for X among them,
// reads the compatibility object.
var compatNames = func() map[string]bool {
	names := map[string]bool{}
	for _, s := range pgCompatSQL() {
		for _, m := range regexp.MustCompile(`\{c\}\.main\.(\w+)`).FindAllStringSubmatch(s, -1) {
			names[m[1]] = true
		}
	}
	return names
}()

// pgCompatSQL is everything the compatibility catalog holds for PostgreSQL (and Trino)
// clients; the engine adds the other protocols' functions.
func pgCompatSQL() []string {
	return slices.Concat(compatSQL, typeSQL(), pgSettingsSQL(), pgSessionSQL, trinoShowSQL, infoSchemaSQL(), pgDependSQL, pgSchemaSQL(), pgFunctionSQL, psqlCatalogSQL,
		regTextSQL, []string{setvalMacroSQL, functionDefSQL, setConfigSQL(), viewdefSQL})
}

// compatSQL creates the missing catalog objects in the catalog named {c}. The owner of
// everything is the proxy's own name: DuckDB has no roles.
var compatSQL = []string{
	// A PostgreSQL client's name of a schema: main is public (pgschema.go).
	`CREATE MACRO {c}.main.qf_pg_schema(s) AS CASE WHEN s = 'main' THEN 'public' ELSE s END`,
	`CREATE MACRO {c}.main.pg_get_userbyid(id) AS 'queryflux'`,
	`CREATE MACRO {c}.main.pg_encoding_to_char(enc) AS 'UTF8'`,
	`CREATE MACRO {c}.main.pg_relation_is_publishable(id) AS false`,
	// A serial column's sequence (pgserial.go): the one its default's nextval names, schema first
	// (Django's sequence reset, ORMs reading the key's sequence); NULL for another column.
	`CREATE MACRO {c}.main.pg_get_serial_sequence(tbl, col) AS (SELECT any_value(CASE WHEN contains(q.seq, '.') THEN q.seq
		ELSE {c}.main.qf_pg_schema(q.schema_name) || '.' || q.seq END) FROM (SELECT c.schema_name,
		regexp_extract(c.column_default, '^nextval\(''([^'']*)''', 1) AS seq FROM duckdb_columns() c WHERE c.database_name = current_database()
		AND lower(c.table_name) = lower(trim(string_split(tbl, '.')[-1], '"')) AND c.column_name = col
		AND c.schema_name = CASE WHEN len(string_split(tbl, '.')) = 1 THEN current_schema()
			WHEN trim(string_split(tbl, '.')[-2], '"') = 'public' THEN 'main' ELSE trim(string_split(tbl, '.')[-2], '"') END) q WHERE q.seq <> '')`,
	// A serial's default as PostgreSQL prints it: nextval('t_id_seq'::regclass), the sequence's
	// name qualified when its schema is not on the search path (always when the session's is
	// empty: qf_pg_get_expr__qualified, pg_dump's; pgsetconfig.go). DuckDB's text is
	// nextval('t_id_seq'), nextval('main.t_id_seq') or nextval('s.t_id_seq'); an unqualified name
	// is of the table's schema.
	`CREATE MACRO {c}.main.qf_nextval_text(e, relid, qualified) AS CASE WHEN regexp_matches(e, '^nextval\(''[^'']*''\)$') THEN
		'nextval(''' || (SELECT CASE WHEN regexp_matches(s, '^(main|public)\.') THEN (CASE WHEN qualified THEN 'public.' ELSE '' END) || regexp_replace(s, '^(main|public)\.', '')
			WHEN regexp_matches(s, '^("[^"]*"|[^".]*)\.') THEN s
			WHEN qualified OR coalesce(t.schema_name, 'main') <> 'main' THEN {c}.main.qf_pg_schema(coalesce(t.schema_name, 'main')) || '.' || s
			ELSE s END
			FROM (SELECT regexp_extract(e, '^nextval\(''([^'']*)''\)$', 1) AS s) LEFT JOIN (SELECT any_value(schema_name) AS schema_name
				FROM duckdb_tables() WHERE table_oid = relid) t ON true) || '''::regclass)' ELSE e END`,
	`CREATE MACRO {c}.main.qf_pg_get_expr(expr, relid) AS {c}.main.qf_nextval_text(expr::VARCHAR, relid, false),
		(expr, relid, pretty) AS {c}.main.qf_nextval_text(expr::VARCHAR, relid, false)`,
	`CREATE MACRO {c}.main.qf_pg_get_expr__qualified(expr, relid) AS {c}.main.qf_nextval_text(expr::VARCHAR, relid, true),
		(expr, relid, pretty) AS {c}.main.qf_nextval_text(expr::VARCHAR, relid, true)`,
	`CREATE MACRO {c}.main.pg_get_function_result(id) AS
		(SELECT any_value(f.return_type) FROM duckdb_functions() f WHERE f.function_oid = id)`,
	`CREATE MACRO {c}.main.pg_get_function_arguments(id) AS
		(SELECT any_value(array_to_string(list_transform(list_zip(f.parameters, f.parameter_types), p -> p[1] || ' ' || p[2]), ', '))
		 FROM duckdb_functions() f WHERE f.function_oid = id)`,
	`CREATE MACRO {c}.main.pg_get_function_identity_arguments(id) AS {c}.main.pg_get_function_arguments(id)`,
	// The argument is taken in a FROM-less select first: a caller's unqualified oid
	// (oid::regclass::text on pg_class) would be pg_class's own inside the lookup, and answer
	// one name for every row.
	`CREATE MACRO {c}.main.qf_relname(id) AS
		(SELECT any_value(relname) FROM (SELECT id AS qf_id) arg JOIN pg_catalog.pg_class r ON r.oid = arg.qf_id)`,
	// The client's database, not every attached catalog's copy of DuckDB's own views and
	// functions.
	`CREATE MACRO {c}.main.qf_own_schemas() AS TABLE
		SELECT oid FROM duckdb_schemas() WHERE database_name = current_database() AND schema_name <> 'queryflux_pg'`,
	// DuckDB keeps a primary key or unique constraint's index out of its pg_index and pg_class:
	// they list it as PostgreSQL does (JDBC's getPrimaryKeys, psql's \d), under an oid of its
	// own (qf_constraint_index_oid).
	`CREATE MACRO {c}.main.qf_constraint_index_oid(table_oid, constraint_index) AS
		(1::BIGINT << 40) + table_oid * 1000 + constraint_index`,
	declaredNameSQL, declaredActionSQL, constraintNameSQL, declaredByKeySQL,
	`CREATE MACRO {c}.main.qf_fk_action_words(a) AS CASE a WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL'
		WHEN 'd' THEN 'SET DEFAULT' END`,
	// A foreign key's deferrability as pg_get_constraintdef ends with it.
	`CREATE MACRO {c}.main.qf_fk_deferral(is_deferrable, is_deferred) AS
		CASE WHEN is_deferrable THEN ' DEFERRABLE' ELSE '' END || CASE WHEN is_deferred THEN ' INITIALLY DEFERRED' ELSE '' END`,
	// A foreign key's actions as PostgreSQL's definition ends with them (NO ACTION unwritten).
	`CREATE MACRO {c}.main.qf_fk_actions(upd, del) AS
		CASE WHEN upd IN ('r', 'c', 'n', 'd') THEN ' ON UPDATE ' || {c}.main.qf_fk_action_words(upd) ELSE '' END ||
		CASE WHEN del IN ('r', 'c', 'n', 'd') THEN ' ON DELETE ' || {c}.main.qf_fk_action_words(del) ELSE '' END`,
	// pg_name is qf_constraint_name's, by a join (qf_declared_by_key).
	`CREATE MACRO {c}.main.qf_key_constraints() AS TABLE
		SELECT k.*, coalesce(d.name, CASE WHEN k.constraint_type = 'PRIMARY KEY' THEN k.table_name || '_pkey' ELSE k.constraint_name END) AS pg_name
		FROM duckdb_constraints() k LEFT JOIN {c}.main.qf_declared_by_key d ON d.schema_name = k.schema_name
			AND d.table_name = lower(k.table_name) AND d.kind = CASE k.constraint_type WHEN 'PRIMARY KEY' THEN 'p' ELSE 'u' END
			AND d.columns = list_transform(k.constraint_column_names, x -> lower(x))
		WHERE k.constraint_type IN ('PRIMARY KEY', 'UNIQUE') AND k.database_name = current_database()`,
	// A table's access method is heap (qf_pg_am), as psql's \dt+ shows it, a view's none; a table with a
	// foreign key or referenced by one has "triggers", as PostgreSQL keeps its foreign keys
	// (psql's \d lists a table's foreign keys, and those referencing it, only then); its
	// replica identity is the default (psql's \d+ said "???").
	`CREATE VIEW {c}.main.qf_pg_class AS SELECT pc.* REPLACE (NULL::VARCHAR[] AS reloptions, NULL::VARCHAR[] AS relacl,
			CASE WHEN relkind IN ('r', 'm') THEN 2 WHEN relkind = 'i' THEN 403 ELSE 0 END AS relam,
			oid IN (SELECT table_oid FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'
				UNION ALL SELECT t.table_oid FROM duckdb_constraints() k JOIN duckdb_tables() t ON t.database_name = k.database_name
				AND t.schema_name = k.schema_name AND t.table_name = k.referenced_table WHERE k.constraint_type = 'FOREIGN KEY') AS relhastriggers,
			CASE WHEN relkind IN ('r', 'm', 'p') THEN 'd' ELSE 'n' END AS relreplident,
			-- a varchar(n)'s length check is none (pglength.go): pg_dump counts what pg_constraint lists
			(relchecks - coalesce(lc.n, 0))::INTEGER AS relchecks),
		false AS relforcerowsecurity FROM pg_catalog.pg_class pc
		LEFT JOIN (SELECT table_oid, count(*) AS n FROM duckdb_constraints() WHERE constraint_type = 'CHECK'
			AND regexp_matches(expression, ` + lengthCheckSQL + `) GROUP BY table_oid) lc ON lc.table_oid = pc.oid
		WHERE relnamespace IN (FROM {c}.main.qf_own_schemas())
		AND oid NOT IN (SELECT view_oid FROM duckdb_views() WHERE internal)
		UNION ALL BY NAME
		SELECT {c}.main.qf_constraint_index_oid(table_oid, constraint_index) AS oid,
			pg_name AS relname, schema_oid AS relnamespace, 'i' AS relkind, 'p' AS relpersistence, len(constraint_column_indexes)::BIGINT AS relnatts,
			false AS relhasindex, false AS relisshared, false AS relforcerowsecurity, 'n' AS relreplident,
			403 AS relam, 0 AS reltuples, 0 AS relpages
		FROM {c}.main.qf_key_constraints()`,
	// The client's schemas, and the system's pg_catalog and information_schema as PostgreSQL
	// lists them (DuckDB's own pg_namespace has the current database's only).
	// The client's views only (DuckDB's lists its own and the compatibility catalog's too, which
	// TypeORM's schema drop would drop).
	`CREATE VIEW {c}.main.qf_pg_views AS SELECT {c}.main.qf_pg_schema(schema_name) AS schemaname, view_name AS viewname,
		'queryflux' AS viewowner, sql AS definition FROM duckdb_views() WHERE NOT internal AND database_name NOT IN ({hidden})`,
	// The client's tables with no I/O counted (Sequelize's describeTable joins it to
	// pg_description for a column's comment).
	`CREATE VIEW {c}.main.pg_statio_all_tables AS SELECT table_oid AS relid, schema_name AS schemaname, table_name AS relname,
		0::BIGINT AS heap_blks_read, 0::BIGINT AS heap_blks_hit, 0::BIGINT AS idx_blks_read, 0::BIGINT AS idx_blks_hit,
		0::BIGINT AS toast_blks_read, 0::BIGINT AS toast_blks_hit, 0::BIGINT AS tidx_blks_read, 0::BIGINT AS tidx_blks_hit
		FROM duckdb_tables() WHERE database_name = current_database() AND schema_name <> 'queryflux_pg'`,
	// DuckDB has no materialized views.
	`CREATE VIEW {c}.main.pg_matviews AS SELECT NULL::VARCHAR AS schemaname, NULL::VARCHAR AS matviewname,
		NULL::VARCHAR AS matviewowner, NULL::VARCHAR AS tablespace, false AS hasindexes, false AS ispopulated,
		NULL::VARCHAR AS definition WHERE false`,
	`CREATE VIEW {c}.main.qf_pg_namespace AS
		SELECT oid, {c}.main.qf_pg_schema(schema_name) AS nspname, 0 AS nspowner, NULL AS nspacl FROM duckdb_schemas()
		WHERE database_name = current_database() AND schema_name <> 'queryflux_pg'
		OR database_name = 'system' AND schema_name IN ('pg_catalog', 'information_schema')`,
	`CREATE VIEW {c}.main.qf_pg_proc AS SELECT * FROM pg_catalog.pg_proc
		WHERE oid IN (SELECT function_oid FROM duckdb_functions() WHERE NOT internal AND database_name = current_database())
		UNION ALL BY NAME ` + castFunctionsSQL,
	`CREATE VIEW {c}.main.qf_pg_database AS SELECT oid, datname, 0::BIGINT AS datdba, 6 AS encoding,
		'c' AS datlocprovider, false AS datistemplate, true AS datallowconn, -1 AS datconnlimit, 'C' AS datcollate,
		'C' AS datctype, NULL::VARCHAR AS daticulocale, NULL::VARCHAR AS datcollversion, NULL::VARCHAR[] AS datacl,
		1663::BIGINT AS dattablespace, 0::BIGINT AS datfrozenxid, 1::BIGINT AS datminmxid
		FROM pg_catalog.pg_database WHERE datname NOT IN ('system', 'temp', {hidden})`,
	// PostgreSQL's two tablespaces, by their oids: a relation in the default one says 0 (DuckDB's
	// pg_tablespace numbers pg_default 0, which pg_dump then writes for every table).
	`CREATE VIEW {c}.main.pg_tablespace AS SELECT * FROM (VALUES (1663::BIGINT, 'pg_default', 0::BIGINT, NULL::VARCHAR[], NULL::VARCHAR[]),
		(1664::BIGINT, 'pg_global', 0::BIGINT, NULL::VARCHAR[], NULL::VARCHAR[])) t(oid, spcname, spcowner, spcacl, spcoptions)`,
	`CREATE VIEW {c}.main.pg_shseclabel AS SELECT NULL::BIGINT AS objoid, NULL::BIGINT AS classoid, NULL::VARCHAR AS provider,
		NULL::VARCHAR AS label WHERE false`,
	`CREATE VIEW {c}.main.pg_collation AS SELECT 100::BIGINT AS oid, 'default' AS collname,
		(SELECT any_value(oid) FROM duckdb_schemas() WHERE database_name = 'system' AND schema_name = 'pg_catalog') AS collnamespace,
		0::BIGINT AS collowner, 'd' AS collprovider, true AS collisdeterministic,
		-1 AS collencoding, NULL::VARCHAR AS collcollate, NULL::VARCHAR AS collctype, NULL::VARCHAR AS colliculocale`,
	// qf_index_expressions is a CREATE INDEX index's expressions, which duckdb_indexes() writes
	// as one text (['"name"', id]), as a list, each name quoted only where PostgreSQL would
	// quote it (DuckDB quotes its own keywords, as name).
	`CREATE MACRO {c}.main.qf_index_expressions(e) AS
		list_transform(CAST(e AS VARCHAR[]), x -> regexp_replace(x, '"([a-z_][a-z0-9_]*)"', '\1', 'g'))`,
	// pg_get_indexdef(id, col, pretty) is the index's column col (JDBC's getIndexInfo reads each
	// so), its definition for col 0.
	// An index's definition as PostgreSQL writes it (psql's \d shows what follows USING):
	// DuckDB's CREATE INDEX text names no method, and a key constraint's index has none.
	`CREATE MACRO {c}.main.qf_indexdef(id) AS coalesce(
		(SELECT any_value('CREATE ' || CASE WHEN is_unique THEN 'UNIQUE ' ELSE '' END || 'INDEX ' || index_name || ' ON ' ||
			{c}.main.qf_pg_schema(schema_name) || '.' || table_name || ' USING btree (' || array_to_string({c}.main.qf_index_expressions(expressions), ', ') || ')')
			FROM duckdb_indexes() WHERE index_oid = id),
		(SELECT any_value('CREATE UNIQUE INDEX ' || pg_name ||
			' ON ' || {c}.main.qf_pg_schema(schema_name) || '.' || table_name || ' USING btree (' || array_to_string(constraint_column_names, ', ') || ')')
			FROM {c}.main.qf_key_constraints() WHERE {c}.main.qf_constraint_index_oid(table_oid, constraint_index) = id))`,
	`CREATE MACRO {c}.main.pg_get_indexdef(id) AS {c}.main.qf_indexdef(id),
		(id, col, pretty) AS CASE WHEN col = 0 THEN {c}.main.qf_indexdef(id)
			ELSE coalesce((SELECT any_value(trim({c}.main.qf_index_expressions(expressions)[col], '"'))
				FROM duckdb_indexes() WHERE index_oid = id),
				(SELECT any_value(constraint_column_names[col]) FROM {c}.main.qf_key_constraints()
				 WHERE {c}.main.qf_constraint_index_oid(table_oid, constraint_index) = id)) END`,
	// The columns of a CREATE INDEX index (DuckDB's pg_index has no indkey): each of its
	// expressions that is a column, by the column's number. duckdb_indexes() writes the
	// expressions as one text, [n, m] (qf_index_expressions).
	`CREATE VIEW {c}.main.qf_index_keys AS SELECT k.index_oid, list(c.column_index::INTEGER ORDER BY k.pos) AS indkey,
		count(*) = any_value(k.n) AS plain
		FROM (SELECT index_oid, table_oid, unnest(x) AS e, generate_subscripts(x, 1) AS pos, len(x) AS n
			FROM (SELECT index_oid, table_oid, {c}.main.qf_index_expressions(expressions) AS x
				FROM duckdb_indexes() WHERE database_name = current_database())) k
		JOIN duckdb_columns() c ON c.table_oid = k.table_oid AND c.column_name = trim(k.e, '"')
		GROUP BY k.index_oid`,
	// An index DuckDB calls art is what PostgreSQL clients know as btree (JDBC's getIndexInfo
	// says ascending columns for it), under btree's oid: DuckDB's is 0, which is no access
	// method's (a view's relam) in PostgreSQL.
	`CREATE VIEW {c}.main.qf_pg_am AS SELECT * REPLACE (CASE WHEN amname = 'art' THEN 403 ELSE oid END AS oid,
		CASE WHEN amname = 'art' THEN 'btree' ELSE amname END AS amname)
		FROM pg_catalog.pg_am UNION ALL SELECT 2, 'heap', NULL, 't'`,
	`CREATE VIEW {c}.main.qf_pg_index AS SELECT i.* REPLACE (coalesce(i.indkey, k.indkey) AS indkey,
			CASE WHEN k.plain THEN NULL ELSE i.indexprs END AS indexprs, len(coalesce(i.indkey, k.indkey))::INTEGER AS indnatts,
			len(coalesce(i.indkey, k.indkey))::INTEGER AS indnkeyatts,
			list_transform(coalesce(i.indkey, k.indkey), x -> 0) AS indoption), false AS indnullsnotdistinct
		FROM pg_catalog.pg_index i LEFT JOIN {c}.main.qf_index_keys k ON k.index_oid = i.indexrelid
		UNION ALL BY NAME
		SELECT {c}.main.qf_constraint_index_oid(table_oid, constraint_index) AS indexrelid, table_oid AS indrelid,
			len(constraint_column_indexes)::INTEGER AS indnatts, len(constraint_column_indexes)::INTEGER AS indnkeyatts,
			true AS indisunique, constraint_type = 'PRIMARY KEY' AS indisprimary, false AS indisexclusion,
			true AS indimmediate, false AS indisclustered, true AS indisvalid, false AS indcheckxmin, true AS indisready,
			true AS indislive, false AS indisreplident,
			list_transform(constraint_column_indexes, i -> (i + 1)::INTEGER) AS indkey, false AS indnullsnotdistinct,
			list_transform(constraint_column_indexes, i -> 0) AS indoption
		FROM {c}.main.qf_key_constraints()`,
	// The constraints as PostgreSQL lists them (DuckDB's pg_constraint names each by its text,
	// counts conkey from 0 and leaves a foreign key's target out): PostgreSQL's names
	// (<table>_pkey, <table>_<columns>_fkey), keys by column number, and a foreign key's table,
	// columns and the index of the key it references (JDBC's getImportedKeys, SQLAlchemy's
	// get_pk_constraint and get_foreign_keys). DuckDB has no referential actions: a foreign key
	// is NO ACTION ('a'), as PostgreSQL's default. NOT NULL is a column's, not a constraint.
	`CREATE VIEW {c}.main.qf_pg_constraint AS SELECT (k.table_oid * 1000000) + k.constraint_index AS oid,
		coalesce(d.name, CASE k.constraint_type WHEN 'PRIMARY KEY' THEN k.table_name || '_pkey'
			WHEN 'FOREIGN KEY' THEN k.table_name || '_' || array_to_string(k.constraint_column_names, '_') || '_fkey'
			ELSE k.constraint_name END) AS conname,
		k.schema_oid AS connamespace,
		CASE k.constraint_type WHEN 'CHECK' THEN 'c' WHEN 'UNIQUE' THEN 'u' WHEN 'PRIMARY KEY' THEN 'p' ELSE 'f' END AS contype,
		k.constraint_type = 'FOREIGN KEY' AND coalesce(d.deferral, 'a') IN ('i', 'd') AS condeferrable,
		k.constraint_type = 'FOREIGN KEY' AND coalesce(d.deferral, 'a') = 'd' AS condeferred, true AS convalidated, k.table_oid AS conrelid, 0::BIGINT AS contypid,
		CASE WHEN k.constraint_type = 'FOREIGN KEY' THEN coalesce({c}.main.qf_constraint_index_oid(r.table_oid, r.constraint_index), 0)
			WHEN k.constraint_type IN ('PRIMARY KEY', 'UNIQUE') THEN {c}.main.qf_constraint_index_oid(k.table_oid, k.constraint_index)
			ELSE 0 END AS conindid,
		0::BIGINT AS conparentid, coalesce(r.table_oid, 0) AS confrelid,
		CASE WHEN k.constraint_type = 'FOREIGN KEY' THEN coalesce(d.on_update, 'a') ELSE ' ' END AS confupdtype,
		CASE WHEN k.constraint_type = 'FOREIGN KEY' THEN coalesce(d.on_delete, 'a') ELSE ' ' END AS confdeltype,
		CASE WHEN k.constraint_type = 'FOREIGN KEY' THEN 's' ELSE ' ' END AS confmatchtype,
		true AS conislocal, 0 AS coninhcount, false AS connoinherit,
		list_transform(k.constraint_column_indexes, i -> (i + 1)::SMALLINT) AS conkey,
		CASE WHEN k.constraint_type = 'FOREIGN KEY' THEN list_transform(k.referenced_column_names,
			n -> (r.constraint_column_indexes[list_position(r.constraint_column_names, n)] + 1)::SMALLINT) END AS confkey,
		NULL::BIGINT[] AS conpfeqop, NULL::BIGINT[] AS conppeqop, NULL::BIGINT[] AS conffeqop, NULL::BIGINT[] AS conexclop,
		k.expression AS conbin,
		CASE k.constraint_type WHEN 'CHECK' THEN 'CHECK (' || k.expression || ')'
			WHEN 'PRIMARY KEY' THEN 'PRIMARY KEY (' || array_to_string(k.constraint_column_names, ', ') || ')'
			WHEN 'UNIQUE' THEN 'UNIQUE (' || array_to_string(k.constraint_column_names, ', ') || ')'
			ELSE k.constraint_text END AS qf_definition
		FROM duckdb_constraints() k LEFT JOIN {c}.main.qf_declared_by_key d ON d.schema_name = k.schema_name
			AND d.table_name = lower(k.table_name) AND d.kind = CASE k.constraint_type WHEN 'PRIMARY KEY' THEN 'p' WHEN 'UNIQUE' THEN 'u'
			WHEN 'FOREIGN KEY' THEN 'f' WHEN 'CHECK' THEN 'c' END AND d.columns = list_transform(k.constraint_column_names, x -> lower(x))
		LEFT JOIN duckdb_constraints() r ON k.constraint_type = 'FOREIGN KEY'
			AND r.database_name = k.database_name AND r.schema_name = k.schema_name AND r.table_name = k.referenced_table
			AND r.constraint_type IN ('PRIMARY KEY', 'UNIQUE') AND list_sort(r.constraint_column_names) = list_sort(k.referenced_column_names)
		WHERE k.database_name = current_database() AND k.constraint_type IN ('CHECK', 'UNIQUE', 'PRIMARY KEY', 'FOREIGN KEY')
		AND NOT (k.constraint_type = 'CHECK' AND regexp_matches(k.expression, ` + lengthCheckSQL + `))`,
	// A constraint's definition as PostgreSQL writes it ("CHECK ((n > 0))", "PRIMARY KEY (id)";
	// DuckDB's text is "CHECK((n > 0))"); pretty, a check's outer parentheses go
	// ("CHECK (n > 0)", psql's \d); a foreign key's ends with its actions (qf_definition is
	// DuckDB's text, which its CREATE TABLE holds).
	`CREATE MACRO {c}.main.pg_get_constraintdef(id) AS
		(SELECT any_value(qf_definition || {c}.main.qf_fk_actions(confupdtype, confdeltype) || {c}.main.qf_fk_deferral(condeferrable, condeferred)) FROM {c}.main.qf_pg_constraint WHERE oid = id),
		(id, pretty) AS (SELECT any_value(CASE WHEN pretty AND contype = 'c' AND conbin LIKE '(%)'
			THEN 'CHECK (' || conbin[2:-2] || ')' ELSE qf_definition || {c}.main.qf_fk_actions(confupdtype, confdeltype) || {c}.main.qf_fk_deferral(condeferrable, condeferred) END)
			FROM {c}.main.qf_pg_constraint WHERE oid = id)`,
	// A list of text as PostgreSQL writes an array of it: {a,"b c",NULL}, an element quoted when
	// empty, NULL, or holding a blank, a quote, a backslash, a comma or a brace.
	`CREATE MACRO {c}.main.qf_pg_array_text(l) AS '{' || array_to_string(list_transform(l, e -> CASE WHEN e IS NULL THEN 'NULL'
		WHEN e = '' OR lower(e) = 'null' OR regexp_matches(e, '[\s",{}\\]') THEN '"' || replace(replace(e, '\', '\\'), '"', '\"') || '"'
		ELSE e END), ',') || '}'`,
	// information_schema._pg_expandarray(a): one (x, n) row per element of a, n counting from
	// 1 (JDBC's getPrimaryKeys reads index keys with it).
	`CREATE MACRO {c}.main.qf_pg_expandarray(arr) AS
		unnest(list_transform(generate_series(1, len(arr)), i -> {'x': arr[i], 'n': i}))`,
	// PostgreSQL's keyword list, DuckDB's keywords (JDBC's getSQLKeywords, which DBeaver asks
	// at connect).
	`CREATE MACRO {c}.main.pg_get_keywords() AS TABLE SELECT keyword_name AS word,
		CASE keyword_category WHEN 'unreserved' THEN 'U' WHEN 'column_name' THEN 'C' WHEN 'type_function' THEN 'T' ELSE 'R' END AS catcode,
		keyword_category <> 'reserved' AS barelabel,
		CASE keyword_category WHEN 'unreserved' THEN 'unreserved' WHEN 'column_name' THEN 'unreserved (cannot be function or type name)'
			WHEN 'type_function' THEN 'reserved (can be function or type name)' ELSE 'reserved' END AS catdesc,
		CASE WHEN keyword_category <> 'reserved' THEN 'can be bare label' ELSE 'requires AS' END AS baredesc
		FROM duckdb_keywords()`,
	// No table is partitioned: a table is its own partition root and only ancestor (one row:
	// psql's \d selects it as a set-returning function in a select list).
	`CREATE MACRO {c}.main.pg_partition_ancestors(rel) AS rel::BIGINT`,
	`CREATE MACRO {c}.main.qf_partition_ancestors(rel) AS TABLE SELECT rel::BIGINT AS relid, 1::BIGINT AS depth`, // and its ordinality
	`CREATE MACRO {c}.main.pg_partition_root(rel) AS rel::BIGINT`,
	`CREATE MACRO {c}.main.pg_get_statisticsobjdef_columns(id) AS NULL`,
	`CREATE MACRO {c}.main.pg_get_partkeydef(id) AS NULL`,
	`CREATE MACRO {c}.main.pg_get_triggerdef(id) AS NULL, (id, pretty) AS NULL`,
	`CREATE MACRO {c}.main.pg_get_ruledef(id) AS NULL, (id, pretty) AS NULL`,
	`CREATE MACRO {c}.main.pg_tablespace_location(id) AS ''`,
	`CREATE MACRO {c}.main.pg_total_relation_size(id) AS 0::BIGINT`,
	`CREATE MACRO {c}.main.pg_relation_size(id) AS 0::BIGINT`,
	`CREATE MACRO {c}.main.pg_table_size(id) AS 0::BIGINT`,
	`CREATE MACRO {c}.main.pg_database_size(id) AS 0::BIGINT`,
	`CREATE MACRO {c}.main.array_upper(arr, dim) AS len(arr)`,
	`CREATE MACRO {c}.main.array_lower(arr, dim) AS CASE WHEN len(arr) > 0 THEN 1 END`,
	`CREATE VIEW {c}.main.pg_auth_members AS SELECT 0::BIGINT AS roleid, 0::BIGINT AS member,
		0::BIGINT AS grantor, false AS admin_option WHERE false`,
	`CREATE VIEW {c}.main.pg_roles AS SELECT 0::BIGINT AS oid, 'queryflux' AS rolname, true AS rolsuper,
		true AS rolinherit, true AS rolcreaterole, true AS rolcreatedb, true AS rolcanlogin, false AS rolreplication,
		-1 AS rolconnlimit, NULL::VARCHAR AS rolpassword, NULL::TIMESTAMPTZ AS rolvaliduntil, true AS rolbypassrls,
		NULL::VARCHAR[] AS rolconfig`,
	`CREATE VIEW {c}.main.pg_inherits AS SELECT 0::BIGINT AS inhrelid, 0::BIGINT AS inhparent, 0 AS inhseqno,
		false AS inhdetachpending WHERE false`,
	`CREATE VIEW {c}.main.pg_policy AS SELECT 0::BIGINT AS oid, '' AS polname, 0::BIGINT AS polrelid,
		'' AS polcmd, true AS polpermissive, NULL::BIGINT[] AS polroles, NULL::VARCHAR AS polqual,
		NULL::VARCHAR AS polwithcheck WHERE false`,
	`CREATE VIEW {c}.main.pg_statistic_ext AS SELECT 0::BIGINT AS oid, 0::BIGINT AS stxrelid, '' AS stxname,
		0::BIGINT AS stxnamespace, 0::BIGINT AS stxowner, -1 AS stxstattarget, NULL::INTEGER[] AS stxkeys,
		NULL::VARCHAR[] AS stxkind, NULL::VARCHAR AS stxexprs WHERE false`,
	`CREATE VIEW {c}.main.pg_trigger AS SELECT 0::BIGINT AS oid, 0::BIGINT AS tgrelid, 0::BIGINT AS tgparentid,
		'' AS tgname, 0::BIGINT AS tgfoid, 0 AS tgtype, 'O' AS tgenabled, false AS tgisinternal,
		0::BIGINT AS tgconstrrelid, 0::BIGINT AS tgconstrindid, 0::BIGINT AS tgconstraint WHERE false`,
	`CREATE VIEW {c}.main.pg_rewrite AS SELECT 0::BIGINT AS oid, '' AS rulename, 0::BIGINT AS ev_class,
		'1' AS ev_type, 'O' AS ev_enabled, false AS is_instead WHERE false`,
	// No range types: Sequelize reads pg_type LEFT JOIN pg_range at connect.
	`CREATE VIEW {c}.main.pg_range AS SELECT 0::BIGINT AS rngtypid, 0::BIGINT AS rngsubtype, 0::BIGINT AS rngmultitypid,
		0::BIGINT AS rngcollation, 0::BIGINT AS rngsubopc, '' AS rngcanonical, '' AS rngsubdiff WHERE false`,
	`CREATE VIEW {c}.main.pg_foreign_table AS SELECT 0::BIGINT AS ftrelid, 0::BIGINT AS ftserver,
		NULL::VARCHAR[] AS ftoptions WHERE false`,
	// MySQL clients' functions (mysqlshow.go, docs/duckdb.md): UNIX_TIMESTAMP() in whole
	// seconds, of a value in UTC (the session time zone the MySQL frontend reports);
	// LAST_INSERT_ID() is the connection's variable qf_last_insert_id, which a MySQL client's
	// statement calling it sets to its session's value first (mysqlddl.go), else 0 (MySQL's
	// answer when no AUTO_INCREMENT value was generated); qf_mysql_type(t) is DuckDB type t as MySQL 8.0.11's SHOW COLUMNS
	// writes the nearest MySQL type.
	`CREATE MACRO {c}.main.unix_timestamp() AS epoch_ms(current_timestamp) // 1000,
		(x) AS floor(epoch(CAST(x AS TIMESTAMP)))::BIGINT`,
	// MySQL's AVG of integers, and DATEDIFF(a, b): the days from b's date to a's (mysqlfunctions.go).
	`CREATE MACRO {c}.main.qf_mysql_avg (x TINYINT) AS avg(x)::DECIMAL(38,4), (x SMALLINT) AS avg(x)::DECIMAL(38,4),
		(x INTEGER) AS avg(x)::DECIMAL(38,4), (x BIGINT) AS avg(x)::DECIMAL(38,4), (x) AS avg(x)`,
	`CREATE MACRO {c}.main.qf_mysql_datediff(a, b) AS CAST(CAST(a AS TIMESTAMP) AS DATE) - CAST(CAST(b AS TIMESTAMP) AS DATE)`,
	// MySQL's functions DuckDB lacks: TIMESTAMPDIFF (mysqlfunctions.go writes its unit as a
	// string) is DuckDB's date_sub, the whole units between; STR_TO_DATE is NULL for a text
	// the format does not read; SUBSTRING_INDEX, TO_DAYS and JSON_UNQUOTE as MySQL's (TO_DAYS
	// is written qf_mysql_to_days: DuckDB's to_days is the function INTERVAL n DAY calls).
	`CREATE MACRO {c}.main.qf_mysql_timestampdiff(u, a, b) AS date_sub(u, CAST(a AS TIMESTAMP), CAST(b AS TIMESTAMP))`,
	`CREATE MACRO {c}.main.qf_mysql_str_to_date(s, f) AS try_strptime(s, f)`,
	// DATE_ADD and DATE_SUB (mysqlfunctions.go picks _days for a unit of whole days): a DATE
	// for a DATE, text for text (a date's, or a datetime's with a time), a DATETIME's digits
	// for a MySQL client's DATETIME (TIMESTAMP_S) or DATETIME(3), else a timestamp.
	`CREATE MACRO {c}.main.qf_mysql_date_add_days (x DATE, i) AS CAST(x + i AS DATE),
		(x VARCHAR, i) AS CASE WHEN length(x) <= 10 THEN strftime(CAST(x AS DATE) + i, '%Y-%m-%d')
			ELSE strftime(CAST(x AS TIMESTAMP) + i, '%Y-%m-%d %H:%M:%S') END, (x TIMESTAMP_S, i) AS CAST(x + i AS TIMESTAMP_S),
		(x TIMESTAMP_MS, i) AS CAST(x + i AS TIMESTAMP_MS), (x, i) AS x + i`,
	`CREATE MACRO {c}.main.qf_mysql_date_sub_days (x DATE, i) AS CAST(x - i AS DATE),
		(x VARCHAR, i) AS CASE WHEN length(x) <= 10 THEN strftime(CAST(x AS DATE) - i, '%Y-%m-%d')
			ELSE strftime(CAST(x AS TIMESTAMP) - i, '%Y-%m-%d %H:%M:%S') END, (x TIMESTAMP_S, i) AS CAST(x - i AS TIMESTAMP_S),
		(x TIMESTAMP_MS, i) AS CAST(x - i AS TIMESTAMP_MS), (x, i) AS x - i`,
	`CREATE MACRO {c}.main.qf_mysql_date_add_time (x DATE, i) AS CAST(x AS TIMESTAMP) + i,
		(x VARCHAR, i) AS strftime(CAST(x AS TIMESTAMP) + i, '%Y-%m-%d %H:%M:%S'), (x TIMESTAMP_S, i) AS CAST(x + i AS TIMESTAMP_S),
		(x TIMESTAMP_MS, i) AS CAST(x + i AS TIMESTAMP_MS), (x, i) AS x + i`,
	`CREATE MACRO {c}.main.qf_mysql_date_sub_time (x DATE, i) AS CAST(x AS TIMESTAMP) - i,
		(x VARCHAR, i) AS strftime(CAST(x AS TIMESTAMP) - i, '%Y-%m-%d %H:%M:%S'), (x TIMESTAMP_S, i) AS CAST(x - i AS TIMESTAMP_S),
		(x TIMESTAMP_MS, i) AS CAST(x - i AS TIMESTAMP_MS), (x, i) AS x - i`,
	`CREATE MACRO {c}.main.qf_mysql_str_to_date_only(s, f) AS CAST(try_strptime(s, f) AS DATE)`,
	`CREATE MACRO {c}.main.substring_index(s, d, n) AS CASE WHEN n >= 0 THEN array_to_string(string_split(s, d)[1:n], d)
		ELSE array_to_string(string_split(s, d)[n:], d) END`,
	`CREATE MACRO {c}.main.qf_mysql_sleep(x) AS CASE WHEN x > 0 THEN coalesce(CAST(pg_sleep(x) AS INTEGER), 0) ELSE 0 END`,
	`CREATE MACRO {c}.main.qf_mysql_to_days(d) AS CAST(CAST(d AS TIMESTAMP) AS DATE) - DATE '0000-01-01'`,
	`CREATE MACRO {c}.main.json_unquote(j) AS CASE WHEN json_valid(CAST(j AS VARCHAR)) AND json_type(CAST(j AS VARCHAR)) = 'VARCHAR'
		THEN json_extract_string(CAST(j AS VARCHAR), '$') ELSE CAST(j AS VARCHAR) END`,
	// LENGTH in bytes; MID, LOCATE, SHA2, RAND and FIND_IN_SET, which DuckDB has under other names.
	`CREATE MACRO {c}.main.qf_mysql_length (x BLOB) AS CAST(octet_length(x) AS INTEGER), (x) AS CAST(strlen(CAST(x AS VARCHAR)) AS INTEGER)`,
	`CREATE MACRO {c}.main.mid(s, p, n) AS substr(s, p, n)`,
	`CREATE MACRO {c}.main.locate (sub, s) AS instr(s, sub),
		(sub, s, p) AS CASE WHEN instr(substr(s, p), sub) = 0 THEN 0 ELSE instr(substr(s, p), sub) + p - 1 END`,
	`CREATE MACRO {c}.main.sha2(s, n) AS CASE WHEN n IN (0, 256) THEN sha256(s) END`,
	`CREATE MACRO {c}.main.rand () AS random(), (seed) AS random()`,
	`CREATE MACRO {c}.main.find_in_set(s, list) AS coalesce(list_position(string_split(list, ','), s), 0)`,
	`CREATE MACRO {c}.main.last_insert_id() AS coalesce(getvariable('qf_last_insert_id'), 0)::UBIGINT`,
	`CREATE MACRO {c}.main.qf_mysql_type(t) AS CASE
		WHEN t = 'BOOLEAN' THEN 'tinyint(1)' WHEN t = 'TINYINT' THEN 'tinyint(4)' WHEN t = 'SMALLINT' THEN 'smallint(6)'
		WHEN t = 'INTEGER' THEN 'int(11)' WHEN t = 'BIGINT' THEN 'bigint(20)' WHEN t = 'UTINYINT' THEN 'tinyint(3) unsigned'
		WHEN t = 'USMALLINT' THEN 'smallint(5) unsigned' WHEN t = 'UINTEGER' THEN 'int(10) unsigned'
		WHEN t = 'UBIGINT' THEN 'bigint(20) unsigned' WHEN t = 'HUGEINT' THEN 'decimal(39,0)'
		WHEN t = 'UHUGEINT' THEN 'decimal(39,0) unsigned' WHEN t = 'FLOAT' THEN 'float' WHEN t = 'DOUBLE' THEN 'double'
		WHEN t LIKE 'DECIMAL(%' THEN lower(t) WHEN t = 'VARCHAR' THEN 'text' WHEN t = 'BLOB' THEN 'blob'
		WHEN t = 'DATE' THEN 'date' WHEN t = 'TIME' THEN 'time(6)' WHEN t LIKE 'TIMESTAMP WITH TIME ZONE' THEN 'timestamp(6)'
		WHEN t = 'TIMESTAMP_S' THEN 'datetime' WHEN t = 'TIMESTAMP_MS' THEN 'datetime(3)' WHEN t LIKE 'TIMESTAMP%' THEN 'datetime(6)'
		WHEN t = 'UUID' THEN 'char(36)' WHEN t = 'JSON' THEN 'json' ELSE lower(t) END`,
	// MySQL's information_schema (mysqlcompat.go reads a MySQL client's information_schema.X as
	// qf_mysql_X): a database is DuckDB's catalog, its tables those of the catalog's main
	// schema, so TABLE_SCHEMA is the database's name (SQLAlchemy's has_table counts
	// information_schema.tables WHERE table_schema = the database).
	`CREATE VIEW {c}.main.qf_mysql_schemata AS SELECT 'def' AS "CATALOG_NAME", datname AS "SCHEMA_NAME",
		'utf8mb4' AS "DEFAULT_CHARACTER_SET_NAME", 'utf8mb4_general_ci' AS "DEFAULT_COLLATION_NAME", NULL::VARCHAR AS "SQL_PATH"
		FROM {c}.main.qf_pg_database`,
	// information_schema.tables: mysqlTablesSQL (mysqlinfoschema.go).
	// information_schema.triggers, .files and .partitions, as MariaDB's, empty: DuckDB has no
	// triggers, tablespaces or partitions (mariadb-dump asks them for every dump).
	`CREATE VIEW {c}.main.qf_mysql_triggers AS SELECT 'def' AS "TRIGGER_CATALOG", NULL::VARCHAR AS "TRIGGER_SCHEMA",
		NULL::VARCHAR AS "TRIGGER_NAME", NULL::VARCHAR AS "EVENT_MANIPULATION", 'def' AS "EVENT_OBJECT_CATALOG",
		NULL::VARCHAR AS "EVENT_OBJECT_SCHEMA", NULL::VARCHAR AS "EVENT_OBJECT_TABLE", 0::BIGINT AS "ACTION_ORDER",
		NULL::VARCHAR AS "ACTION_CONDITION", NULL::VARCHAR AS "ACTION_STATEMENT", 'ROW' AS "ACTION_ORIENTATION",
		NULL::VARCHAR AS "ACTION_TIMING", NULL::VARCHAR AS "SQL_MODE", NULL::VARCHAR AS "DEFINER",
		NULL::VARCHAR AS "CHARACTER_SET_CLIENT", NULL::VARCHAR AS "COLLATION_CONNECTION", NULL::VARCHAR AS "DATABASE_COLLATION" WHERE false`,
	`CREATE VIEW {c}.main.qf_mysql_files AS SELECT 0::BIGINT AS "FILE_ID", NULL::VARCHAR AS "FILE_NAME", NULL::VARCHAR AS "FILE_TYPE",
		NULL::VARCHAR AS "TABLESPACE_NAME", NULL::VARCHAR AS "TABLE_NAME", NULL::VARCHAR AS "LOGFILE_GROUP_NAME",
		0::BIGINT AS "TOTAL_EXTENTS", 0::BIGINT AS "EXTENT_SIZE", 0::BIGINT AS "INITIAL_SIZE", NULL::VARCHAR AS "ENGINE", NULL::VARCHAR AS "EXTRA" WHERE false`,
	`CREATE VIEW {c}.main.qf_mysql_partitions AS SELECT 'def' AS "TABLE_CATALOG", NULL::VARCHAR AS "TABLE_SCHEMA",
		NULL::VARCHAR AS "TABLE_NAME", NULL::VARCHAR AS "PARTITION_NAME", NULL::VARCHAR AS "TABLESPACE_NAME" WHERE false`,
	// DuckDB's extensions are not PostgreSQL's: none is listed (psql's \dx, Rails' schema dump).
	`CREATE VIEW {c}.main.pg_extension AS SELECT 0::BIGINT AS oid, NULL::VARCHAR AS extname, 0::BIGINT AS extowner,
		0::BIGINT AS extnamespace, false AS extrelocatable, NULL::VARCHAR AS extversion, NULL::BIGINT[] AS extconfig,
		NULL::VARCHAR[] AS extcondition WHERE false`,
	`CREATE VIEW {c}.main.pg_partitioned_table AS SELECT 0::BIGINT AS partrelid, 'r' AS partstrat,
		0 AS partnatts, 0::BIGINT AS partdefid, NULL::SMALLINT[] AS partattrs, NULL::BIGINT[] AS partclass,
		NULL::BIGINT[] AS partcollation, NULL::VARCHAR AS partexprs WHERE false`,
	// What psql's \dy \dc \dC \do \dL \dF \des \drds list: DuckDB has no event triggers,
	// encoding conversions, PostgreSQL casts or operators one could list as pg_catalog's, no
	// procedural language, text search configuration, foreign server or per-role settings.
	`CREATE VIEW {c}.main.pg_event_trigger AS SELECT 0::BIGINT AS oid, '' AS evtname, '' AS evtevent, 0::BIGINT AS evtowner,
		0::BIGINT AS evtfoid, 'O' AS evtenabled, NULL::VARCHAR[] AS evttags WHERE false`,
	`CREATE VIEW {c}.main.pg_conversion AS SELECT 0::BIGINT AS oid, '' AS conname, 0::BIGINT AS connamespace,
		0::BIGINT AS conowner, 0 AS conforencoding, 0 AS contoencoding, 0::BIGINT AS conproc, false AS condefault WHERE false`,
	`CREATE MACRO {c}.main.pg_conversion_is_visible(id) AS true`,
	pgCastSQL,
	`CREATE VIEW {c}.main.pg_operator AS SELECT 0::BIGINT AS oid, '' AS oprname, 0::BIGINT AS oprnamespace,
		0::BIGINT AS oprowner, 'b' AS oprkind, false AS oprcanmerge, false AS oprcanhash, 0::BIGINT AS oprleft,
		0::BIGINT AS oprright, 0::BIGINT AS oprresult, 0::BIGINT AS oprcom, 0::BIGINT AS oprnegate, 0::BIGINT AS oprcode,
		0::BIGINT AS oprrest, 0::BIGINT AS oprjoin WHERE false`,
	`CREATE MACRO {c}.main.pg_operator_is_visible(id) AS true`,
	`CREATE VIEW {c}.main.pg_language AS SELECT 0::BIGINT AS oid, '' AS lanname, 0::BIGINT AS lanowner, false AS lanispl,
		false AS lanpltrusted, 0::BIGINT AS lanplcallfoid, 0::BIGINT AS laninline, 0::BIGINT AS lanvalidator,
		NULL::VARCHAR[] AS lanacl, 0::BIGINT AS tableoid WHERE false`,
	`CREATE VIEW {c}.main.pg_ts_config AS SELECT 0::BIGINT AS oid, '' AS cfgname, 0::BIGINT AS cfgnamespace,
		0::BIGINT AS cfgowner, 0::BIGINT AS cfgparser WHERE false`,
	`CREATE MACRO {c}.main.pg_ts_config_is_visible(id) AS true`,
	`CREATE VIEW {c}.main.pg_foreign_data_wrapper AS SELECT 0::BIGINT AS oid, '' AS fdwname, 0::BIGINT AS fdwowner,
		0::BIGINT AS fdwhandler, 0::BIGINT AS fdwvalidator, NULL::VARCHAR[] AS fdwacl, NULL::VARCHAR[] AS fdwoptions WHERE false`,
	`CREATE VIEW {c}.main.pg_foreign_server AS SELECT 0::BIGINT AS oid, '' AS srvname, 0::BIGINT AS srvowner,
		0::BIGINT AS srvfdw, NULL::VARCHAR AS srvtype, NULL::VARCHAR AS srvversion, NULL::VARCHAR[] AS srvacl,
		NULL::VARCHAR[] AS srvoptions WHERE false`,
	`CREATE VIEW {c}.main.pg_db_role_setting AS SELECT 0::BIGINT AS setdatabase, 0::BIGINT AS setrole,
		NULL::VARCHAR[] AS setconfig WHERE false`,
}

// extendedRelations are DuckDB's catalog relations that lack columns clients read, or list
// every attached catalog's system objects: a query naming pg_catalog.X reads pg_catalog.qf_X,
// X with those columns and only the client's database (compatSQL).
var extendedRelations = map[string]bool{"pg_class": true, "pg_database": true, "pg_namespace": true, "pg_proc": true,
	"pg_attribute": true, "pg_type": true, "pg_index": true, "pg_am": true, "pg_constraint": true, "pg_views": true,
	"pg_tables": true, "pg_indexes": true, "pg_sequences": true}

// relationEnds are the words that may follow a relation in FROM that has no alias.
var relationEnds = map[string]bool{"where": true, "join": true, "left": true, "right": true, "inner": true,
	"full": true, "cross": true, "natural": true, "on": true, "using": true, "order": true, "group": true,
	"having": true, "limit": true, "offset": true, "union": true, "except": true, "intersect": true,
	"window": true, "fetch": true, "for": true, "returning": true, "tablesample": true}

// Types: a client sees PostgreSQL's type oids in a result's columns (engine.PGTypeOf), so the
// catalog speaks them too: pg_type lists the PostgreSQL types results use, pg_attribute gives
// each column the oid and typmod its values are sent with, and format_type names them as
// PostgreSQL does. (DuckDB's own pg_catalog uses DuckDB's type ids.)

// pgType is a row of the compatibility pg_type.
type pgType struct {
	oid             uint32
	name, formatted string
	length          int
	category        string
	collatable      bool
}

var pgTypes = []pgType{
	{16, "bool", "boolean", 1, "B", false}, {17, "bytea", "bytea", -1, "U", false},
	{18, "char", `"char"`, 1, "S", true}, {19, "name", "name", 64, "S", true},
	{20, "int8", "bigint", 8, "N", false}, {21, "int2", "smallint", 2, "N", false},
	{23, "int4", "integer", 4, "N", false}, {25, "text", "text", -1, "S", true},
	{26, "oid", "oid", 4, "N", false}, {114, "json", "json", -1, "U", false},
	{700, "float4", "real", 4, "N", false}, {701, "float8", "double precision", 8, "N", false},
	{1042, "bpchar", "character", -1, "S", true},
	{1043, "varchar", "character varying", -1, "S", true}, {1082, "date", "date", 4, "D", false},
	{1083, "time", "time without time zone", 8, "D", false},
	{1114, "timestamp", "timestamp without time zone", 8, "D", false},
	{1184, "timestamptz", "timestamp with time zone", 8, "D", false},
	{1186, "interval", "interval", 16, "T", false}, {1266, "timetz", "time with time zone", 12, "D", false},
	{1700, "numeric", "numeric", -1, "N", false}, {2950, "uuid", "uuid", 16, "U", false},
	{3802, "jsonb", "jsonb", -1, "U", false},
}

// duckTypes are DuckDB's column type names as its catalog spells them, with the name the
// driver reports for result columns where it differs.
var duckTypes = [][2]string{
	{"BOOLEAN", ""}, {"TINYINT", ""}, {"SMALLINT", ""}, {"INTEGER", ""}, {"BIGINT", ""}, {"HUGEINT", ""},
	{"UTINYINT", ""}, {"USMALLINT", ""}, {"UINTEGER", ""}, {"UBIGINT", ""}, {"UHUGEINT", ""}, {"FLOAT", ""},
	{"DOUBLE", ""}, {"VARCHAR", ""}, {"BLOB", ""}, {"DATE", ""}, {"TIME", ""}, {"TIMESTAMP", ""},
	{"TIMESTAMP_S", ""}, {"TIMESTAMP_MS", ""}, {"TIMESTAMP_NS", ""}, {"TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ"},
	{"UUID", ""}, {"JSON", ""}, {"INTERVAL", ""},
}

// typeSQL creates the type side of the compatibility catalog in {c}.
func typeSQL() []string {
	var rows, cases []string
	for _, t := range pgTypes {
		rows = append(rows, fmt.Sprintf("(%d, '%s', '%s', %d, '%s', %d)", t.oid, t.name, strings.ReplaceAll(t.formatted, "'", "''"),
			t.length, t.category, map[bool]int{true: 100}[t.collatable]))
	}
	for _, d := range duckTypes {
		oid, _ := engine.PGTypeOf(fieldFor("c", cmp.Or(d[1], d[0])))
		cases = append(cases, fmt.Sprintf("WHEN '%s' THEN %d", d[0], oid))
	}
	// A list column is its element type's array (text[], psql's \d), as its values are sent.
	listed := map[uint32]bool{}
	for _, d := range duckTypes {
		elem, _ := engine.PGTypeOf(fieldFor("c", cmp.Or(d[1], d[0])))
		array, ok := engine.DuckDBArrayOID(cmp.Or(d[1], d[0]) + "[]")
		if !ok {
			continue
		}
		cases = append(cases, fmt.Sprintf("WHEN '%s[]' THEN %d", d[0], array))
		i := slices.IndexFunc(pgTypes, func(t pgType) bool { return t.oid == elem })
		if i < 0 || listed[array] {
			continue
		}
		listed[array] = true
		t := pgTypes[i]
		rows = append(rows, fmt.Sprintf("(%d, '_%s', '%s[]', -1, 'A', %d)", array, t.name, strings.ReplaceAll(t.formatted, "'", "''"),
			map[bool]int{true: 100}[t.collatable]))
	}
	// The arrays of the other types a PostgreSQL client may declare (pgdeclared.go).
	for _, elem := range slices.Sorted(maps.Keys(pgArrayTypes)) {
		i := slices.IndexFunc(pgTypes, func(t pgType) bool { return t.oid == elem })
		if array := pgArrayTypes[elem]; i >= 0 && !listed[array] {
			listed[array] = true
			t := pgTypes[i]
			rows = append(rows, fmt.Sprintf("(%d, '_%s', '%s[]', -1, 'A', %d)", array, t.name, strings.ReplaceAll(t.formatted, "'", "''"),
				map[bool]int{true: 100}[t.collatable]))
		}
	}
	// The types whose typstorage is "extended" (qf_pg_type's).
	var extended []string
	for _, row := range rows {
		oid, rest, _ := strings.Cut(row[1:], ", ")
		if n, _ := strconv.Atoi(oid); slices.Contains([]int{17, 25, 114, 1042, 1043, 3802}, n) || strings.Contains(rest, ", 'A', ") {
			extended = append(extended, oid)
		}
	}
	return []string{
		`CREATE MACRO {c}.main.qf_type_oid(data_type) AS CASE WHEN data_type LIKE 'DECIMAL(%' THEN 1700 ELSE CASE data_type ` +
			strings.Join(cases, " ") + ` ELSE 25 END END`,
		`CREATE VIEW {c}.main.qf_pg_type AS SELECT oid::BIGINT AS oid, typname, (SELECT any_value(oid) FROM duckdb_schemas()
			WHERE database_name = 'system' AND schema_name = 'pg_catalog') AS typnamespace, 0::BIGINT AS typowner,
			typlen, typlen BETWEEN 1 AND 8 AS typbyval, 'b' AS typtype, typcategory, false AS typispreferred,
			true AS typisdefined, ',' AS typdelim, 0::BIGINT AS typrelid, 0::BIGINT AS typsubscript, 0::BIGINT AS typelem,
			0::BIGINT AS typarray, typname || 'in' AS typinput, typname || 'out' AS typoutput, typname || 'recv' AS typreceive,
			typname || 'send' AS typsend, 0::BIGINT AS typmodin, 0::BIGINT AS typmodout, 0::BIGINT AS typanalyze,
			'i' AS typalign, -- typstorage: numeric "main", the other variable-length types (arrays too) "extended"
			CASE WHEN oid = 1700 THEN 'm' WHEN oid IN (17, 25, 114, 1042, 1043, 3802) OR typcategory = 'A' THEN 'x'
			ELSE 'p' END AS typstorage, false AS typnotnull, 0::BIGINT AS typbasetype, -1 AS typtypmod,
			0 AS typndims, typcollation::BIGINT AS typcollation, NULL::VARCHAR AS typdefaultbin, NULL::VARCHAR AS typdefault,
			NULL::VARCHAR[] AS typacl, formatted AS qf_formatted
			FROM (VALUES ` + strings.Join(rows, ", ") + `) t(oid, typname, formatted, typlen, typcategory, typcollation)`,
		// How PostgreSQL stores a value of the type (psql's \d+ Storage): its pg_type's
		// typstorage, written out (a lookup in qf_pg_type would be a correlated subquery in
		// every pg_attribute row, which DuckDB plans slowly).
		`CREATE MACRO {c}.main.qf_storage(type_oid) AS CASE WHEN type_oid = 1700 THEN 'm' WHEN type_oid IN (` +
			strings.Join(extended, ", ") + `) THEN 'x' ELSE 'p' END`,
		formatTypeSQL(),
		declaredColumnsView,
		`CREATE VIEW {c}.main.qf_pg_attribute AS SELECT table_oid AS attrelid, column_name AS attname,
			pg_type_oid AS atttypid, -1 AS attstattarget, -1 AS attlen, column_index AS attnum,
			0 AS attndims, -1 AS attcacheoff, pg_typmod AS atttypmod,
			false AS attbyval, {c}.main.qf_storage(pg_type_oid) AS attstorage, 'i' AS attalign, NOT is_nullable AS attnotnull,
			column_default IS NOT NULL AND pg_identity IS NULL AS atthasdef, false AS atthasmissing,
			coalesce(pg_identity, '') AS attidentity, '' AS attgenerated,
			false AS attisdropped, true AS attislocal, 0 AS attinhcount,
			CASE WHEN pg_type_oid IN (18, 19, 25, 1042, 1043) THEN 100 ELSE 0 END::BIGINT AS attcollation,
			'' AS attcompression, NULL::VARCHAR[] AS attacl, NULL::VARCHAR[] AS attoptions, NULL::VARCHAR[] AS attfdwoptions,
			NULL::VARCHAR AS attmissingval
			-- the client's database's (and temporary) relations, as qf_pg_class lists them, not
			-- the columns of every attached catalog's views
			FROM {c}.main.qf_pg_columns WHERE database_name = current_database() AND schema_name <> 'queryflux_pg' OR database_name = 'temp'
			UNION ALL BY NAME
			SELECT {c}.main.qf_constraint_index_oid(k.table_oid, k.constraint_index) AS attrelid, c.column_name AS attname,
				{c}.main.qf_type_oid(c.data_type) AS atttypid, k.pos::INTEGER AS attnum, -1 AS atttypmod,
				{c}.main.qf_storage({c}.main.qf_type_oid(c.data_type)) AS attstorage, NOT c.is_nullable AS attnotnull,
				false AS atthasdef, false AS attisdropped, 0::BIGINT AS attcollation, '' AS attidentity, '' AS attgenerated
			FROM (SELECT table_oid, constraint_index, unnest(constraint_column_names) AS col,
				generate_subscripts(constraint_column_names, 1) AS pos FROM {c}.main.qf_key_constraints()) k
			JOIN duckdb_columns() c ON c.table_oid = k.table_oid AND c.column_name = k.col`,
	}
}

// regTypes are PostgreSQL's object-identifier alias types, which DuckDB lacks.
var regTypes = map[string]bool{
	"regclass": true, "regtype": true, "regproc": true, "regprocedure": true, "regnamespace": true,
	"regrole": true, "regoper": true, "regoperator": true, "regconfig": true, "regdictionary": true, "regcollation": true,
}

// castTypes renames PostgreSQL types DuckDB does not know in a cast.
var castTypes = map[string]string{"jsonb": "JSON", "text": "VARCHAR", "name": "VARCHAR", `"char"`: "VARCHAR", "char": "VARCHAR",
	"int2vector": "VARCHAR", "oidvector": "VARCHAR", "xid": "BIGINT", "cid": "BIGINT", "tid": "VARCHAR"}

// compatRequest is q with its SQL rewritten by pgCompat and showTimeout, or for a MySQL
// client's by mysqlshow or mysqlCompat (q itself when nothing changed); db is the engine's
// database, what a MySQL client's SHOW TABLES names when it chose none. The error refuses a
// MySQL SHOW this engine does not answer.
func compatRequest(q *query.Request, db string) (*query.Request, error) {
	q = withoutLocking(showTimeout(q))
	s, shown := pgShow(q)
	if !shown {
		s, shown = trinoShow(q)
	}
	if !shown {
		s, shown = pgSequenceRow(q) // pgdump.go
	}
	if !shown {
		var setval bool
		if s, setval = pgCompatCalls(q); setval {
			s = setvalCompat(s)
		}
	}
	if isMySQL(q) {
		// SHOW GRANTS: mysqlgrants.go; SHOW CREATE VIEW: mysqlshowcreate.go
		show, ok, err := mysqlShowGrants(q, s)
		if !ok && err == nil && mysqlshow.IsCatalogStatement(s) && !isShowCreateView(q) {
			show, ok, err = mysqlshow.SQL(s, cmp.Or(q.Database, db), duckCatalog{})
		}
		switch {
		case err != nil:
			return nil, err
		case ok:
			s = show
		default:
			s = limitedWrite(unqualifiedSets(mysqlCompat(mysqlViewOptions(s))))
		}
	}
	if q.Protocol == query.ProtocolFlightSQL {
		s = exactDivision(s, sqltok.Postgres)
	}
	s = withOwnSession(q, s) // sessionviews.go
	if s == q.SQL {
		return q, nil
	}
	c := *q
	c.SQL, c.ClientSQL = s, cmp.Or(q.ClientSQL, q.SQL)
	return &c, nil
}

// needsCompat reports cheaply whether sqlText may use PostgreSQL-only catalog syntax.
func needsCompat(sqlText string) bool {
	for i := 0; i+3 <= len(sqlText); i++ {
		switch sqlText[i] | 0x20 {
		case 'p':
			if i+10 <= len(sqlText) && strings.EqualFold(sqlText[i:i+10], "pg_catalog") {
				return true
			}
			if i+3 <= len(sqlText) && strings.EqualFold(sqlText[i:i+3], "pg_") && (i == 0 || !sqltok.IsNameByte(sqlText[i-1])) {
				return true // an unqualified catalog relation (pg_index), or a function (pg_get_expr)
			}
		case 'r':
			if i+3 <= len(sqlText) && strings.EqualFold(sqlText[i:i+3], "reg") && i >= 2 && sqlText[i-1] == ':' {
				return true
			}
		case 'b':
			if i+5 <= len(sqlText) && strings.EqualFold(sqlText[i:i+5], "bytea") && i >= 2 && sqlText[i-1] == ':' {
				return true
			}
		case 'c':
			if i+12 <= len(sqlText) && strings.EqualFold(sqlText[i:i+12], "cardinality(") {
				return true
			}
		case 's': // setval(...): the writer marks it for setvalCompat (pgsetval.go)
			if i+6 <= len(sqlText) && strings.EqualFold(sqlText[i:i+6], "setval") && (i == 0 || !sqltok.IsNameByte(sqlText[i-1])) {
				return true
			}
		case 'j':
			if i+5 <= len(sqlText) && strings.EqualFold(sqlText[i:i+5], "jsonb") && i >= 2 && sqlText[i-1] == ':' {
				return true
			}
		case '{': // '{1,2}'::int[]
			if i >= 1 && sqlText[i-1] == '\'' {
				return true
			}
		}
	}
	return false
}

// pgCompat rewrites PostgreSQL-only syntax of catalog queries into DuckDB's (see above);
// other statements come back unchanged.
func pgCompat(q *query.Request) string {
	s, _ := pgCompatCalls(q)
	return s
}

// pgCompatCalls is pgCompat's rewrite, and whether a PostgreSQL client's statement calls
// setval (found in the same pass, so that no other statement is scanned for it again).
func pgCompatCalls(q *query.Request) (string, bool) {
	q = pgVarcharCasts(pgLikeEscapes(q)) // pglike.go, pgvarcharfit.go
	// A MySQL client's at is mysqlCompat's to quote, its way.
	quoteAt := !isMySQL(q) && holdsWordAt(q.SQL)
	settings := mayReadPGSettings(q)
	infoSchema := !isMySQL(q) && mentionsInfoSchema(q.SQL)
	var session *query.Request
	if mayReadSession(q) {
		session = q
	}
	functions := functionsOf(q)
	binary := q.Protocol == query.ProtocolTrino && hasBinaryLiteral(q.SQL)
	jsonOps := q.Protocol == query.ProtocolPostgres && strings.ContainsAny(q.SQL, "@?#")
	regex := q.Protocol == query.ProtocolPostgres && mayMatchRegex(q.SQL)
	division := (q.Protocol == query.ProtocolPostgres || q.Protocol == query.ProtocolTrino) && divides(q)
	values := q.Protocol == query.ProtocolTrino && containsFold(q.SQL, "values")
	offsets := q.Protocol == query.ProtocolPostgres && holdsOffsetTimestamp(q.SQL)
	precision := q.Protocol == query.ProtocolTrino && holdsTimePrecision(q.SQL)
	subscript := q.Protocol == query.ProtocolTrino && strings.Contains(q.SQL, "[")
	fraction := q.Protocol == query.ProtocolTrino && (holdsZeroFraction(q.SQL) || containsFold(q.SQL, "decimal"))
	rows := q.Protocol == query.ProtocolTrino && holdsRow(q.SQL)
	zones := q.Protocol == query.ProtocolTrino && holdsZone(q.SQL)
	if !needsCompat(q.SQL) && !quoteAt && !settings && !callsRenamed(q, functions) && !binary && !jsonOps && !regex && session == nil &&
		!infoSchema && !division && !values && !mayNamePublic(q) && !offsets && !precision && !subscript && !fraction && !rows && !zones {
		return q.SQL, false
	}
	if q.Protocol == query.ProtocolPostgres {
		noteSearchPath(q) // pgsetconfig.go
	}
	toks := pgTokens(q)
	if readsPublications(toks) {
		return noPublications, false
	}
	w := compatWriter{req: q, toks: toks, quoteAt: quoteAt, settings: settings, functions: functions, binary: binary, jsonOps: jsonOps,
		session: session, infoSchema: infoSchema, trino: q.Protocol == query.ProtocolTrino, divides: division, values: values,
		postgres: q.Protocol == query.ProtocolPostgres, offsets: offsets, qualify: q.Sequences.EmptySearchPath(), rows: rows, zones: zones}
	if (division || subscript || zones) && w.trino { // each writes a call before a term (insertAt)
		w.starts = make([]int, len(toks))
		for i := range w.starts {
			w.starts[i] = -1
		}
	}
	w.run()
	return w.out.String(), w.setval
}

// run writes the rewritten statement to w.out.
func (w *compatWriter) run() {
	for w.i < len(w.toks) {
		from := w.i
		if w.starts != nil {
			w.starts[w.i] = w.out.Len()
		}
		w.step()
		// What is written after a token, once the tokens up to it are (a step may write
		// several, with a rewrite of its own).
		for j := from; j < w.i && w.after != nil; j++ {
			if ins, ok := w.after[j]; ok {
				w.emit(ins)
			}
		}
	}
}

// pgTokens are q's tokens by PostgreSQL's rules: the analysis that travels with the request
// when its client spoke PostgreSQL (catalog queries come from PostgreSQL clients).
func pgTokens(q *query.Request) []sqltok.Token {
	if a := q.Analysis(); a.Dialect == sqltok.Postgres {
		return a.Tokens
	}
	return sqltok.Tokenize(q.SQL, sqltok.Postgres)
}

// noPublications answers a query on publications: DuckDB has none (and psql's own query for
// them trips a DuckDB binder fault that invalidates the database).
const noPublications = "SELECT NULL::VARCHAR AS pubname WHERE false"

func readsPublications(toks []sqltok.Token) bool {
	for _, t := range toks {
		if t.Kind == sqltok.Word && strings.HasPrefix(strings.ToLower(t.Text), "pg_publication") {
			return true
		}
	}
	return false
}

// compatWriter copies tokens to out, rewriting as it goes.
type compatWriter struct {
	req  *query.Request // the statement's request, whose toks these are
	toks []sqltok.Token
	i    int
	out  strings.Builder
	// lastLiteral is where in out the last significant token, when a string literal, starts.
	lastLiteral int
	lastText    string
	// after holds text to write right after the token at an index.
	after map[int]string
	// regex is the search pattern's flags after a regular-expression match operator (~, !~,
	// ~*, !~*: "s", or "si" for the case-insensitive ones), else "".
	regex string
	// quoteAt: a bare at is a name, written "at" (atIdent).
	quoteAt bool
	// settings: version() and current_setting('name') answer as PostgreSQL's (pgsettings.go).
	settings bool
	// functions are the client database's functions whose calls are rewritten (pgfunctions.go).
	functions map[string]renamedFunction
	// replaced holds text to write in place of tokens, by the index of the first.
	replaced map[int]replacement
	// binary: X'0102' is a varbinary literal (Trino's), DuckDB's BLOB (DuckDB reads the text
	// x0102 there).
	binary bool
	// jsonOps: PostgreSQL's jsonb operators @>, ?, #> and #>> (jsonOperator).
	jsonOps bool
	// infoSchema: information_schema's views show the client's catalogs only (infoschema.go);
	// trino: the client speaks Trino.
	infoSchema, trino bool
	// session: a PostgreSQL client's request whose user or application_name the SQL may read
	// (pgsession.go); nil for any other.
	session *query.Request
	// qualify: the PostgreSQL client's session's search_path is empty; pg_get_expr qualifies
	// the names it prints.
	qualify bool
	// divides: a division by zero fails, an interval divides (guardDivision).
	divides bool
	// values: VALUES 1, 2 is two rows (Trino's; valuesRows).
	values bool
	// rows: a Trino client's row constructors are structs of named fields (trinorows.go),
	// but those before the token at keptRows.
	rows     bool
	keptRows int
	// zones: a Trino client's zoned timestamp literals and AT TIME ZONE (trinozones.go).
	zones bool
	// starts holds, by token index, where in out the token's step began writing (-1 for a
	// token written within another's step): a Trino client's division writes a call before its
	// dividend (guardDivision). nil for any other statement.
	starts []int
	// offsets: a timestamp literal may have a blank before its offset (pgliterals.go).
	offsets bool
	// postgres: the client speaks PostgreSQL, to which DuckDB's main schema is public
	// (pgschema.go).
	postgres bool
	// setval: a PostgreSQL client's statement calls setval (pgsetval.go).
	setval bool
}

// jsonOperator writes PostgreSQL's jsonb operator at w.i, between a column (t.col) and a
// string literal or a parameter (with a ::json or ::jsonb cast or none), as DuckDB's JSON
// functions, the form ORMs write (Django's JSONField lookups contains, has_key, and key
// paths): col @> v is qfpg_json_contains(col, v) (json_contains for a JSON column, @> for a
// list); col ? 'k' is json_exists(col, '$."k"'); col #> '{a,1}' and col #>> '{a,1}' are
// json_extract and json_extract_string of the path $."a"[1]. Other operands are left as written
// (DuckDB's error, or its own operator on lists).
func (w *compatWriter) jsonOperator() bool {
	op := w.toks[w.i].Text
	if op != "@>" && op != "?" && op != "#>" && op != "#>>" {
		return false
	}
	col := w.prevSig(w.i)
	if !w.isName(col) {
		return false
	}
	right := w.sig(w.i+1, 0)
	if right < 0 || w.toks[right].Kind != sqltok.String && w.toks[right].Kind != sqltok.Param {
		return false
	}
	end := right
	if cast := w.sig(right+1, 0); w.word(cast) == "::" {
		typ := w.sig(cast+1, 0)
		if w.word(typ) != "json" && w.word(typ) != "jsonb" {
			return false
		}
		end = typ
	}
	if w.toks[right].Kind == sqltok.Param && op != "@>" {
		return false // a key or a path as a parameter: not known here
	}
	value := w.toks[right].Text
	var text string
	switch op {
	case "@>":
		text = "qfpg_json_contains(%s, " + value + ")"
	case "?":
		key, ok := stringValue(value)
		if !ok {
			return false
		}
		text = "json_exists(%s, " + quoteString(jsonKeyPath([]string{key})) + ")"
	default:
		elems, ok := stringValue(value)
		if !ok || !strings.HasPrefix(elems, "{") || !strings.HasSuffix(elems, "}") {
			return false
		}
		fn := "json_extract"
		if op == "#>>" {
			fn = "json_extract_string"
		}
		text = fn + "(%s, " + quoteString(jsonKeyPath(strings.Split(elems[1:len(elems)-1], ","))) + ")"
	}
	operand, ok := w.retract(w.nameStart(col))
	if !ok {
		return false
	}
	w.emit(" " + strings.Replace(text, "%s", operand, 1))
	w.i = end + 1
	return true
}

// stringValue is the value of a standard string literal, its doubled quotes single.
func stringValue(lit string) (string, bool) {
	if len(lit) < 2 || lit[0] != '\'' || lit[len(lit)-1] != '\'' {
		return "", false
	}
	return strings.ReplaceAll(lit[1:len(lit)-1], "''", "'"), true
}

// quoteString writes v as a standard string literal.
func quoteString(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// jsonKeyPath is the JSONPath of PostgreSQL's path elements: keys quoted, array indexes as
// [n].
func jsonKeyPath(elems []string) string {
	path := "$"
	for _, e := range elems {
		e = strings.TrimSpace(e)
		if _, err := strconv.Atoi(e); err == nil {
			path += "[" + e + "]"
			continue
		}
		path += `."` + strings.ReplaceAll(strings.Trim(e, `"`), `"`, `\"`) + `"`
	}
	return path
}

// hasBinaryLiteral reports cheaply whether sqlText may hold an X'...' literal.
func hasBinaryLiteral(sqlText string) bool {
	for i := 1; i < len(sqlText); i++ {
		if sqlText[i] == '\'' && sqlText[i-1]|0x20 == 'x' && (i == 1 || !sqltok.IsNameByte(sqlText[i-2])) {
			return true
		}
	}
	return false
}

// binaryLiteral is the bytes of Trino's X'...' literal (the token's text), whose hex digits
// may be split by blanks; ok is false for anything else.
func binaryLiteral(t sqltok.Token) (string, bool) {
	if t.Kind != sqltok.String || t.Unterminated || len(t.Text) < 3 || t.Text[0]|0x20 != 'x' || t.Text[1] != '\'' {
		return "", false
	}
	digits := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, t.Text[2:len(t.Text)-1])
	b, err := hex.DecodeString(digits)
	return string(b), err == nil
}

// sig returns the index of the n'th significant token from i on (n=0: the first), or -1.
func (w *compatWriter) sig(i, n int) int {
	for ; i < len(w.toks); i++ {
		if w.toks[i].Significant() {
			if n == 0 {
				return i
			}
			n--
		}
	}
	return -1
}

func (w *compatWriter) word(i int) string {
	if i < 0 {
		return ""
	}
	t := w.toks[i]
	if t.Kind == sqltok.Word {
		return strings.ToLower(t.Text)
	}
	return t.Text
}

// qualified reads an optional "pg_catalog ." before the token at i: it returns the index of
// the name itself.
func (w *compatWriter) qualified(i int) int {
	if w.word(i) == "pg_catalog" && w.word(w.sig(i+1, 0)) == "." {
		return w.sig(i+1, 1)
	}
	return i
}

func (w *compatWriter) step() {
	t := w.toks[w.i]
	if !t.Significant() {
		w.out.WriteString(t.Text)
		w.i++
		return
	}
	if w.quoteAt && atIdent(w.toks, w.i) {
		w.emit(`"` + t.Text + `"`)
		w.i++
		return
	}
	if w.writeReplaced() || w.renameCall() || w.sessionUser() || w.session != nil && w.scalarFromItem() || w.currentSchema() ||
		w.publicSchema() {
		return
	}
	if w.jsonOps && t.Kind == sqltok.Operator && w.jsonOperator() {
		return
	}
	if w.trino && t.Kind == sqltok.Word && (w.zones && w.trinoZoned() || w.timePrecisionType() || w.trinoTimestamp() || w.trinoInterval() || w.trinoDecimal() || w.rows && w.trinoRow()) {
		return
	}
	if w.trino && w.trinoSubscript() {
		return
	}
	if w.trino && t.Kind == sqltok.Number && w.trinoFractionLiteral() {
		return
	}
	if w.binary {
		if v, ok := binaryLiteral(t); ok {
			w.emit(blobLiteral(v))
			w.i++
			return
		}
	}
	key := w.word(w.i)
	if name := strings.Trim(key, `"`); t.Kind == sqltok.QuotedIdent && (extendedRelations[name] || name == "information_schema") {
		key = name // "pg_views", "information_schema"."tables" (TypeORM quotes every name): the same to PostgreSQL
	}
	// Unqualified, in FROM (SQLAlchemy's reflection): PostgreSQL finds pg_catalog's first.
	if extendedRelations[key] && w.fromItemAt(w.i) {
		if next := w.word(w.sig(w.i+1, 0)); next != "." && next != "(" {
			w.relation(w.i)
			return
		}
	}
	switch key {
	case "operator": // OPERATOR(pg_catalog.~) -> ~
		open := w.sig(w.i+1, 0)
		if w.word(open) == "(" {
			op := w.qualified(w.sig(open+1, 0))
			if op >= 0 && w.toks[op].Kind == sqltok.Operator && w.word(w.sig(op+1, 0)) == ")" {
				w.emit(" " + w.toks[op].Text + " ")
				w.regex = regexOps[w.toks[op].Text].flags
				w.i = w.sig(op+1, 0) + 1
				return
			}
		}
	case "collate": // COLLATE pg_catalog.default / "default": the only collation there is
		name := w.qualified(w.sig(w.i+1, 0))
		if n := strings.Trim(w.word(name), `"`); n == "default" || n == "c" || n == "posix" {
			w.i = name + 1
			return
		}
	case "pg_catalog":
		dot := w.sig(w.i+1, 0)
		name := w.sig(dot+1, 0)
		if w.word(dot) != "." || name < 0 {
			break
		}
		if w.word(w.prevSig(w.i)) == "as" && w.toks[name].Kind == sqltok.Word {
			// CAST(x AS pg_catalog.text) (psql's \da): a type, which DuckDB takes unqualified
			w.emit(cmp.Or(castTypes[w.word(name)], w.word(name)))
			w.i = name + 1
			return
		}
		if w.word(name) == "pg_partition_ancestors" && w.fromItemAt(w.i) {
			w.emit(compatPrefix + "qf_partition_ancestors") // the set of them, in FROM (psql's trigger query)
			w.i = name + 1
			return
		}
		if w.toks[name].Kind == sqltok.Word && compatNames[w.word(name)] {
			w.emit(compatPrefix + w.word(name))
			w.i = name + 1
			return
		}
		if extendedRelations[w.word(name)] { // pg_catalog.pg_class: the extended view (compatSQL)
			w.relation(name)
			return
		}
		if w.word(w.sig(name+1, 0)) == "(" && w.toks[name].Kind == sqltok.Word {
			// pg_catalog.f(...): DuckDB keeps most of PostgreSQL's functions (array_to_string,
			// generate_series, ...) in its main schema; unqualified, the search path finds them
			// there, and pg_catalog's own after.
			w.i = name
			return
		}
	case "as":
		w.selectedAsText()
	case "any":
		if w.listAny() {
			return
		}
	case "values":
		if w.values {
			w.valuesRows()
		}
	case "information_schema": // information_schema._pg_expandarray: the compatibility macro
		if w.infoSchemaView() {
			return
		}
		dot := w.sig(w.i+1, 0)
		if name := w.sig(dot+1, 0); w.word(dot) == "." && w.word(name) == "_pg_expandarray" {
			w.emit(compatPrefix + "qf_pg_expandarray")
			w.i = name + 1
			return
		}
	case "version":
		if close := w.sig(w.i+2, 0); w.settings && w.word(w.sig(w.i+1, 0)) == "(" && w.word(close) == ")" {
			w.emit(pgSettingsPrefix + "version()")
			w.i = close + 1
			return
		}
	case "current_setting": // current_setting('name' [, missing_ok])
		open := w.sig(w.i+1, 0)
		name := w.sig(open+1, 0)
		end := w.sig(name+1, 0)
		if w.word(end) == "," {
			end = w.sig(w.sig(end+1, 0)+1, 0)
		}
		if w.word(open) == "(" && name >= 0 && w.toks[name].Kind == sqltok.String && w.word(end) == ")" && w.applicationName(name, end) {
			return
		}
		if w.settings && w.word(open) == "(" && name >= 0 && w.toks[name].Kind == sqltok.String && w.word(end) == ")" {
			if v, ok := sessionSetting(w.req, plainString(w.toks[name].Text)); ok {
				w.emit(sessionPrefix + "current_setting(" + w.toks[name].Text + ", " + quoteString(v) + ")")
				w.i = end + 1
				return
			}
			if _, ok := pgSettings[strings.ToLower(plainString(w.toks[name].Text))]; ok {
				w.emit(pgSettingsPrefix + "current_setting(" + w.toks[name].Text + ")")
				w.i = end + 1
				return
			}
		}
		if w.settings && w.word(open) == "(" && name >= 0 && w.toks[name].Kind != sqltok.String {
			// current_setting(s.name) (psql's \dconfig over pg_settings): DuckDB's takes only a
			// constant; the compatibility one answers any of pg_settings' names.
			w.emit(pgSettingsPrefix + "current_setting")
			w.i++
			return
		}
	case "generate_series", "unnest":
		if w.fromItemAt(w.nameStart(w.i)) {
			if w.postgres && w.word(w.i) == "unnest" && w.zippedUnnest() { // pgunnest.go
				return
			}
			w.aliasColumn() // a FROM item (not a select list's unnest(x) AS y)
		}
	case "indkey", "indoption", "indclass", "indcollation": // vectorColumns
		if w.postgres && w.selectedVector() {
			return
		}
	case "tableoid": // pgtableoid.go
		if w.postgres && w.tableoid() {
			return
		}
	case "setval":
		w.setval = w.setval || w.postgres && w.word(w.sig(w.i+1, 0)) == "("
	case "cardinality": // an array's element count; DuckDB's cardinality takes only a map
		if w.word(w.sig(w.i+1, 0)) == "(" {
			w.emit("len")
			w.i++
			return
		}
	case "pg_get_expr", "format_type": // DuckDB's take no third argument, and its own type oids
		if w.word(w.sig(w.i+1, 0)) == "(" {
			if w.emit("qf_" + w.word(w.i)); w.qualify && w.word(w.i) == "pg_get_expr" {
				w.emit("__qualified") // the session's search_path is empty (pgsetconfig.go)
			}
			w.i++
			return
		}
	case "::":
		typ := w.qualified(w.sig(w.i+1, 0))
		if typ < 0 {
			break
		}
		name := w.word(typ)
		if unquoted := strings.Trim(name, `"`); w.toks[typ].Kind == sqltok.QuotedIdent && (regTypes[unquoted] || castTypes[unquoted] != "") {
			name = unquoted // ::"regtype" (TypeORM quotes every name): the same type to PostgreSQL
		}
		if regTypes[name] {
			w.castReg(name)
			w.i = typ + 1
			return
		}
		if name == "bytea" && w.lastLiteral >= 0 {
			if hex, ok := byteaHex(w.lastText); ok { // '\x0100ff'::bytea: DuckDB reads \x01 then "00ff"
				w.replaceLiteral("unhex('" + hex + "')")
				w.i = typ + 1
				return
			}
		}
		if (name == "varchar" || name == "text") && w.vectorText() {
			w.i = typ + 1
			return
		}
		if w.lastLiteral >= 0 && w.castsToArray(typ) && strings.HasPrefix(w.lastText, "'") {
			// '{1,2}'::int[]: PostgreSQL's array text, as DuckDB's list text (pgarray.go)
			if list, err := pgArrayToList(plainString(w.lastText)); err == nil {
				w.replaceLiteral("'" + strings.ReplaceAll(list, "'", "''") + "'")
			}
		}
		if to, ok := castTypes[name]; ok {
			w.emit("::" + to)
			w.i = typ + 1
			return
		}
		w.emit("::" + w.toks[typ].Text)
		w.i = typ + 1
		return
	}
	if w.divides && w.guardDivision(t) {
		return
	}
	regex := w.regex
	op, isRegexOp := regexOps[t.Text]
	isRegexOp = isRegexOp && t.Kind == sqltok.Operator
	switch {
	case regex != "" && t.Kind == sqltok.String && strings.HasPrefix(t.Text, "'") && !t.Unterminated:
		w.emit(searchPattern(t.Text, regex))
	case regex != "" && t.Kind == sqltok.Param:
		w.emit("('(?" + regex + ").*(?:' || " + t.Text + " || ').*')")
	case isRegexOp:
		w.emit(op.duck)
	case w.similar(t):
		return
	case t.Kind == sqltok.String && w.literal(t):
	default:
		w.emit(t.Text)
	}
	w.regex = ""
	if isRegexOp {
		w.regex = op.flags
	}
	if t.Kind == sqltok.String {
		w.lastLiteral = w.out.Len() - len(t.Text)
		w.lastText = t.Text
	} else {
		w.lastLiteral = -1
	}
	w.i++
}

// relation writes the catalog relation named at i (pg_class) as its extended view.
func (w *compatWriter) relation(name int) {
	rel := strings.Trim(w.word(name), `"`)
	switch next := w.sig(name+1, 0); {
	case w.word(next) == ".": // pg_catalog.pg_type.oid: a column of the relation named below
		w.emit(rel)
	case next >= 0 && (w.toks[next].Kind == sqltok.QuotedIdent || w.toks[next].Kind == sqltok.Word && !relationEnds[w.word(next)]):
		w.emit(compatPrefix + "qf_" + rel) // an alias follows
	default:
		// Named as itself, so that pg_type.oid (pgjdbc's type query, getTypeInfo) still
		// finds it.
		w.emit(compatPrefix + "qf_" + rel + " AS " + rel)
	}
	w.i = name + 1
}

// vectorColumns are pg_index's int2vector and oidvector columns, lists here.
var vectorColumns = map[string]bool{"indkey": true, "indoption": true, "indclass": true, "indcollation": true}

// vectorText rewrites the column just written, when one of vectorColumns ([q.]indkey, about
// to be cast to text), as PostgreSQL's text of the vector: its numbers between blanks ("2 3",
// which SQLAlchemy splits), where DuckDB writes a list's ("[2, 3]").
func (w *compatWriter) vectorText() bool {
	col := w.prevSig(w.i)
	if col < 0 || !vectorColumns[w.word(col)] {
		return false
	}
	operand, ok := w.retract(w.nameStart(col))
	if ok {
		w.emit("array_to_string(" + operand + ", ' ')")
	}
	return ok
}

// nameColumns are the catalog's columns of PostgreSQL's type name.
var nameColumns = map[string]bool{"attname": true, "relname": true, "nspname": true, "typname": true, "conname": true,
	"proname": true, "datname": true, "rolname": true, "amname": true, "collname": true}

// selectedAsText rewrites the outer select-list's item just written, w.i at its AS, as PostgreSQL's text
// of its value where PostgreSQL's type is one clients leave as text and DuckDB's a list they
// parse: a vector column (ix.indkey AS k, int2vector: "1 2") and array_agg of a name column
// (array_agg(a.attname) AS n, name[]: "{id,title}"). Sequelize's index listing (showIndex)
// splits both texts.
func (w *compatWriter) selectedAsText() {
	if w.depth(w.i) > 0 {
		return // a subquery's column, which its query reads as a list (JDBC's getIndexInfo: indoption[n])
	}
	end := w.prevSig(w.i)
	if w.isName(end) && vectorColumns[w.word(end)] {
		if start := w.nameStart(end); startsSelectItem(w.word(w.prevSig(start))) {
			if operand, ok := w.retract(start); ok {
				w.emit("array_to_string(" + operand + ", ' ') ")
			}
		}
		return
	}
	col := w.prevSig(end)
	open := w.prevSig(w.nameStart(col))
	call := w.prevSig(open)
	if w.word(end) != ")" || !w.isName(col) || !nameColumns[w.word(col)] || w.word(open) != "(" ||
		w.word(call) != "array_agg" || !startsSelectItem(w.word(w.prevSig(call))) {
		return
	}
	if operand, ok := w.retract(call); ok {
		w.emit(compatPrefix + "qf_pg_array_text(" + operand + ") ")
	}
}

// depth is how many parentheses are open at token i.
func (w *compatWriter) depth(i int) int {
	n := 0
	for _, t := range w.toks[:i] {
		switch t.Text {
		case "(":
			n++
		case ")":
			n--
		}
	}
	return n
}

// startsSelectItem reports whether the token before an expression, prev, starts a select-list
// item there.
func startsSelectItem(prev string) bool { return prev == "select" || prev == "," || prev == "distinct" }

// listAny rewrites x = ANY(list), x and list names ([q.]attnum = ANY([q.]indkey), a join's
// condition in SQLAlchemy's index reflection), as list_contains(list, x): DuckDB plans its ANY
// as a subquery, which an outer join's condition may not hold. w.i is at ANY.
func (w *compatWriter) listAny() bool {
	eq, open := w.prevSig(w.i), w.sig(w.i+1, 0)
	if w.word(eq) != "=" || w.word(open) != "(" {
		return false
	}
	last := w.sig(open+1, 0)
	if w.word(w.sig(last+1, 0)) == "." {
		last = w.sig(last+1, 1)
	}
	end := w.sig(last+1, 0)
	left := w.prevSig(eq)
	if last < 0 || w.word(end) != ")" || !w.isName(last) || !w.isName(left) {
		return false
	}
	var list strings.Builder
	for _, t := range w.toks[open+1 : end] {
		list.WriteString(t.Text)
	}
	x, ok := w.retract(w.nameStart(left))
	if !ok {
		return false
	}
	w.emit("list_contains(" + strings.TrimSpace(list.String()) + ", " + strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(x), "=")) + ")")
	w.i = end + 1
	return true
}

func (w *compatWriter) isName(i int) bool {
	return i >= 0 && (w.toks[i].Kind == sqltok.Word || w.toks[i].Kind == sqltok.QuotedIdent)
}

// nameStart is where the name ending at i starts: at its qualifier (q.col), if it has one.
func (w *compatWriter) nameStart(i int) int {
	if dot := w.prevSig(i); w.word(dot) == "." && w.isName(w.prevSig(dot)) {
		return w.prevSig(dot)
	}
	return i
}

// retract takes back what was written of the tokens from the one at from up to w.i, and
// returns it, trimmed; ok is false (nothing taken) when out does not end with them as they
// were (a rewrite changed them).
func (w *compatWriter) retract(from int) (string, bool) {
	var text strings.Builder
	for _, t := range w.toks[from:w.i] {
		text.WriteString(t.Text)
	}
	out := w.out.String()
	if !strings.HasSuffix(out, text.String()) {
		return "", false
	}
	w.out.Reset()
	w.out.WriteString(out[:len(out)-text.Len()])
	return strings.TrimSpace(text.String()), true
}

// prevSig returns the index of the last significant token before i, or -1.
func (w *compatWriter) prevSig(i int) int {
	for i--; i >= 0; i-- {
		if w.toks[i].Significant() {
			return i
		}
	}
	return -1
}

// castsToArray reports whether the type named from the token at typ on is an array type: its
// words and (precision) end in [].
func (w *compatWriter) castsToArray(typ int) bool {
	for j := w.sig(typ+1, 0); j >= 0; j = w.sig(j+1, 0) {
		switch {
		case w.word(j) == "[":
			return true
		case w.word(j) == "(":
			for j >= 0 && w.word(j) != ")" {
				j = w.sig(j+1, 0)
			}
			if j < 0 {
				return false
			}
		case w.toks[j].Kind != sqltok.Word || notAlias[w.word(j)] || w.word(j) == "as" || w.word(j) == "from":
			return false
		}
	}
	return false
}

// aliasColumn gives "FROM f(...) s" PostgreSQL's meaning for a function returning single
// values: s names the column too (in DuckDB s alone would be the row).
func (w *compatWriter) aliasColumn() {
	open := w.sig(w.i+1, 0)
	if w.word(open) != "(" {
		return
	}
	depth, end := 0, -1
	for j := open; j < len(w.toks) && end < 0; j++ {
		switch w.word(j) {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				end = j
			}
		}
	}
	alias := w.sig(end+1, 0)
	if end < 0 || alias < 0 {
		return
	}
	if w.word(alias) == "as" {
		alias = w.sig(alias+1, 0)
	}
	if alias < 0 || w.toks[alias].Kind != sqltok.Word || notAlias[w.word(alias)] || w.word(w.sig(alias+1, 0)) == "(" {
		return
	}
	if w.after == nil {
		w.after = map[int]string{}
	}
	w.after[alias] = "(" + w.toks[alias].Text + ")"
}

// regexOps are PostgreSQL's regular-expression match operators: they search, where DuckDB's
// ~ and !~ match the whole string (and DuckDB has no ~* or !~*). Each is written as DuckDB's
// operator duck, its pattern (a literal or a parameter) as one that matches anywhere, with
// flags: s, as PostgreSQL's . matches a newline; i for the case-insensitive ones.
var regexOps = map[string]regexOp{"~": {"~", "s"}, "!~": {"!~", "s"}, "~*": {"~", "si"}, "!~*": {"!~", "si"}}

type regexOp struct{ duck, flags string }

// searchPattern turns a PostgreSQL pattern literal into one DuckDB's whole-string match finds
// anywhere, as PostgreSQL does.
func searchPattern(lit, flags string) string {
	return "'(?" + flags + ").*(?:" + lit[1:len(lit)-1] + ").*'"
}

// mayMatchRegex reports cheaply whether a PostgreSQL client's sqlText may use a regular
// expression match operator or SIMILAR TO.
func mayMatchRegex(sqlText string) bool {
	return strings.IndexByte(sqlText, '~') >= 0 || containsFold(sqlText, "similar")
}

// notAlias are the words that may follow a FROM item without being its alias.
var notAlias = map[string]bool{"where": true, "join": true, "left": true, "right": true, "inner": true, "full": true,
	"cross": true, "natural": true, "on": true, "using": true, "order": true, "group": true, "having": true, "limit": true,
	"offset": true, "union": true, "intersect": true, "except": true, "window": true, "with": true, "lateral": true,
	"returning": true, "fetch": true, "for": true}

func (w *compatWriter) emit(s string) {
	w.out.WriteString(s)
	w.lastLiteral = -1
}

// castReg rewrites a cast to a reg* type: 'name'::regclass (or regtype) becomes the oid of
// that relation (type); a column cast to regclass (conrelid::regclass, which psql's \d prints
// as the table's name) is the relation's name; any other operand is already an oid and stays
// one.
func (w *compatWriter) castReg(name string) {
	if w.lastLiteral < 0 && w.castRegText(name) {
		return
	}
	if name == "regclass" && w.lastLiteral < 0 {
		if col := w.prevSig(w.i); w.isName(col) && w.word(w.prevSig(w.nameStart(col))) != "::" {
			if operand, ok := w.retract(w.nameStart(col)); ok {
				w.emit(compatPrefix + "qf_relname(" + operand + ")")
			}
		}
		return
	}
	if w.lastLiteral >= 0 && (name == "regproc" || name == "regprocedure") && w.literalStartsSelectItem() {
		if look, ok := regprocLookup(w.lastText); ok { // psql's \sf (pgfunctiondef.go)
			w.replaceLiteral(look)
		}
		return
	}
	if w.lastLiteral < 0 || (name != "regclass" && name != "regtype") {
		return
	}
	lit := w.lastText
	if !strings.HasPrefix(lit, "'") || len(lit) < 2 {
		return
	}
	s := strings.ReplaceAll(lit[1:len(lit)-1], "''", "'")
	if _, err := strconv.ParseUint(s, 10, 63); err == nil {
		w.replaceLiteral(s) // an oid written as a string
		return
	}
	if oid, ok := catalogRegclass(s); ok && name == "regclass" && !w.selectedAlone() {
		w.replaceLiteral(strconv.Itoa(oid)) // pg_dump's d.classid = 'pg_class'::regclass (pgdepend.go)
		return
	}
	if dot := strings.LastIndexByte(s, '.'); dot >= 0 {
		s = s[dot+1:]
	}
	s = strings.ReplaceAll(strings.Trim(s, `"`), "'", "''")
	// Aliased as the type, which names the column as PostgreSQL names a cast's.
	look := "(SELECT any_value(oid) AS regclass FROM pg_catalog.pg_class WHERE relname = '" + s + "')"
	if name == "regclass" && w.selectedAlone() {
		// SELECT 't'::regclass: PostgreSQL prints the relation's name (and fails for none).
		look = "(SELECT CASE WHEN count(*) = 0 THEN error('" + raisedPrefix + sqlstate.UndefinedTable + " relation \"" +
			strings.ReplaceAll(s, "''", "'") + "\" does not exist') ELSE any_value(relname) END AS regclass FROM pg_catalog.pg_class WHERE relname = '" + s + "')"
	}
	if name == "regtype" {
		look = "(SELECT any_value(oid) AS regtype FROM pg_catalog.pg_type WHERE typname = '" + s + "')"
	}
	w.replaceLiteral(look)
}

// byteaHex returns the digits of a bytea literal in PostgreSQL's hex format ('\x0100ff').
func byteaHex(lit string) (string, bool) {
	hex, ok := strings.CutPrefix(lit, `'\x`)
	if !ok || !strings.HasSuffix(hex, "'") {
		return "", false
	}
	hex = hex[:len(hex)-1]
	for _, r := range hex {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return "", false
		}
	}
	return hex, len(hex)%2 == 0
}

// replaceLiteral replaces the string literal just written with s.
func (w *compatWriter) replaceLiteral(s string) {
	str := w.out.String()[:w.lastLiteral]
	w.out.Reset()
	w.out.WriteString(str)
	w.emit(s)
}

// isFromItem reports whether what follows the word prev is a FROM item (not, for the "," of a
// select list, always: a catalog relation or a set-returning function named there is taken as
// one).
// inFromList reports whether the token at i follows a FROM rather than a SELECT at its own
// depth of parentheses: a comma before it separates FROM items, not select-list items (pg_dump's
// SELECT rolname, unnest(setconfig) FROM ...; SELECT 1, current_schema() FROM t), and a
// subquery's FROM before it is not its statement's.
func (w *compatWriter) inFromList(i int) bool {
	depth := 0
	for j := w.prevSig(i); j >= 0; j = w.prevSig(j) {
		switch w.word(j) {
		case ")":
			depth++
		case "(":
			if depth--; depth < 0 {
				return false
			}
		case "from":
			if depth == 0 {
				return true
			}
		case "select":
			if depth == 0 {
				return false
			}
		}
	}
	return false
}

// fromItemAt reports whether the token at i starts a FROM item: after FROM, JOIN, LATERAL, or
// a comma of a FROM list.
func (w *compatWriter) fromItemAt(i int) bool {
	prev := w.word(w.prevSig(i))
	return isFromItem(prev) && (prev != "," || w.inFromList(i))
}

func isFromItem(prev string) bool {
	return prev == "from" || prev == "join" || prev == "," || prev == "lateral"
}
