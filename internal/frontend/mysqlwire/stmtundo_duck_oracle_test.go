package mysqlwire

import (
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestMySQL2RefusedWriteInTransactionOnDuckDBAsMariaDB: node mysql2 in a transaction (BEGIN,
// and autocommit off) whose writes are refused (duplicate key by text and prepared, NOT NULL,
// CHECK, 1452, 1451) catches each error, writes on and commits
// (frontendtest/nodeclients/mysql2_stmtundo.js): through the proxy on the embedded DuckDB it
// prints what it prints on MariaDB, which undoes the refused statement only. DuckDB failed the
// whole transaction at the first refusal (every later statement 1105, COMMIT rolled back).
func TestMySQL2RefusedWriteInTransactionOnDuckDBAsMariaDB(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dir := frontendtest.NodeClients(t, "mysql2")
	want := runClientScript(t, "node", dir, []string{"mysql2_stmtundo.js"}, cfg.Addr, cfg.User, cfg.Passwd, name)
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	got := runClientScript(t, "node", dir, []string{"mysql2_stmtundo.js"}, serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "duck")
	sameLines(t, "on DuckDB", got, want)
}
