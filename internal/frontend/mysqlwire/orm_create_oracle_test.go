package mysqlwire

import (
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// TestSQLAlchemyCreateAllAndReflectOnDuckDBAsOnMariaDB: SQLAlchemy with PyMySQL on a fresh
// database (testdata/sqlalchemy_create_all.py: create_all, rows, then the reflection Alembic's
// autogenerate and MetaData.reflect do, and SHOW CREATE TABLE) reads the same facts from the
// proxy's DuckDB as from MariaDB: the foreign key (SHOW CREATE TABLE had none), the CREATE INDEX
// indexes (it had none), the current time's and a boolean's default (it had DuckDB's text of
// them, which MariaDB cannot read back), the table options with the next AUTO_INCREMENT value.
func TestSQLAlchemyCreateAllAndReflectOnDuckDBAsOnMariaDB(t *testing.T) {
	python := frontendtest.PythonWith(t, "sqlalchemy, pymysql")
	run := func(addr, user, password, db string) string {
		return runClientScript(t, python, "", []string{"testdata/sqlalchemy_create_all.py"}, addr, user, password, db)
	}
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := run(cfg.Addr, cfg.User, cfg.Passwd, name)
	sameLines(t, "DuckDB", run(duckServer(t), testUser, "", "duck"), want)
}
