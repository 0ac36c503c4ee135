package pgwire_test

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestSerialDefaultAsPostgreSQL: a serial column's default reads as PostgreSQL 15 prints it,
// nextval('t_id_seq'::regclass), in pg_get_expr (JDBC's COLUMN_DEF, psql's \d, Django's
// get_table_description) and information_schema.columns; the sequence's name qualified when
// its schema is not on the search path, and always once the session's search_path is empty
// (SET, or pg_dump's set_config), until RESET or SET again. It was nextval('t_id_seq'), and
// pg_dump wrote that unqualified under its empty search_path.
func TestSerialDefaultAsPostgreSQL(t *testing.T) {
	pgURL, duckURL := pgtest.NewDatabase(t), memoryDuckProxy(t, "serialdefault").URL()
	pg, duck := connect(t, pgURL), connect(t, duckURL)
	execBoth(t, pg, duck, "create table sd_t (id serial primary key, x int default 3)", "create schema sd_s",
		"create table sd_s.sd_u (id bigserial primary key, y text)", "create table public.sd_v (id smallserial, z int)")
	defaults := "select c.relname, d.adnum, pg_get_expr(d.adbin, d.adrelid) from pg_attrdef d join pg_class c on c.oid = d.adrelid " +
		"where c.relname like 'sd_%' order by 1, 2"
	pretty := "select pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) as def from pg_catalog.pg_attrdef d " +
		"join pg_catalog.pg_class c on c.oid = d.adrelid where c.relname like 'sd_%' order by 1"
	info := "select table_name, column_name, column_default from information_schema.columns " +
		"where table_name like 'sd_%' and column_default is not null order by 1, 2"
	sameAnswers(t, pg, duck, namedOutcome,
		oracleStep{defaults, nil}, oracleStep{pretty, nil}, oracleStep{info, nil},
		oracleStep{"set search_path = ''", nil}, oracleStep{defaults, nil}, oracleStep{pretty, nil},
		oracleStep{"reset search_path", nil}, oracleStep{defaults, nil},
		oracleStep{"select pg_catalog.set_config('search_path', '', false)", nil}, oracleStep{defaults, nil},
		oracleStep{"set search_path = public", nil}, oracleStep{defaults, nil},
		oracleStep{"set search_path to \"$user\", public", nil}, oracleStep{pretty, nil},
	)
	// psql's \d prints the default; pg_dump writes it qualified.
	for _, args := range [][]string{{"-X", "-c", `\d sd_t`}, {"-X", "-c", `\d sd_s.sd_u`}} {
		if want, got := pgTool(t, "psql", append(args, pgURL)...), pgTool(t, "psql", append(args, duckURL)...); want != got {
			t.Errorf("psql %v\n  PostgreSQL:\n%s\n  QueryFlux on DuckDB:\n%s", args, want, got)
		}
	}
	setDefaults := func(url string) (out []string) {
		for _, l := range strings.Split(pgTool(t, "pg_dump", "--no-owner", url), "\n") {
			if strings.Contains(l, "SET DEFAULT") {
				out = append(out, l)
			}
		}
		return out
	}
	if want, got := strings.Join(setDefaults(pgURL), "\n"), strings.Join(setDefaults(duckURL), "\n"); want != got {
		t.Errorf("pg_dump's defaults\n  PostgreSQL:\n%s\n  QueryFlux on DuckDB:\n%s", want, got)
	}
}
