package mysqlwire

import (
	"context"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// pgCompatDDL is compatDDL as PostgreSQL reads it (DOUBLE PRECISION, which MariaDB reads as
// DOUBLE): the same table on both.
var pgCompatDDL = strings.Replace(compatDDL, "DOUBLE", "DOUBLE PRECISION", 1)

// pgCluster serves the MySQL wire on a fresh PostgreSQL database, its tables made by ddl.
func pgCluster(t *testing.T, ddl ...string) *coreFixture {
	t.Helper()
	f, _ := pgClusterPool(t, ddl...)
	return f
}

// pgClusterPool is pgCluster and the engine's pool, to change the database behind the proxy.
func pgClusterPool(t *testing.T, ddl ...string) (*coreFixture, *pgxpool.Pool) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: u.Host,
		Database: strings.TrimPrefix(u.Path, "/"), User: u.User.Username(), Options: map[string]string{"sslmode": "disable"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	for _, s := range ddl {
		if _, err := eng.(*pgengine.Engine).Pool().Exec(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return serveCore(t, "pg", eng, coreSetup{}), eng.(*pgengine.Engine).Pool()
}

// TestMySQLClientsCatalogOnPostgreSQL: each client library connects to a PostgreSQL cluster and
// asks the catalog statements ORMs and tools ask; the answers are MariaDB's for the same table
// (before: PostgreSQL's syntax error for every one). DATABASE() is the current schema, which
// SQLAlchemy's has_table DESCRIBEs `db`.`t` in, a missing table 1146.
func TestMySQLClientsCatalogOnPostgreSQL(t *testing.T) {
	maria := mariaWants(t)
	for _, client := range sessionClients {
		t.Run(client, func(t *testing.T) {
			f := pgCluster(t)
			steps := []sessionStep{
				{SQL: pgCompatDDL, want: `"affected 0"`},
				{SQL: "SHOW FULL TABLES", want: maria["SHOW FULL TABLES"]},
				{SQL: "SHOW TABLES LIKE 'compat\\_%'", want: `[["compat_t"]]`},
				{SQL: "SHOW COLUMNS FROM compat_t", want: maria["SHOW COLUMNS FROM compat_t"]},
				{SQL: "SHOW COLUMNS FROM compat_t LIKE '_'", want: maria["SHOW COLUMNS FROM compat_t LIKE '_'"]},
				{SQL: "DESCRIBE compat_t", want: maria["DESCRIBE compat_t"]},
				{SQL: "SHOW CREATE TABLE compat_t", want: maria["SHOW CREATE TABLE compat_t"]},
				{SQL: "SHOW COLUMNS FROM no_such_t", want: maria["SHOW COLUMNS FROM no_such_t"]},
				{SQL: "SELECT DATABASE()", want: `[["public"]]`},
				{SQL: "DESCRIBE `public`.`compat_t`", want: maria["DESCRIBE compat_t"]},
				{SQL: "DESCRIBE `public`.`no_such_t`", want: "error 1146"},
				{SQL: "SHOW EVENTS", want: "error 1235"}, // PostgreSQL has triggers and routines: not listed as none
				{SQL: "SELECT 1 AS still_usable", want: `[["1"]]`},
			}
			runSession(t, client, f.addr, "", steps)
		})
	}
}

// TestSQLAlchemyReflectsPostgreSQLThroughMySQL: SQLAlchemy's MySQL dialect (PyMySQL) connects
// to a PostgreSQL cluster and reflects a table as an ORM does at startup: its default schema,
// has_table true and false, the table names, the columns with their types and the primary key.
func TestSQLAlchemyReflectsPostgreSQLThroughMySQL(t *testing.T) {
	py := frontendtest.PythonWith(t, "sqlalchemy, pymysql")
	f := pgCluster(t, pgCompatDDL)
	host, port, _ := net.SplitHostPort(f.addr)
	out, err := exec.Command(py, "testdata/sqlalchemy_reflect.py", host, port, testUser, "public").CombinedOutput()
	if err != nil {
		t.Fatalf("sqlalchemy: %v\n%s", err, out)
	}
	const want = `{"default_schema": "public", "has_compat_t": true, "has_no_such_t": false, "tables": ["compat_t"], ` +
		`"columns": [["id", "BIGINT", false], ["n", "INTEGER", false], ["d", "DECIMAL(10, 2)", true], ["f", "DOUBLE", true], ` +
		`["b", "TINYINT", true], ["dt", "DATE", true], ["u", "INTEGER", true]], "pk": ["id"]}`
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("sqlalchemy reflected\n %s\nwant\n %s", got, want)
	}
}

// TestMariaDBCLICatalogOnPostgreSQL: the mariadb CLI's SHOW TABLES, DESCRIBE and SHOW CREATE
// TABLE on a PostgreSQL cluster, and its error line for a missing table.
func TestMariaDBCLICatalogOnPostgreSQL(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb CLI not installed")
	}
	f := pgCluster(t, pgCompatDDL)
	host, port, _ := net.SplitHostPort(f.addr)
	run := func(sql string) string {
		out, _ := exec.Command(cli, "-h", host, "-P", port, "--protocol=tcp", "--skip-ssl", "-u", testUser, "-N", "-B", "-e", sql).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	for sql, want := range map[string]string{
		"SHOW TABLES":                          "compat_t",
		"DESCRIBE compat_t":                    "id\tbigint(20)\tNO\tPRI\tNULL\t\nn\tint(11)\tNO\t\t3\t\nd\tdecimal(10,2)\tYES\t\tNULL\t\nf\tdouble\tYES\t\tNULL\t\nb\ttinyint(1)\tYES\t\tNULL\t\ndt\tdate\tYES\t\tNULL\t\nu\tint(11)\tYES\tUNI\tNULL\t",
		"SHOW COLUMNS FROM compat_t LIKE 'd%'": "d\tdecimal(10,2)\tYES\t\tNULL\t\ndt\tdate\tYES\t\tNULL\t",
		"DESCRIBE no_such_t":                   "ERROR 1146 (42S02) at line 1: Table 'no_such_t' doesn't exist",
		"SHOW DATABASES LIKE 'publ%'":          "public",
	} {
		if got := run(sql); !strings.HasSuffix(got, strings.TrimSpace(want)) { // an error comes after the statement's echo
			t.Errorf("mariadb -e %q:\n%s\nwant\n%s", sql, got, want)
		}
	}
}
