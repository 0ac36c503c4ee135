package mysqlwire

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// What MySQL clients and ORMs ask at connect and for reflection, answered on the embedded
// DuckDB as MySQL answers it: the frontend's own answers (SHOW VARIABLES, SHOW COLLATION,
// VERSION(), USER(), CONNECTION_ID(), @@name in any statement) and the DuckDB translation's
// (SHOW TABLES, SHOW COLUMNS, DESCRIBE, SHOW CREATE TABLE, SHOW INDEX, LAST_INSERT_ID(), UNIX_TIMESTAMP(),
// LIMIT ?, ?). Where the answer is not the engine's own, MariaDB's is the want.

// compatDDL is a table whose columns DuckDB and MariaDB both hold with one MySQL type each.
const compatDDL = "CREATE TABLE compat_t (id BIGINT PRIMARY KEY, n INT NOT NULL DEFAULT 3, d DECIMAL(10,2), f DOUBLE, b BOOLEAN, dt DATE, u INT UNIQUE)"

// mariaWants are MariaDB's answers to the catalog statements on compatDDL's table, as the
// session scripts print them (SHOW CREATE TABLE with its ENGINE=... options, which the
// proxy's DuckDB writes as MariaDB's).
func mariaWants(t *testing.T) map[string]string {
	f := coreServer(t, coreSetup{})
	ctx := context.Background()
	if _, err := f.direct.ExecContext(ctx, compatDDL); err != nil {
		t.Fatal(err)
	}
	wants := map[string]string{}
	for _, q := range []string{"SHOW COLUMNS FROM compat_t", "DESCRIBE compat_t", "SHOW FULL TABLES", "SHOW CREATE TABLE compat_t",
		"SHOW COLUMNS FROM compat_t LIKE '_'", "SELECT LAST_INSERT_ID()", "SELECT UNIX_TIMESTAMP('2020-01-01 00:00:00')",
		"SHOW COLLATION LIKE 'utf8mb4_general_ci'", "SHOW CHARACTER SET LIKE 'utf8mb4'", "SHOW COLUMNS FROM no_such_t",
		"SHOW INDEX FROM compat_t", "SHOW KEYS FROM compat_t WHERE Key_name = 'u'", "SHOW INDEX FROM no_such_t"} {
		rows, err := f.direct.QueryContext(ctx, q)
		if err != nil {
			wants[q] = mysqlErrno(err)
			continue
		}
		vals, err := frontendtest.ScanAll(rows)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(stringCells(vals))
		wants[q] = string(b)
	}
	return wants
}

// TestMySQLClientsCatalogOnDuckDB: each client library (go-sql-driver, PyMySQL, mysqlclient,
// mysql2) connects to the embedded DuckDB and asks what ORMs and tools ask: every answer is
// MariaDB's where the engine's catalog is the answer, and the proxy's session's own elsewhere.
func TestMySQLClientsCatalogOnDuckDB(t *testing.T) {
	maria := mariaWants(t)
	for _, client := range sessionClients {
		t.Run(client, func(t *testing.T) {
			eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			f := serveCore(t, "duck", eng, coreSetup{})
			me := fmt.Sprintf(`"%s@127.0.0.1"`, testUser)
			steps := []sessionStep{
				{SQL: compatDDL, want: `"affected 0"`},
				{SQL: "SHOW VARIABLES LIKE 'sql_mode'", want: `[["sql_mode","STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"]]`},
				{SQL: "SHOW SESSION VARIABLES LIKE 'lower_case_table_names'", want: `[["lower_case_table_names","0"]]`},
				{SQL: "SHOW VARIABLES WHERE Variable_name = 'autocommit' OR Variable_name IN ('time_zone', 'no_such')", want: `[["autocommit","ON"],["time_zone","SYSTEM"]]`},
				{SQL: "SELECT @@tx_isolation, @@transaction_isolation", want: `[["REPEATABLE-READ","REPEATABLE-READ"]]`},
				{SQL: "/* connector */ SELECT @@session.auto_increment_increment AS auto_increment_increment, @@sql_mode AS sql_mode, 1 + 1 AS two", want: `[["1","STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION","2"]]`},
				{SQL: "SELECT VERSION(), @@version, concat('v', VERSION()) AS v", want: `[["8.0.11-queryflux","8.0.11-queryflux","v8.0.11-queryflux"]]`},
				{SQL: "SELECT USER(), CURRENT_USER(), SESSION_USER()", want: "[[" + me + "," + me + "," + me + "]]"},
				{SQL: "SELECT CONNECTION_ID() > 0", want: `[["1"]]`},
				{SQL: "SHOW COLLATION LIKE 'utf8mb4_general_ci'", want: maria["SHOW COLLATION LIKE 'utf8mb4_general_ci'"]},
				{SQL: "SHOW CHARACTER SET LIKE 'utf8mb4'", want: maria["SHOW CHARACTER SET LIKE 'utf8mb4'"]},
				{SQL: "SHOW FULL TABLES", want: maria["SHOW FULL TABLES"]},
				{SQL: "SHOW TABLES LIKE 'compat\\_%'", want: `[["compat_t"]]`},
				{SQL: "SHOW DATABASES", want: `[["duck"]]`},
				{SQL: "SHOW COLUMNS FROM compat_t", want: maria["SHOW COLUMNS FROM compat_t"]},
				{SQL: "SHOW COLUMNS FROM compat_t LIKE '_'", want: maria["SHOW COLUMNS FROM compat_t LIKE '_'"]},
				{SQL: "DESCRIBE compat_t", want: maria["DESCRIBE compat_t"]},
				{SQL: "SHOW CREATE TABLE compat_t", want: maria["SHOW CREATE TABLE compat_t"]},
				{SQL: "SHOW COLUMNS FROM no_such_t", want: maria["SHOW COLUMNS FROM no_such_t"]},
				{SQL: "SHOW INDEX FROM compat_t", want: maria["SHOW INDEX FROM compat_t"]},
				{SQL: "SHOW KEYS FROM compat_t WHERE Key_name = 'u'", want: maria["SHOW KEYS FROM compat_t WHERE Key_name = 'u'"]},
				{SQL: "SHOW INDEX FROM no_such_t", want: maria["SHOW INDEX FROM no_such_t"]},
				{SQL: "SELECT LAST_INSERT_ID()", want: maria["SELECT LAST_INSERT_ID()"]},
				{SQL: "SELECT UNIX_TIMESTAMP('2020-01-01 00:00:00')", want: maria["SELECT UNIX_TIMESTAMP('2020-01-01 00:00:00')"]},
				{SQL: "SELECT UNIX_TIMESTAMP() > 1700000000", want: `[["1"]]`},
				{SQL: "SELECT x FROM range(10) t(x) WHERE x >= ? ORDER BY x LIMIT ?, ?", Params: []any{1, 2, 3}, Prepared: true, want: `[["3"],["4"],["5"]]`},
				{SQL: "SELECT x FROM range(10) t(x) ORDER BY x LIMIT ?, 2", Params: []any{7}, Prepared: true, want: `[["7"],["8"]]`},
				{SQL: "SHOW PLUGINS", want: "error 1235"},
				{SQL: "SELECT 1 AS still_usable", want: `[["1"]]`},
			}
			runSession(t, client, f.addr, "", steps)
		})
	}
}

// TestMySQLSessionValuesAsMariaDB: the values the frontend answers for the session mean what
// MariaDB's mean: CONNECTION_ID() is the id KILL takes (another connection's KILL QUERY of it
// succeeds, of another id fails with 1094), SHOW VARIABLES lists the values SELECT @@name
// answers, and a statement relayed to MariaDB (passthrough) gets the proxy's VERSION(), USER()
// and CONNECTION_ID() too, as @@version is the proxy's there.
func TestMySQLSessionValuesAsMariaDB(t *testing.T) {
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	f := serveCore(t, "duck", eng, coreSetup{})
	d := openDB(t, f.addr, testUser, "", "", "")
	a, b := oneConn(t, d), oneConn(t, d)
	ctx := context.Background()
	var id int64
	if err := a.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id)); err != nil {
		t.Errorf("KILL QUERY CONNECTION_ID() of another session: %v", err)
	}
	if _, err := b.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id+1000)); mysqlErrno(err) != "error 1094" {
		t.Errorf("KILL QUERY of an id no session has: %v, want error 1094", err)
	}
	// The columns' names are MySQL's: the item as written, or its alias.
	const named = "SELECT VERSION(), @@version, CONNECTION_ID() AS id, USER(), @@session.time_zone, (SELECT VERSION()) AS sub"
	direct := coreServer(t, coreSetup{}).direct
	for _, db := range []interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	}{direct, a} {
		rows, err := db.QueryContext(ctx, named)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		rows.Close()
		if want := []string{"VERSION()", "@@version", "id", "USER()", "@@session.time_zone", "sub"}; err != nil || !slices.Equal(cols, want) {
			t.Errorf("%s: columns %q (%v), want %q", named, cols, err, want)
		}
	}
	// Relayed to MariaDB (passthrough, on the event loop or off it), the same values.
	maria := coreServer(t, coreSetup{})
	mc := oneConn(t, openDB(t, maria.addr, testUser, "", maria.dbName, ""))
	for range 3 { // the loop hands a rewritten statement to the session's goroutine: each time
		var version, user string
		var id int64
		if err := mc.QueryRowContext(ctx, "SELECT VERSION(), USER(), CONNECTION_ID()").Scan(&version, &user, &id); err != nil ||
			version != "8.0.11-queryflux" || user != testUser+"@127.0.0.1" || id <= 0 {
			t.Errorf("through MariaDB: VERSION() %q, USER() %q, CONNECTION_ID() %d (%v)", version, user, id, err)
		}
	}
	rows, err := a.QueryContext(ctx, "SHOW VARIABLES")
	if err != nil {
		t.Fatal(err)
	}
	vals, err := frontendtest.ScanAll(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) < 20 {
		t.Fatalf("SHOW VARIABLES: %d rows", len(vals))
	}
	for _, r := range vals {
		name, value := string(r[0].([]byte)), string(r[1].([]byte))
		var direct string
		if shownOnOff[name] { // SHOW VARIABLES shows a boolean as ON or OFF, SELECT @@name as 1 or 0
			value = map[string]string{"ON": "1", "OFF": "0"}[value]
		}
		if err := a.QueryRowContext(ctx, "SELECT @@"+name).Scan(&direct); err != nil || direct != value {
			t.Errorf("SHOW VARIABLES says %s = %q, SELECT @@%s %q (%v)", name, value, name, direct, err)
		}
	}
}

// TestMySQLSessionValuesOnPostgreSQL: through the MySQL wire on a PostgreSQL cluster, what the
// frontend answers is the same (SHOW VARIABLES, VERSION(), USER(), @@name in a statement) and
// the engine runs the rest: a session value in a PostgreSQL expression is a literal there.
func TestMySQLSessionValuesOnPostgreSQL(t *testing.T) {
	f := pgCluster(t)
	me := fmt.Sprintf(`"%s@127.0.0.1"`, testUser)
	steps := []sessionStep{
		{SQL: "SHOW VARIABLES LIKE 'sql_mode'", want: `[["sql_mode","STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"]]`},
		{SQL: "SHOW COLLATION LIKE 'utf8mb4_bin'", want: `[["utf8mb4_bin","utf8mb4","46","","Yes","1"]]`},
		{SQL: "SELECT VERSION(), @@version, USER()", want: `[["8.0.11-queryflux","8.0.11-queryflux",` + me + `]]`},
		{SQL: "SELECT length(VERSION()) AS n, upper(CURRENT_USER) AS u", want: `[["16",` + strings.ToUpper(me) + `]]`},
		{SQL: "SELECT x FROM generate_series(0, 9) AS g(x) ORDER BY x LIMIT 2 OFFSET 3", want: `[["3"],["4"]]`},
	}
	for _, client := range []string{"go-sql-driver", "pymysql"} {
		t.Run(client, func(t *testing.T) { runSession(t, client, f.addr, "", steps) })
	}
}
