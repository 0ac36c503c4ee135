package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL's default schema is public; DuckDB's is main, and DuckDB can neither rename it nor
// make another the default for new tables. A PostgreSQL client sees main as public, as on
// PostgreSQL: a name qualified with public (public.t, "public"."t", demo.public.t) is main's,
// CREATE SCHEMA IF NOT EXISTS public does nothing, and the catalog's schema names
// (information_schema, pg_namespace, pg_tables, pg_indexes, pg_views, pg_get_indexdef,
// current_schema(), current_schemas()) say public. So an ORM's
// `table_schema = 'public'` (Sequelize, Knex), JDBC's getTables(null, "public", ...) and an
// application's public.users find the tables. Trino, MySQL and Flight SQL clients keep
// DuckDB's name, main.

// pgInfoSchemaPrefix qualifies the filtered information_schema views with PostgreSQL's schema
// names.
const pgInfoSchemaPrefix = `"` + compatCatalog + `".pginfoschema.`

// pgSchemaSQL creates the catalog views with PostgreSQL's schema names (qf_pg_schema, compatSQL)
// and the current schema's functions.
func pgSchemaSQL() []string {
	out := []string{
		`CREATE VIEW {c}.main.qf_pg_tables AS SELECT * REPLACE ({c}.main.qf_pg_schema(schemaname) AS schemaname)
			FROM pg_catalog.pg_tables WHERE schemaname IN (SELECT nspname FROM pg_catalog.pg_namespace) AND schemaname <> 'queryflux_pg'`,
		`CREATE VIEW {c}.main.qf_pg_indexes AS SELECT {c}.main.qf_pg_schema(n.nspname) AS schemaname, t.relname AS tablename,
			i.relname AS indexname, NULL::VARCHAR AS tablespace, {c}.main.qf_indexdef(x.indexrelid) AS indexdef
			FROM {c}.main.qf_pg_index x JOIN {c}.main.qf_pg_class i ON i.oid = x.indexrelid
			JOIN {c}.main.qf_pg_class t ON t.oid = x.indrelid JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace`,
		// Rails' reset_pk_sequence! reads increment_by and min_value here (pgsetval.go)
		`CREATE VIEW {c}.main.qf_pg_sequences AS SELECT {c}.main.qf_pg_schema(schema_name) AS schemaname, sequence_name AS sequencename,
			'queryflux' AS sequenceowner, CASE max_value WHEN 32767 THEN 'smallint' WHEN 2147483647 THEN 'integer' ELSE 'bigint' END AS data_type,
			start_value, min_value, max_value, increment_by, cycle, 1::BIGINT AS cache_size, last_value
			FROM duckdb_sequences() WHERE database_name = current_database() AND NOT temporary`,
		`CREATE MACRO {c}.pgsession.current_schema() AS 'public'`,
		`CREATE MACRO {c}.pgsession.current_schemas(implicit) AS CASE WHEN implicit THEN ['pg_catalog', 'public'] ELSE ['public'] END`,
		`CREATE SCHEMA {c}.pginfoschema`,
	}
	for view := range infoSchemaViews {
		var mapped []string
		for _, col := range infoSchemaSchemaColumns[view] {
			mapped = append(mapped, `{c}.main.qf_pg_schema(`+col+`) AS `+col)
		}
		for _, prefix := range infoSchemaConstraintNames[view] { // PostgreSQL's names of constraints (pgdeclared.go)
			mapped = append(mapped, `coalesce({c}.main.qf_pg_constraint_name(`+prefix+`_catalog, `+prefix+`_schema, `+prefix+`_name), `+
				prefix+`_name) AS `+prefix+`_name`)
		}
		out = append(out, `CREATE VIEW {c}.pginfoschema.`+view+` AS SELECT * REPLACE (`+strings.Join(mapped, ", ")+
			`) FROM {c}.infoschema.`+view)
	}
	return append(out, declaredInfoSchemaColumns)
}

// infoSchemaConstraintNames are each view's constraint names, by their columns' prefix.
var infoSchemaConstraintNames = map[string][]string{"table_constraints": {"constraint"}, "key_column_usage": {"constraint"},
	"referential_constraints": {"constraint", "unique_constraint"}, "constraint_column_usage": {"constraint"},
	"constraint_table_usage": {"constraint"}}

// infoSchemaSchemaColumns are each filtered information_schema view's columns that name a
// schema of the client's.
var infoSchemaSchemaColumns = map[string][]string{
	"schemata": {"schema_name"}, "tables": {"table_schema"}, "columns": {"table_schema"}, "views": {"table_schema"},
	"referential_constraints": {"constraint_schema", "unique_constraint_schema"},
	"key_column_usage":        {"constraint_schema", "table_schema"}, "table_constraints": {"constraint_schema", "table_schema"},
	"constraint_column_usage": {"table_schema", "constraint_schema"}, "constraint_table_usage": {"table_schema", "constraint_schema"},
	"check_constraints": {"constraint_schema"},
}

// mayNamePublic reports cheaply whether a PostgreSQL client's q may name the public schema or
// ask for the current one.
func mayNamePublic(q *query.Request) bool {
	return q.Protocol == query.ProtocolPostgres && (containsFold(q.SQL, "public") || containsFold(q.SQL, "current_schema"))
}

// publicSchema writes the public schema's name at w.i as main's, where it names a schema: before
// a "." (public.t, demo.public.t), or as CREATE SCHEMA's object.
func (w *compatWriter) publicSchema() bool {
	t := w.toks[w.i]
	if !w.postgres || !strings.EqualFold(t.Text, "public") && t.Text != `"public"` {
		return false
	}
	if t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent {
		return false
	}
	next, prev := w.word(w.sig(w.i+1, 0)), w.prevSig(w.i)
	if w.word(prev) == "exists" { // CREATE SCHEMA IF NOT EXISTS public
		prev = w.prevSig(w.prevSig(w.prevSig(prev)))
	}
	if next != "." && w.word(prev) != "schema" {
		return false
	}
	w.emit("main")
	w.i++
	return true
}

// currentSchema writes current_schema, current_schema() and current_schemas(b) as the macros
// that answer as PostgreSQL does (public for main), named as the functions so the result's
// column is too.
func (w *compatWriter) currentSchema() bool {
	name := w.word(w.i)
	if !w.postgres || name != "current_schema" && name != "current_schemas" {
		return false
	}
	if dot := w.prevSig(w.i); w.word(dot) == "." && w.word(w.prevSig(dot)) != "pg_catalog" {
		return false // another schema's function (pg_catalog's is written unqualified, as here)
	}
	call := w.word(w.sig(w.i+1, 0)) == "("
	switch {
	case call:
		w.emit(sessionPrefix + name) // its arguments are written as they come
	case name == "current_schema":
		w.emit(sessionPrefix + name + "()") // PostgreSQL's keyword form
	default:
		return false
	}
	w.i++
	return true
}

// duckRelation is a PostgreSQL client's relation name (as written: public.t, "public"."t", t)
// as DuckDB's, for statements this engine writes itself (COPY's).
func duckRelation(name string) string {
	toks := sqltok.Tokenize(name, sqltok.Postgres)
	w := compatWriter{toks: toks, postgres: true}
	for w.i < len(toks) {
		if !w.publicSchema() {
			w.out.WriteString(toks[w.i].Text)
			w.i++
		}
	}
	return w.out.String()
}

// duckSearchPath is a PostgreSQL search_path's value ("$user", public) as DuckDB's: public is
// main, and "$user" (a schema named after the user, which no client has here) goes.
func duckSearchPath(value string) string {
	var schemas []string
	for _, s := range strings.Split(value, ",") {
		s = strings.TrimSpace(s)
		if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
			s = s[1 : len(s)-1]
		} else {
			s = strings.ToLower(s)
		}
		if s != "$user" && s != "" {
			schemas = append(schemas, duckSchema(s))
		}
	}
	return strings.Join(schemas, ",")
}
