package mysqlwire

import (
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestChangeDatabaseAsMariaDB: USE, COM_INIT_DB (mysqlclient's select_db) and COM_CHANGE_USER
// (its change_user) to a database that does not exist are refused as MariaDB refuses them
// (1049, the session's database kept), and to one that exists are taken, on every engine.
func TestChangeDatabaseAsMariaDB(t *testing.T) {
	python := frontendtest.PythonWith(t, "MySQLdb")
	maria := coreServer(t, coreSetup{})
	cfg, err := gomysql.ParseDSN(maria.dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := runPythonScript(t, python, "testdata/python_usedb.py", "mysqldb", cfg.Addr, cfg.User, cfg.Passwd, maria.dbName)
	if len(want) < 15 {
		t.Fatalf("MariaDB: %d probes", len(want))
	}
	duck, arrow, pg := unrelayedTargets(t, nil, nil)
	for name, tg := range map[string]struct{ addr, db string }{ //determinism:ok each target is compared alone
		"relayed": {maria.addr, maria.dbName}, "Arrow": {arrow.addr, arrow.dbName}, "DuckDB": {duck.addr, "duck"},
		"PostgreSQL": {pg.addr, "public"}, // a MySQL database is a DuckDB catalog, a PostgreSQL schema
	} {
		got := runPythonScript(t, python, "testdata/python_usedb.py", "mysqldb", tg.addr, testUser, "", tg.db)
		for probe, w := range want { //determinism:ok each probe is compared alone
			if got[probe] != w {
				t.Errorf("%s: %s:\n proxy   %s\n MariaDB %s", name, probe, got[probe], w)
			}
		}
	}
}
