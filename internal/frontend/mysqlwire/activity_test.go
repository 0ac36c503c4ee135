package mysqlwire

import (
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestClientSeesOnlyItsOwnEngineThread: every client of a MariaDB cluster reaches it as the
// same engine user, and MariaDB shows a user the statements of all its threads. Alice runs a
// statement holding a secret literal; MariaDB shows it to the engine user (the direct
// connection), but Bob, through the proxy (relayed and on the Arrow path, by text and
// prepared), sees only the engine thread running his own statement in SHOW [FULL]
// PROCESSLIST and information_schema.PROCESSLIST, however named; what would show statement
// text and cannot be narrowed is refused.
func TestClientSeesOnlyItsOwnEngineThread(t *testing.T) {
	eng, dsn, name := frontendtest.MariaDB(t)
	direct, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	for _, noRelay := range []bool{false, true} {
		core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
		rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
			Clusters:      []proxy.ClusterSpec{{Name: "maria", Enabled: true, MaxRunningQueries: 8, Engine: eng}},
			Groups:        []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "maria"}}, MaxQueuedQueries: 100}},
			Fallback:      "main",
			NoPassthrough: noRelay,
		})
		if err != nil {
			t.Fatal(err)
		}
		core.Activate(rt)
		addr := startServer(t, core, Options{Users: StaticUsers{"alice": testPassword, "bob": testPassword}})
		alice := openDB(t, addr, "alice", testPassword, name, "")
		bob := openDB(t, addr, "bob", testPassword, name, "")
		done := make(chan error, 1)
		go func() {
			_, err := alice.Exec("SELECT SLEEP(2), 'qf-secret-token-4711'")
			done <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		var n int
		for direct.QueryRow(`SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE CONCAT('%qf-secret-', 'token%')`).Scan(&n); n == 0; direct.QueryRow(`SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE CONCAT('%qf-secret-', 'token%')`).Scan(&n) {
			if time.Now().After(deadline) {
				t.Fatal("alice's statement never reached the engine")
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, show := range []string{"SHOW PROCESSLIST", "show full processlist", "/* c */ SHOW FULL PROCESSLIST"} {
			for _, prepared := range []bool{false, true} {
				rows := processlistRows(t, bob, show, prepared)
				if len(rows) != 1 || !strings.Contains(rows[0], "SELECT ID AS Id") {
					t.Errorf("relay %v, prepared %v, %q: %q, want only bob's own thread", !noRelay, prepared, show, rows)
				}
			}
		}
		for _, q := range []string{
			"SELECT info FROM information_schema.processlist",
			"select p.INFO from `INFORMATION_SCHEMA`.`PROCESSLIST` p where p.COMMAND <> 'Sleep'",
			"SELECT INFO FROM INFORMATION_SCHEMA.PROCESSLIST AS x UNION ALL SELECT INFO FROM information_schema.processlist",
			"SELECT info FROM information_schema.PROCESSL\u0130ST", // MariaDB folds \u0130 to I here
		} {
			for _, prepared := range []bool{false, true} {
				rows := processlistRows(t, bob, q, prepared)
				if len(rows) == 0 || len(rows) > 2 || strings.Contains(strings.Join(rows, "|"), "qf-secret-token") {
					t.Errorf("relay %v, prepared %v, %q: %q, want only bob's own statement", !noRelay, prepared, q, rows)
				}
			}
		}
		for _, refused := range []string{
			"SHOW ENGINE INNODB STATUS", "SELECT trx_query FROM information_schema.INNODB_TRX",
			"SELECT * FROM performance_schema.events_statements_current", "SELECT * FROM sys.processlist",
			"EXECUTE IMMEDIATE 'SELECT info FROM information_schema.processlist'",
			// MariaDB prepares hex as the text it spells (EXECUTE s then runs it)
			"PREPARE s FROM 0x" + hex.EncodeToString([]byte("SELECT info FROM information_schema.processlist")),
			"EXECUTE IMMEDIATE X'" + hex.EncodeToString([]byte("SELECT info FROM information_schema.processlist")) + "'",
		} {
			var me *gomysql.MySQLError
			if _, err := bob.Exec(refused); !errors.As(err, &me) || me.Number != 1227 {
				t.Errorf("%q: %v, want refused with 1227", refused, err)
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("alice's statement: %v", err)
		}
	}
}

// processlistRows runs q (by text, or prepared) and returns each row's cells joined.
func processlistRows(t *testing.T, db *sql.DB, q string, prepared bool) []string {
	t.Helper()
	var rows *sql.Rows
	var err error
	if prepared { // COM_STMT_PREPARE, then COM_STMT_EXECUTE
		st, perr := db.Prepare(q)
		if perr != nil {
			t.Fatalf("prepare %q: %v", q, perr)
		}
		defer st.Close()
		rows, err = st.Query()
	} else {
		rows, err = db.Query(q)
	}
	if err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var cells []string
		for _, v := range vals {
			cells = append(cells, v.String)
		}
		out = append(out, strings.Join(cells, ","))
	}
	return out
}
