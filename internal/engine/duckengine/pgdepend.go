package duckengine

// What pg_dump orders a dump by, and what it writes of a serial column, as PostgreSQL keeps it:
//   - pg_depend: a serial's sequence is owned by its column ('a': pg_dump writes ALTER SEQUENCE
//     ... OWNED BY, and the column's DEFAULT after the sequence), an identity column's is its
//     column's ('i': pg_dump writes ALTER TABLE ... ADD GENERATED ... AS IDENTITY, and the
//     column has no default in pg_attrdef, as PostgreSQL's has none); a default depends on the
//     sequence its nextval names ('n': an independent sequence is created before the table);
//     a view on the relations its query names (created after them). DuckDB's pg_depend lists
//     its own dependencies under class 0, which name nothing a PostgreSQL client reads.
//   - pg_attrdef: one oid per default (DuckDB's is the column's number, the same in every
//     table, and pg_dump finds a default by it).
//   - pg_sequence: a serial's sequence has the type of its column (serial integer, smallserial
//     smallint), as PostgreSQL's; any other is bigint.
//
// A sequence is a column's own when the column's default takes its values and it is named as
// PostgreSQL names a serial's (<table>_<column>_seq); one a default merely names is not
// (PostgreSQL's is owned only by a serial or ALTER SEQUENCE ... OWNED BY, which DuckDB lacks).
var pgDependSQL = []string{
	`CREATE MACRO {c}.main.qf_attrdef_oid(table_oid, column_index) AS table_oid * 65536 + column_index`,
	`CREATE VIEW {c}.main.qf_column_sequences AS SELECT c.table_oid, c.column_index, c.data_type, s.sequence_oid,
			lower(s.sequence_name) = lower(c.table_name || '_' || c.column_name || '_seq') OR c.pg_identity IS NOT NULL AS owned,
			c.pg_identity AS identity
		FROM (SELECT *, string_split(regexp_extract(column_default, '^nextval\(''([^'']*)''', 1), '.') AS qf_seq
			FROM {c}.main.qf_pg_columns WHERE database_name = current_database() AND column_default LIKE 'nextval(%') c
		JOIN duckdb_sequences() s ON s.database_name = c.database_name
			AND s.schema_name = CASE WHEN len(c.qf_seq) = 1 THEN c.schema_name
				WHEN trim(c.qf_seq[-2], '"') = 'public' THEN 'main' ELSE trim(c.qf_seq[-2], '"') END
			AND lower(s.sequence_name) = lower(trim(c.qf_seq[-1], '"'))`,
	`CREATE VIEW {c}.main.pg_attrdef AS SELECT {c}.main.qf_attrdef_oid(table_oid, column_index)::BIGINT AS oid,
		table_oid AS adrelid, column_index::INTEGER AS adnum, column_default AS adbin
		FROM {c}.main.qf_pg_columns WHERE database_name = current_database() AND column_default IS NOT NULL AND pg_identity IS NULL`,
	`CREATE VIEW {c}.main.pg_depend AS
		SELECT 1259::BIGINT AS classid, sequence_oid AS objid, 0 AS objsubid, 1259::BIGINT AS refclassid,
			table_oid AS refobjid, column_index::INTEGER AS refobjsubid, CASE WHEN identity IS NULL THEN 'a' ELSE 'i' END AS deptype
		FROM {c}.main.qf_column_sequences WHERE owned
		UNION ALL SELECT 2604, {c}.main.qf_attrdef_oid(table_oid, column_index), 0, 1259, sequence_oid, 0, 'n'
		FROM {c}.main.qf_column_sequences WHERE identity IS NULL
		UNION ALL SELECT 1259, v.view_oid, 0, 1259, r.oid, 0, 'n'
		FROM duckdb_views() v JOIN (SELECT table_oid AS oid, database_name, table_name AS name FROM duckdb_tables()
			UNION ALL SELECT view_oid, database_name, view_name FROM duckdb_views() WHERE NOT internal) r
			ON r.database_name = v.database_name AND r.oid <> v.view_oid
			AND regexp_matches(lower(regexp_replace(v.sql, '^CREATE (OR REPLACE )?(TEMP(ORARY)? )?VIEW .+? AS ', '')),
				'(^|[^a-z0-9_$])"?' || regexp_escape(lower(r.name)) || '"?($|[^a-z0-9_$])')
		WHERE v.database_name = current_database() AND NOT v.internal`,
	// DuckDB's pg_sequence says type 0, and a cache of 0 PostgreSQL never has.
	`CREATE VIEW {c}.main.pg_sequence AS SELECT s.* REPLACE (coalesce(t.seqtypid, 20)::BIGINT AS seqtypid,
			CASE WHEN t.seqtypid IS NOT NULL AND s.seqmax = 9223372036854775807 THEN t.seqmax ELSE s.seqmax END AS seqmax,
			greatest(s.seqcache, 1) AS seqcache)
		FROM pg_catalog.pg_sequence s LEFT JOIN (SELECT sequence_oid, any_value(CASE data_type WHEN 'INTEGER' THEN 23 WHEN 'SMALLINT' THEN 21 END) AS seqtypid,
			any_value(CASE data_type WHEN 'INTEGER' THEN 2147483647 WHEN 'SMALLINT' THEN 32767 END) AS seqmax
			FROM {c}.main.qf_column_sequences WHERE owned AND data_type IN ('INTEGER', 'SMALLINT') GROUP BY sequence_oid) t
			ON t.sequence_oid = s.seqrelid`,
}
