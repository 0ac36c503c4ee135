package duckengine

// psqlCatalogSQL holds the catalogs psql's \ddp and \dRs read, empty as on a fresh
// PostgreSQL database (DuckDB has no default privileges or subscriptions), with the columns
// PostgreSQL 15 gives them, and the functions \dX calls over the (empty) pg_statistic_ext.
// Also empty: the operator classes and families (\dAc, \dAf, \dAo, \dAp), text search
// parsers, dictionaries and templates (\dFp, \dFd, \dFt), large objects (\dl), and what
// pg_dump reads besides (transforms, initial privileges, security labels): DuckDB has none.
var psqlCatalogSQL = []string{
	`CREATE VIEW {c}.main.pg_default_acl AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS defaclrole,
		NULL::BIGINT AS defaclnamespace, NULL::VARCHAR AS defaclobjtype, NULL::VARCHAR[] AS defaclacl WHERE false`,
	`CREATE VIEW {c}.main.pg_subscription AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS subdbid, NULL::VARCHAR AS subskiplsn,
		NULL::VARCHAR AS subname, NULL::BIGINT AS subowner, NULL::BOOLEAN AS subenabled, NULL::BOOLEAN AS subbinary,
		NULL::BOOLEAN AS substream, NULL::VARCHAR AS subtwophasestate, NULL::BOOLEAN AS subdisableonerr,
		NULL::VARCHAR AS subconninfo, NULL::VARCHAR AS subslotname, NULL::VARCHAR AS subsynccommit,
		NULL::VARCHAR[] AS subpublications WHERE false`,
	`CREATE VIEW {c}.main.pg_opclass AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS opcmethod, NULL::VARCHAR AS opcname,
		NULL::BIGINT AS opcnamespace, NULL::BIGINT AS opcowner, NULL::BIGINT AS opcfamily, NULL::BIGINT AS opcintype,
		NULL::BOOLEAN AS opcdefault, NULL::BIGINT AS opckeytype WHERE false`,
	`CREATE VIEW {c}.main.pg_opfamily AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS opfmethod, NULL::VARCHAR AS opfname,
		NULL::BIGINT AS opfnamespace, NULL::BIGINT AS opfowner WHERE false`,
	`CREATE VIEW {c}.main.pg_amop AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS amopfamily, NULL::BIGINT AS amoplefttype,
		NULL::BIGINT AS amoprighttype, NULL::SMALLINT AS amopstrategy, NULL::VARCHAR AS amoppurpose, NULL::BIGINT AS amopopr,
		NULL::BIGINT AS amopmethod, NULL::BIGINT AS amopsortfamily WHERE false`,
	`CREATE VIEW {c}.main.pg_amproc AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS amprocfamily, NULL::BIGINT AS amproclefttype,
		NULL::BIGINT AS amprocrighttype, NULL::SMALLINT AS amprocnum, NULL::BIGINT AS amproc WHERE false`,
	`CREATE VIEW {c}.main.pg_ts_parser AS SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS prsname, NULL::BIGINT AS prsnamespace,
		NULL::BIGINT AS prsstart, NULL::BIGINT AS prstoken, NULL::BIGINT AS prsend, NULL::BIGINT AS prsheadline,
		NULL::BIGINT AS prslextype WHERE false`,
	`CREATE VIEW {c}.main.pg_ts_dict AS SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS dictname, NULL::BIGINT AS dictnamespace,
		NULL::BIGINT AS dictowner, NULL::BIGINT AS dicttemplate, NULL::VARCHAR AS dictinitoption WHERE false`,
	`CREATE VIEW {c}.main.pg_ts_template AS SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS tmplname, NULL::BIGINT AS tmplnamespace,
		NULL::BIGINT AS tmplinit, NULL::BIGINT AS tmpllexize WHERE false`,
	`CREATE VIEW {c}.main.pg_largeobject_metadata AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS lomowner, NULL::VARCHAR[] AS lomacl WHERE false`,
	`CREATE VIEW {c}.main.pg_transform AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS trftype, NULL::BIGINT AS trflang,
		NULL::BIGINT AS trffromsql, NULL::BIGINT AS trftosql WHERE false`,
	`CREATE VIEW {c}.main.pg_init_privs AS SELECT NULL::BIGINT AS objoid, NULL::BIGINT AS classoid, NULL::INTEGER AS objsubid,
		NULL::VARCHAR AS privtype, NULL::VARCHAR[] AS initprivs WHERE false`,
	`CREATE VIEW {c}.main.pg_seclabels AS SELECT NULL::BIGINT AS objoid, NULL::BIGINT AS classoid, NULL::INTEGER AS objsubid,
		NULL::VARCHAR AS objtype, NULL::BIGINT AS objnamespace, NULL::VARCHAR AS objname, NULL::VARCHAR AS provider,
		NULL::VARCHAR AS label WHERE false`,
	`CREATE MACRO {c}.main.pg_opclass_is_visible(id) AS true`,
	`CREATE MACRO {c}.main.pg_opfamily_is_visible(id) AS true`,
	`CREATE MACRO {c}.main.pg_ts_parser_is_visible(id) AS true`,
	`CREATE MACRO {c}.main.pg_ts_dict_is_visible(id) AS true`,
	`CREATE MACRO {c}.main.pg_ts_template_is_visible(id) AS true`,
	// \dO: the database's one encoding, UTF8 (PostgreSQL's number 6)
	`CREATE MACRO {c}.main.getdatabaseencoding() AS 'UTF8'`,
	// pg_dump: an object's default privileges (none here: DuckDB has no roles, so no GRANT is
	// dumped), and a relation's options (none).
	`CREATE MACRO {c}.main.acldefault(kind, owner) AS NULL::VARCHAR[]`,
	`CREATE MACRO {c}.main.array_remove(l, x) AS list_filter(l, e -> e IS DISTINCT FROM x)`,
	// COMMENT ON a table, view, sequence or column, as PostgreSQL keeps it: by pg_class's oid
	// (1259) and the column's number, comments only (DuckDB's lists every table, an empty
	// comment too, under another class and no column), so that pg_dump dumps them.
	// The public schema has PostgreSQL's comment (pg_namespace's 2615): pg_dump writes COMMENT ON
	// SCHEMA public IS '' for a public schema without one.
	`CREATE VIEW {c}.main.pg_description AS SELECT objoid, classoid::BIGINT AS classoid, objsubid, description FROM (
		SELECT table_oid AS objoid, 1259 AS classoid, 0 AS objsubid, comment AS description FROM duckdb_tables() WHERE database_name = current_database()
		UNION ALL SELECT view_oid, 1259, 0, comment FROM duckdb_views() WHERE database_name = current_database() AND NOT internal
		UNION ALL SELECT sequence_oid, 1259, 0, comment FROM duckdb_sequences() WHERE database_name = current_database()
		UNION ALL SELECT table_oid, 1259, column_index, comment FROM duckdb_columns() WHERE database_name = current_database()
		UNION ALL SELECT oid, 2615, 0, 'standard public schema' FROM duckdb_schemas() WHERE database_name = current_database() AND schema_name = 'main')
		WHERE description IS NOT NULL AND description <> ''`,
	`CREATE MACRO {c}.main.obj_description(qf_id) AS (SELECT any_value(description) FROM {c}.main.pg_description
			WHERE objoid = qf_id AND objsubid = 0),
		(qf_id, qf_catalog) AS (SELECT any_value(description) FROM {c}.main.pg_description WHERE objoid = qf_id AND objsubid = 0)`,
	`CREATE MACRO {c}.main.col_description(qf_id, qf_n) AS (SELECT any_value(description) FROM {c}.main.pg_description
		WHERE objoid = qf_id AND objsubid = qf_n)`,
	`CREATE MACRO {c}.main.pg_options_to_table(options) AS TABLE SELECT NULL::VARCHAR AS option_name,
		NULL::VARCHAR AS option_value WHERE false`,
	`CREATE MACRO {c}.main.pg_char_to_encoding(name) AS CASE WHEN upper(replace(name, '-', '')) IN ('UTF8', 'UNICODE') THEN 6 ELSE -1 END`,
	`CREATE MACRO {c}.main.pg_statistics_obj_is_visible(id) AS true`,
	`CREATE MACRO {c}.main.pg_get_statisticsobjdef(id) AS NULL::VARCHAR`,
	// \df+ (psql 14 and later) reads a SQL-standard function body first: none here.
	`CREATE MACRO {c}.main.pg_get_function_sqlbody(id) AS NULL::VARCHAR`,
}
