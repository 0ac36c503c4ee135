package mysqlwire

import (
	"path/filepath"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// TestMySQL2BooleanParamsOnPostgreSQLAsOnMariaDB: mysql2's prepared statements (execute) with
// JavaScript booleans as parameters, into, compared with and assigned to a PostgreSQL
// cluster's BOOLEAN columns through the proxy, answer as MariaDB's for its TINYINT(1) ones
// (before: 1105, PostgreSQL refusing the integer mysql2 sends for a boolean).
func TestMySQL2BooleanParamsOnPostgreSQLAsOnMariaDB(t *testing.T) {
	testlong.Skip(t, "internal/engine/pgengine.TestMySQLIntegerParamsOfBooleanColumns")
	path, err := filepath.Abs("testdata/mysql2_bool_params.json")
	if err != nil {
		t.Fatal(err)
	}
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := runMySQL2Script(t, "mysql2_statements.js", cfg.Addr, cfg.User, cfg.Passwd, name, "STATEMENTS="+path)
	got := runMySQL2Script(t, "mysql2_statements.js", pgCluster(t).addr, testUser, "", "public", "STATEMENTS="+path)
	if len(want) < 13 {
		t.Fatalf("%d probes ran on MariaDB", len(want))
	}
	for probe, w := range want {
		if got[probe] != w {
			t.Errorf("%s:\n proxy   %s\n MariaDB %s", probe, got[probe], w)
		}
	}
}
