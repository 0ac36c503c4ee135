package duckengine

import "strings"

// information_schema as the client's database shows it: the client's catalogs only. DuckDB's
// views list every attached catalog's objects, the compatibility catalog's pg_* views among
// them (24 relations beside a demo's 3, all in a schema named main), so a tool that lists a
// schema's tables from information_schema.tables (Metabase, Grafana, DBeaver, a Trino client)
// showed them as the client's. A PostgreSQL, Trino or Flight SQL client's
// information_schema.X is written as the compatibility view of X without the hidden catalogs
// (those \l hides), and a Trino client's columns' data_type is Trino's name of the type. A MySQL
// client's information_schema is mysqlshow's.

// infoSchemaViews are the views filtered, each by its catalog and schema columns.
var infoSchemaViews = map[string][2]string{
	"schemata": {"catalog_name", "schema_name"}, "tables": {"table_catalog", "table_schema"},
	"columns": {"table_catalog", "table_schema"}, "views": {"table_catalog", "table_schema"},
	"referential_constraints": {"constraint_catalog", "constraint_schema"},
	"key_column_usage":        {"table_catalog", "table_schema"}, "table_constraints": {"table_catalog", "table_schema"},
	"constraint_column_usage": {"table_catalog", "table_schema"}, "constraint_table_usage": {"table_catalog", "table_schema"},
	"check_constraints": {"constraint_catalog", "constraint_schema"},
}

// infoSchemaExtra leaves out the columns DuckDB's views have and PostgreSQL's do not, which
// make a join's unqualified column ambiguous (Sequelize's foreign-key query names
// constraint_type across table_constraints and constraint_column_usage, whose view is
// written below).
var infoSchemaExtra = map[string]string{"constraint_table_usage": " EXCLUDE (constraint_type)"}

// infoSchemaWhere narrows a view further: a varchar(n)'s length check is no constraint to a
// client (pglength.go).
var infoSchemaWhere = map[string]string{"check_constraints": " AND NOT regexp_matches(check_clause, " + lengthCheckSQL + ")"}

// infoSchemaPrefix qualifies the filtered views: a schema of the compatibility catalog, off the
// search path.
const infoSchemaPrefix = `"` + compatCatalog + `".infoschema.`

// infoSchemaSQL creates them. Hidden are the catalogs \l hides, DuckDB's temporary one, and
// the system catalog's main schema (DuckDB's own views: duckdb_tables, sqlite_master, ...); its
// pg_catalog and information_schema stay, as in PostgreSQL's information_schema.
func infoSchemaSQL() []string {
	out := []string{`CREATE SCHEMA {c}.infoschema`}
	for view, cols := range infoSchemaViews {
		out = append(out, `CREATE VIEW {c}.infoschema.`+view+` AS SELECT *`+infoSchemaExtra[view]+` FROM system.information_schema.`+view+
			` WHERE `+cols[0]+` NOT IN ({hidden}, 'temp') AND NOT (`+cols[0]+` = 'system' AND `+cols[1]+` = 'main')`+
			` AND `+cols[1]+` <> '`+declaredSchema+`'`+infoSchemaWhere[view])
	}
	// A varchar(n)'s length check is no constraint to a client (pglength.go): a table's checks
	// are listed from duckdb_constraints() without those (DuckDB names a column's checks alike).
	out = append(out, `CREATE OR REPLACE VIEW {c}.infoschema.table_constraints AS SELECT tc.* FROM system.information_schema.table_constraints tc
		WHERE tc.table_catalog NOT IN ({hidden}, 'temp') AND NOT (tc.table_catalog = 'system' AND tc.table_schema = 'main')
		AND tc.table_schema <> '`+declaredSchema+`' AND (tc.constraint_type <> 'CHECK' OR EXISTS (SELECT 1 FROM duckdb_constraints() k
		WHERE k.constraint_type = 'CHECK' AND k.database_name = tc.table_catalog AND k.schema_name = tc.table_schema
		AND k.table_name = tc.table_name AND k.constraint_name = tc.constraint_name AND NOT regexp_matches(k.expression, `+lengthCheckSQL+`)))
		QUALIFY tc.constraint_type <> 'CHECK' OR row_number() OVER (PARTITION BY tc.table_catalog, tc.table_schema, tc.table_name,
		tc.constraint_name, tc.constraint_type) = 1`)
	// A foreign key uses the columns it references, as PostgreSQL lists them (DuckDB lists the
	// key's own columns, as table_constraints' key_column_usage does).
	out = append(out, `CREATE OR REPLACE VIEW {c}.infoschema.constraint_column_usage AS
		SELECT * EXCLUDE (constraint_type, constraint_text) FROM system.information_schema.constraint_column_usage
		WHERE constraint_type <> 'FOREIGN KEY' AND table_catalog NOT IN ({hidden}, 'temp')
		UNION ALL SELECT database_name, schema_name, referenced_table, unnest(referenced_column_names),
			database_name, schema_name, constraint_name FROM duckdb_constraints()
		WHERE constraint_type = 'FOREIGN KEY' AND database_name NOT IN ({hidden}, 'temp')`)
	// A Trino client's columns are typed in Trino's names, as DESCRIBE types them (trinoshow.go).
	return append(out, `CREATE VIEW {c}.infoschema.trino_columns AS
		SELECT * REPLACE ({c}.main.qf_trino_type(data_type) AS data_type) FROM {c}.infoschema.columns`)
}

// infoSchemaView writes information_schema.X at w.i, for X a filtered view, as that view.
func (w *compatWriter) infoSchemaView() bool {
	dot := w.sig(w.i+1, 0)
	name := w.sig(dot+1, 0)
	if !w.infoSchema || w.word(dot) != "." || name < 0 {
		return false
	}
	view := strings.Trim(w.word(name), `"`)
	if _, ok := infoSchemaViews[view]; !ok {
		return false
	}
	prefix := infoSchemaPrefix
	switch {
	case view == "columns" && w.trino:
		view = "trino_columns"
	case w.postgres:
		prefix = pgInfoSchemaPrefix // schema names as PostgreSQL's (pgschema.go)
	}
	w.emit(prefix + view)
	w.i = name + 1
	return true
}

// mentionsInfoSchema reports cheaply whether sqlText may read information_schema.
func mentionsInfoSchema(sqlText string) bool { return containsFold(sqlText, "information_schema") }
