package mysqlwire

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestORMAutoIncrementOnDuckDB: what an ORM does with AUTO_INCREMENT (SQLAlchemy's ORM
// creating its table and reading back the ids of the rows it adds; PyMySQL running mysqldump's
// CREATE TABLE with table options, KEY, UNSIGNED and AUTO_INCREMENT=100, then reading
// lastrowid and LAST_INSERT_ID()) gets through the proxy what it gets from MariaDB itself: on
// the embedded DuckDB (before: DuckDB refused the CREATE TABLE, LAST_INSERT_ID() was 0) and on
// a MariaDB cluster (before: inside a transaction the OK packet's insert id was 0, so
// SQLAlchemy's objects had id 0).
func TestORMAutoIncrementOnDuckDB(t *testing.T) {
	py := frontendtest.PythonWith(t, "sqlalchemy, pymysql")
	run := func(addr, user, db string) string {
		t.Helper()
		host, port, _ := net.SplitHostPort(addr)
		out, err := exec.Command(py, "testdata/orm_autoincrement.py", host, port, user, db).CombinedOutput()
		if err != nil {
			t.Fatalf("orm_autoincrement.py against %s: %v\n%s", addr, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	dsn, direct := mytest.NewDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := run(cfg.Addr, cfg.User, direct)
	maria := coreServer(t, coreSetup{})
	if got := run(maria.addr, testUser, maria.dbName); got != want {
		t.Errorf("on a MariaDB cluster:\n %s\nMariaDB itself:\n %s", got, want)
	}
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	duck := serveCore(t, "duck", eng, coreSetup{})
	if got := run(duck.addr, testUser, "duck"); got != want {
		t.Errorf("on DuckDB:\n %s\nMariaDB itself:\n %s", got, want)
	}
}
