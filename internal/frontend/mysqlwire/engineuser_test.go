package mysqlwire

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/proxy"
)

// refusedByTheProxy: the proxy's own refusal, 1227 (a statement that would change the shared
// engine user) or the frontend's 1235 (SET statements it does not relay), not the engine's.
func refusedByTheProxy(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1227 || me.Number == 1235) && strings.Contains(strings.ToLower(me.Message), "queryflux")
}

// TestClientCannotChangeTheSharedEngineUser: the engine user here is a MariaDB user of its own,
// with rights on its database only, as a cluster's engine user should be. MariaDB lets any
// user set its own password (the direct connection shows it): through the proxy, Bob's SET
// PASSWORD would keep the proxy, and so every client of the cluster, out of the engine. By text
// and prepared, that and the other forms that change the engine user are refused (1227, or
// the frontend's 1235 for the SET statements it never relays), and the proxy still logs in.
func TestClientCannotChangeTheSharedEngineUser(t *testing.T) {
	dsn, name := mytest.NewDatabase(t)
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	user := pgtest.NewName("qf_rt_u_")
	for _, stmt := range []string{"CREATE USER " + user + "@'%'", "GRANT ALL ON `" + name + "`.* TO " + user + "@'%'"} {
		if _, err := admin.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP USER IF EXISTS " + user + "@'%'"); err != nil {
			t.Errorf("dropping user %s: %v", user, err)
		}
	})
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, ""
	direct, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	if _, err := direct.Exec("SET PASSWORD = PASSWORD('')"); err != nil {
		t.Fatalf("the engine user cannot set its own password (the test needs one that can): %v", err)
	}

	eng, err := mysqlengine.Open(mysqlengine.Config{Name: "own", Addr: cfg.Addr, User: user, Database: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	addr, _ := relayCore(t, eng, proxy.Limits{}, Options{Users: StaticUsers{"bob": testPassword}})
	bob := openDB(t, addr, "bob", testPassword, name, "")
	for _, attack := range []string{
		"SET PASSWORD = PASSWORD('taken-over')",
		"SET PASSWORD FOR CURRENT_USER() = PASSWORD('taken-over')",
		"SET PASSWORD FOR " + user + "@'%' = PASSWORD('taken-over')",
		"ALTER USER " + user + "@'%' IDENTIFIED BY 'taken-over'", // CURRENT_USER() is the client's user here (sessionvalues.go)
		"EXECUTE IMMEDIATE 'SET PASSWORD = PASSWORD(''taken-over'')'",
		"BEGIN NOT ATOMIC SET PASSWORD = PASSWORD('taken-over'); END",
		"SET GLOBAL max_statement_time = 0.001",
	} {
		if _, err := bob.Exec(attack); !refusedByTheProxy(err) {
			t.Errorf("%q: %v, want refused by the proxy", attack, err)
		}
		if st, err := bob.Prepare(attack); err == nil {
			_, err = st.Exec()
			st.Close()
			if !refusedByTheProxy(err) {
				t.Errorf("prepared %q: %v, want refused by the proxy", attack, err)
			}
		} else if !refusedByTheProxy(err) {
			t.Errorf("prepare of %q: %v, want refused by the proxy", attack, err)
		}
	}
	fresh, err := sql.Open("mysql", cfg.FormatDSN()) // a new engine connection, as every client's next one
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.Ping(); err != nil {
		t.Errorf("the engine user logging in with its configured password after the attacks: %v", err)
	}
}
