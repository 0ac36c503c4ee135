package duckengine

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
)

func pgRequest(sql string) *query.Request {
	return &query.Request{SQL: sql, Protocol: query.ProtocolPostgres}
}

func TestPGCompatRewrites(t *testing.T) {
	for in, want := range map[string]string{
		`select c.relname from pg_catalog.pg_class c where c.relname OPERATOR(pg_catalog.~) '^(orders)$' COLLATE pg_catalog.default`: `select c.relname from "queryflux_pg_compat".main.qf_pg_class c where c.relname  ~  '(?s).*(?:^(orders)$).*' `,
		`select pg_catalog.pg_get_userbyid(c.relowner) from pg_catalog.pg_roles r`:                                                   `select "queryflux_pg_compat".main.pg_get_userbyid(c.relowner) from "queryflux_pg_compat".main.pg_roles r`,
		`select x::pg_catalog.text, y::pg_catalog.regclass::pg_catalog.text from t`:                                                  `select x::VARCHAR, "queryflux_pg_compat".main.qf_relname(y)::VARCHAR from t`,
		`select 'public.orders'::regclass = c.oid, '42'::regclass, 'int4'::pg_catalog.regtype`:                                       `select (SELECT any_value(oid) AS regclass FROM pg_catalog.pg_class WHERE relname = 'orders') = c.oid, 42, (SELECT any_value(oid) AS regtype FROM pg_catalog.pg_type WHERE typname = 'int4')`,
		`select 'orders'::regclass as r`: `select (SELECT CASE WHEN count(*) = 0 THEN error('qfpg 42P01 relation "orders" does not exist') ELSE any_value(relname) END AS regclass FROM pg_catalog.pg_class WHERE relname = 'orders') as r`,
		`select pg_catalog.array_to_string(a, ','), pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) from pg_catalog.pg_attrdef d`: `select array_to_string(a, ','), qf_pg_get_expr(d.adbin, d.adrelid, true) from "queryflux_pg_compat".main.pg_attrdef d`,
		`select s from pg_catalog.generate_series(1, 3) s where n.nspname !~ '^pg_'`:                                               `select s from qfpg_generate_series_rows(1, 3) s(s) where n.nspname !~ '(?s).*(?:^pg_).*'`,
		`select at, now() AT TIME ZONE 'UTC', t.at from t where at > $1`:                                                           `select "at", now() AT TIME ZONE 'UTC', t."at" from t where "at" > $1`,
		`select version(), current_setting('Server_Version_Num', true)::int, current_setting('TimeZone')`:                          `select "queryflux_pg_compat".pg.version(), "queryflux_pg_compat".pg.current_setting('Server_Version_Num')::int, "queryflux_pg_compat".pgsession.current_setting('TimeZone', 'UTC')`,
		`select pubname from pg_catalog.pg_publication p`:                                                                          noPublications,
		// Sequelize's showIndex: int2vector and name[] selected are PostgreSQL's texts of them;
		// its bulk INSERT of dates: a blank before the offset.
		`SELECT ix.indkey AS indkey, array_agg(a.attnum) as n, array_agg(a.attname) AS names FROM pg_index ix, pg_attribute a GROUP BY ix.indkey`: `SELECT array_to_string(ix.indkey, ' ') AS indkey, array_agg(a.attnum) as n, "queryflux_pg_compat".main.qf_pg_array_text(array_agg(a.attname)) AS names FROM "queryflux_pg_compat".main.qf_pg_index ix, "queryflux_pg_compat".main.qf_pg_attribute a GROUP BY ix.indkey`,
		`SELECT * FROM "information_schema"."tables" WHERE "table_schema" = 'public'`:                                                             `SELECT * FROM "queryflux_pg_compat".pginfoschema.tables WHERE "table_schema" = 'public'`,
		`SELECT k[1] FROM (SELECT ix.indkey AS k, array_agg(a.attname) AS names FROM pg_catalog.pg_index ix) t`:                                   `SELECT k[1] FROM (SELECT ix.indkey AS k, array_agg(a.attname) AS names FROM "queryflux_pg_compat".main.qf_pg_index ix) t`,
		`INSERT INTO "t" ("a","b") VALUES ('2026-12-05 00:35:39.957 +00:00','x -01'),('2026-12-05 00:35:39 -05:30', 'y')`:                         `INSERT INTO "t" ("a","b") VALUES ('2026-12-05 00:35:39.957+00:00','x -01'),('2026-12-05 00:35:39-05:30', 'y')`,
		// SQLAlchemy's reflection: unqualified catalog relations, json_build_object, an ANY in
		// an outer join, int2vector text, unnest in a select list.
		`select a.attname from pg_attribute a join (select unnest(ix.indkey) attnum from pg_index ix) k on a.attnum = k.attnum`:         `select a.attname from "queryflux_pg_compat".main.qf_pg_attribute a join (select unnest(ix.indkey) attnum from "queryflux_pg_compat".main.qf_pg_index ix) k on a.attnum = k.attnum`,
		`select ix.indkey::varchar, pg_index.indoption::text from pg_index left join pg_attribute a on a.attnum = ANY(pg_index.indkey)`: `select array_to_string(ix.indkey, ' '), array_to_string(pg_index.indoption, ' ') from "queryflux_pg_compat".main.qf_pg_index AS pg_index left join "queryflux_pg_compat".main.qf_pg_attribute a on list_contains(pg_index.indkey, a.attnum)`,
		`select string_agg(word, ',') from pg_get_keywords() where word <> ALL ('{a,"null"}'::text[])`:                                  `select string_agg(word, ',') from pg_get_keywords() where word <> ALL ('["a", "null"]'::VARCHAR[])`,
		`select (select json_build_object('a', 1)) from pg_catalog.pg_class, my_pg_class`:                                               `select (select json_object('a', 1)) from "queryflux_pg_compat".main.qf_pg_class AS pg_class, my_pg_class`,
	} {
		if got := pgCompat(pgRequest(in)); got != want {
			t.Errorf("pgCompat(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestPGCompatLeavesOtherStatements: a statement that names neither pg_catalog nor a reg*
// cast, nor the word at (a name to quote), nor a function pgfunctions.go rewrites, nor a
// regular expression match (~, SIMILAR), is never rewritten.
func TestPGCompatLeavesOtherStatements(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sql := rapid.StringMatching(`[a-z0-9_ ,.:~()'"*=<>!-]{0,80}`).Draw(t, "sql")
		if strings.Contains(strings.ToLower(sql), "pg_catalog") || strings.Contains(strings.ToLower(sql), "::reg") || holdsWordAt(sql) ||
			callsRenamed(pgRequest(sql), pgFunctions) || mayMatchRegex(sql) || holdsOffsetTimestamp(sql) {
			t.Skip("names the catalog, a function or a regular expression match PostgreSQL answers otherwise")
		}
		if got := pgCompat(pgRequest(sql)); got != sql {
			t.Fatalf("pgCompat(%q) = %q", sql, got)
		}
	})
}

// TestPGShow: a PostgreSQL client's SHOW of a setting PostgreSQL has is a SELECT of its value
// under its name; other SHOWs, and other clients', are DuckDB's.
func TestPGShow(t *testing.T) {
	for in, want := range map[string]string{
		"SHOW TRANSACTION ISOLATION LEVEL":  `SELECT 'repeatable read' AS "transaction_isolation"`,
		"show standard_conforming_strings;": `SELECT 'on' AS "standard_conforming_strings"`,
		"show time zone":                    `SELECT 'UTC' AS "TimeZone"`,
		"show search_path":                  `SELECT '"$user", public' AS "search_path"`,
		"show tables":                       "-",
		"show orders":                       "-",
		"select 1":                          "-",
	} {
		got, ok := pgShow(pgRequest(in))
		if !ok {
			got = "-"
		}
		if got != want {
			t.Errorf("pgShow(%q) = %q, want %q", in, got, want)
		}
	}
	if _, ok := pgShow(&query.Request{SQL: "show search_path", Protocol: query.ProtocolMySQL}); ok {
		t.Error("a MySQL client's SHOW was answered as PostgreSQL's")
	}
}
