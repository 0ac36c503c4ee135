package mysqlwire

import (
	"net"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestDjangoMigratesOnDuckDBAsOnMariaDB: Django's MySQL schema editor (mysqlclient) migrating
// models on the embedded DuckDB through the proxy does what it does on MariaDB: every step
// (a foreign key, fields added, altered, renamed and removed, an index, unique_together) runs,
// an index on a renamed field follows it, and the tables take rows as MariaDB's do (a row naming
// no author refused: 1452).
func TestDjangoMigratesOnDuckDBAsOnMariaDB(t *testing.T) {
	djangoOnDuckDBAsOnMariaDB(t, "testdata/django_migrate.py")
}

// TestDjangoORMFlowOnDuckDBAsOnMariaDB: Django's ordinary flow (testdata/django_orm.py: migrate
// of contenttypes, auth and an app, then create, save, update, lookups across a foreign key,
// many-to-many, aggregates, transactions, auth's users and permissions, a delete) through the
// proxy on DuckDB prints what it prints on MariaDB: a save() of a row another references, and
// 1451 for a parent row in use. What DuckDB still refuses of the flow is the script's "limits"
// part, not run here.
func TestDjangoORMFlowOnDuckDBAsOnMariaDB(t *testing.T) {
	djangoOnDuckDBAsOnMariaDB(t, "testdata/django_orm.py")
}

// djangoOnDuckDBAsOnMariaDB runs a Django script against MariaDB and through the proxy on the
// embedded DuckDB, and wants the same lines printed.
func djangoOnDuckDBAsOnMariaDB(t *testing.T, script string) {
	python := frontendtest.PythonWith(t, "django, MySQLdb")
	run := func(addr, user, password, db string) string {
		host, port, _ := net.SplitHostPort(addr)
		return runClientScript(t, python, "", []string{script, host, port, user, password, db}, addr, user, password, db)
	}
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := run(cfg.Addr, cfg.User, cfg.Passwd, name)
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	sameLines(t, "DuckDB", run(serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "duck"), want)
}
