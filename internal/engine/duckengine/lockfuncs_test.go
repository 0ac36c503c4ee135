package duckengine_test

import (
	"path/filepath"
	"testing"
)

// TestDuckDBConfigurationFunctionsLockedDown: on a locked cluster, the pragmas DuckDB also
// offers as table functions are refused in every way a statement can call them, and so are
// the functions that run SQL from a string; one of them (file logging with external access
// off) made DuckDB abort the process when the connection closed. Statements that only look
// alike run.
func TestDuckDBConfigurationFunctionsLockedDown(t *testing.T) {
	dir := t.TempDir()
	e := openConns(t, 2, nil)
	for _, sql := range []string{
		"call enable_logging(storage = 'file', storage_path = '" + filepath.Join(dir, "log") + "')",
		"CALL enable_logging()",
		"select * from enable_logging()",
		"select * from main.\"ENABLE_LOGGING\"()",
		"select 1 from (select * from disable_logging()) x",
		"call truncate_duckdb_logs()",
		"call enable_profiling()",
		"call disable_optimizer()",
		"call enable_verification()",
		"call force_checkpoint()",
		"force checkpoint",
		"call copy_database('memory', 'duck')",
		"create macro m() as table select * from enable_logging()",
		"select * from query('select * from enable_logging()')",
		"select * from query('select * from enable_' || 'logging()')",
		"select * from \"query\"('select 1')",
		"select * from json_execute_serialized_sql(json_serialize_sql('select 1'))",
	} {
		if c := code(e, sql); c == "" {
			t.Errorf("%s: allowed", sql)
		}
	}
	// What only looks alike still runs, and the connections are as they were.
	run(t, e, "create table t(query varchar, enable_x integer)")
	run(t, e, "select query, enable_x from t")
	run(t, e, "checkpoint")
	if n := count(t, e, "select count(*) from duckdb_settings() where name = 'enable_logging' and value in ('false', '0')"); n != "1" {
		t.Fatalf("logging turned on: %s", n)
	}
	if n := count(t, e, "select count(*) from range(3)"); n != "3" {
		t.Fatalf("plain query after the attacks: %s", n)
	}
}
