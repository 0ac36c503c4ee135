package mysqlwire

import (
	"database/sql"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestColumnFlagsOfMySQLTextOnDuckDB: the key flags of a SELECT's columns on DuckDB are read
// from the client's text as MySQL reads it (the core's analysis of it, MySQL's dialect), as
// MariaDB answers: `quoted` names of the table, its alias and its columns, a "double-quoted"
// string, # and -- comments, a versioned comment. (A literal item is NOT NULL on MariaDB,
// 0x1, and carries no flag on DuckDB: left.)
func TestColumnFlagsOfMySQLTextOnDuckDB(t *testing.T) {
	dsn, dbName := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	maria, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { maria.Close() })
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	addr := serveCore(t, "duck", eng, coreSetup{}).addr
	duck := openDB(t, addr, testUser, "", "duck", "")
	execBoth(t, maria, duck, columnFlagsDDL...)
	stmts := []string{
		"SELECT `id`, `cf`.`u`, `k` AS `kk` FROM `cf`", "SELECT `x`.`s`, `x`.`d` FROM `cf` AS `x` WHERE `x`.`id` > 0",
		`SELECT id, u FROM cf WHERE u <> "k"`, "SELECT id, m FROM cf # a comment", "SELECT id -- a comment\n, m FROM cf",
		"SELECT /*!40001 SQL_NO_CACHE */ id, k FROM cf", "SELECT `a`, `b` FROM `cf2` ORDER BY `a`",
	}
	want := columnFlags(t, cfg.Addr, cfg.User, cfg.Passwd, dbName, stmts)
	got := columnFlags(t, addr, testUser, "", "duck", stmts)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s:\n DuckDB  %s\n MariaDB %s", stmts[i/2], got[i], want[i])
		}
	}
}
