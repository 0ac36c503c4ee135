package duckengine

// psqlCatalogSQL holds the catalogs psql's \ddp and \dRs read, empty as on a fresh
// PostgreSQL database (DuckDB has no default privileges or subscriptions), with the columns
// PostgreSQL 15 gives them, and the functions \dX calls over the (empty) pg_statistic_ext.
var psqlCatalogSQL = []string{
	`CREATE VIEW {c}.main.pg_default_acl AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS defaclrole,
		NULL::BIGINT AS defaclnamespace, NULL::VARCHAR AS defaclobjtype, NULL::VARCHAR[] AS defaclacl WHERE false`,
	`CREATE VIEW {c}.main.pg_subscription AS SELECT NULL::BIGINT AS oid, NULL::BIGINT AS subdbid, NULL::VARCHAR AS subskiplsn,
		NULL::VARCHAR AS subname, NULL::BIGINT AS subowner, NULL::BOOLEAN AS subenabled, NULL::BOOLEAN AS subbinary,
		NULL::BOOLEAN AS substream, NULL::VARCHAR AS subtwophasestate, NULL::BOOLEAN AS subdisableonerr,
		NULL::VARCHAR AS subconninfo, NULL::VARCHAR AS subslotname, NULL::VARCHAR AS subsynccommit,
		NULL::VARCHAR[] AS subpublications WHERE false`,
	`CREATE MACRO {c}.main.pg_statistics_obj_is_visible(id) AS true`,
	`CREATE MACRO {c}.main.pg_get_statisticsobjdef(id) AS NULL::VARCHAR`,
	// \df+ (psql 14 and later) reads a SQL-standard function body first: none here.
	`CREATE MACRO {c}.main.pg_get_function_sqlbody(id) AS NULL::VARCHAR`,
}
