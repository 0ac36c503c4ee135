package pgwire_test

import (
	"testing"

	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestPgDumpSetupOnDuckDBAsPostgreSQL: pg_dump's connection setup (and the SETs at the top of a
// dump psql restores) on the embedded DuckDB in transaction pool mode as on PostgreSQL 15:
// set_config of search_path to an empty one and the session SETs of settings that change nothing
// here answer as there; a value that would change something is still refused (0A000, or
// set_config's error), never taken and ignored.
func TestPgDumpSetupOnDuckDBAsPostgreSQL(t *testing.T) {
	pg, duck := connect(t, pgtest.NewDatabase(t)), connect(t, memoryDuckProxy(t, "pgdumpsetup").URL())
	sameRows(t, pg, duck, "SELECT pg_catalog.set_config('search_path', '', false);")
	sameOutcomes(t, pg, duck,
		"SELECT pg_catalog.set_config('search_path', '', false);",
		"SET DATESTYLE = ISO", "SET INTERVALSTYLE = POSTGRES", "SET extra_float_digits TO 3",
		"SET synchronize_seqscans TO off", "SET statement_timeout = 0", "SET lock_timeout = 0",
		"SET idle_in_transaction_session_timeout = 0", "SET row_security = off",
		"BEGIN", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", "COMMIT",
		// psql restoring a dump
		"SET client_encoding = 'UTF8'", "SET standard_conforming_strings = on", "SET check_function_bodies = false",
		"SET xmloption = content", "SET client_min_messages = warning", "SET default_tablespace = ''",
		"SET default_table_access_method = heap", `SELECT pg_catalog.set_config('search_path', '"$user", public', false)`,
		`SET search_path = "$user", public`)
	for _, sql := range []string{
		"SET statement_timeout = 5000", "SET row_security = on", "SET search_path = other",
		"SELECT set_config('search_path', 'other', false)", "SELECT set_config('search_path', 'public', false)", "SELECT set_config('work_mem', '1MB', false)",
	} {
		if got := tagOrState(duck, sql); got == "SET" || got == "SELECT 1" {
			t.Errorf("%s on DuckDB: %s, want it refused", sql, got)
		}
	}
}
