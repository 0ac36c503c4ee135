package mysqlwire

import (
	"database/sql"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
)

// serverDefaultStmts ask the server's variables before any SET, as drivers and ORMs do at
// connect (Django's strict-mode check, SQLAlchemy's SHOW VARIABLES LIKE 'sql_mode').
var serverDefaultStmts = []string{
	"SELECT @@sql_mode", "SELECT @@SESSION.sql_mode AS m, @@query_cache_size, @@lower_case_table_names",
	"SHOW VARIABLES LIKE 'sql_mode'", "SHOW VARIABLES WHERE Variable_name IN ('sql_mode', 'query_cache_size', 'query_cache_type', 'init_connect', 'license')",
	"SELECT @@sql_mode LIKE '%STRICT_TRANS_TABLES%' AS strict, 1 + 1 AS two",
	"SELECT @@time_zone, @@session.time_zone, @@system_time_zone", "SHOW VARIABLES LIKE '%time_zone'",
}

// sessionModeStmts change sql_mode and time_zone as drivers and migration tools do, and read
// them back.
var sessionModeStmts = []string{
	"SET sql_mode = CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES')", "SELECT @@sql_mode",
	"SET sql_mode = CONCAT(@@sql_mode, ',no_zero_date')", "SELECT @@sql_mode",
	"SET time_zone = '+0:00'", "SELECT @@time_zone", "SET time_zone = 'system'", "SELECT @@time_zone",
	"SET time_zone = '+00:00'", "SHOW VARIABLES LIKE 'time_zone'", "SET time_zone = DEFAULT", "SELECT @@time_zone",
	"SET sql_mode = 'traditional,strict_all_tables,,'", "SELECT @@sql_mode", "SET sql_mode = 3", "SELECT @@sql_mode",
	"SET sql_mode = 'no_such_mode'", "SELECT @@sql_mode", "SET sql_mode = DEFAULT", "SELECT @@sql_mode",
}

// TestServerDefaultsAsMariaDB: before any SET, @@sql_mode (and SHOW VARIABLES of it) is what
// MariaDB answers at its defaults: on a MariaDB engine the engine's own (the statement reaches
// it, whose server's configuration may differ), on DuckDB and PostgreSQL MariaDB's default.
// Before, the proxy answered ” everywhere, which Django's check reads as no strict mode.
func TestServerDefaultsAsMariaDB(t *testing.T) {
	maria := coreServer(t, coreSetup{})
	direct, err := sql.Open("mysql", maria.dsn) // without coreServer's time_zone: MariaDB's defaults
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	want := sessionAnswers(t, direct, serverDefaultStmts)
	wantModes := sessionAnswers(t, direct, sessionModeStmts)
	for _, noPassthrough := range []bool{false, true} {
		f := maria
		if noPassthrough {
			f = coreServer(t, coreSetup{noPassthrough: true})
		}
		got := sessionAnswers(t, openDB(t, f.addr, testUser, "", f.dbName, ""), serverDefaultStmts)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("MariaDB engine, passthrough %v: %s\n proxy   %s\n MariaDB %s", !noPassthrough, serverDefaultStmts[i], got[i], want[i])
			}
		}
		got = sessionAnswers(t, openDB(t, f.addr, testUser, "", f.dbName, ""), sessionModeStmts)
		for i := range wantModes {
			if got[i] != wantModes[i] {
				t.Errorf("MariaDB engine, passthrough %v: %s\n proxy   %s\n MariaDB %s", !noPassthrough, sessionModeStmts[i], got[i], wantModes[i])
			}
		}
		if len(f.hist.Find("SELECT @@sql_mode")) == 0 {
			t.Errorf("MariaDB engine, passthrough %v: SELECT @@sql_mode answered by the proxy, not the engine", !noPassthrough)
		}
	}
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	duck := serveCore(t, "duck", eng, coreSetup{}).addr
	got := sessionAnswers(t, openDB(t, duck, testUser, "", "", ""), sessionModeStmts)
	for i := range wantModes {
		if got[i] != wantModes[i] {
			t.Errorf("DuckDB engine: %s\n proxy   %s\n MariaDB %s", sessionModeStmts[i], got[i], wantModes[i])
		}
	}
	others := map[string]string{"DuckDB": duck, "PostgreSQL": pgCluster(t).addr}
	for name, addr := range others {
		got := sessionAnswers(t, openDB(t, addr, testUser, "", "", ""), serverDefaultStmts)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s engine: %s\n proxy   %s\n MariaDB %s", name, serverDefaultStmts[i], got[i], want[i])
			}
		}
	}
}
