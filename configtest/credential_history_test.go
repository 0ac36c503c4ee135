package configtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestPasswordInAStatementNeverReachesHistory: a client sets an engine password through the
// proxy in a form its protocol reads otherwise than the engine: PostgreSQL wire (pgx, simple
// protocol) to a MariaDB cluster, ALTER USER ... IDENTIFIED BY "..." (a string to MariaDB, a
// name to PostgreSQL), and go-sql-driver through the MySQL frontend to a PostgreSQL
// cluster, ALTER ROLE ... PASSWORD $$...$$ (a string to PostgreSQL, words to MySQL). Both
// succeed on the engines (the user logs in with the new password), and the standalone
// daemon's query history (GET /admin/queries, the default maskLiterals) and its log hold no
// part of the password.
func TestPasswordInAStatementNeverReachesHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	const secret = "Zq-s3cretWord"
	const user = "qf_rt_pw"
	dataDB := pgtest.NewDatabase(t)
	du, err := url.Parse(dataDB)
	if err != nil {
		t.Fatal(err)
	}
	dataName := strings.TrimPrefix(du.Path, "/")
	maria, err := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { maria.Close() }) // registered first, so it runs after the drops below
	pg, err := pgx.Connect(context.Background(), dataDB)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	// The client's database is passed to the engine: MariaDB gets one of the same name.
	for _, stmt := range []string{"DROP USER IF EXISTS " + user + "@'%'", "CREATE USER " + user + "@'%'", "CREATE DATABASE IF NOT EXISTS `" + dataName + "`"} {
		if _, err := maria.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, stmt := range []string{"DROP USER IF EXISTS " + user + "@'%'", "DROP DATABASE IF EXISTS `" + dataName + "`"} {
			if _, err := maria.Exec(stmt); err != nil {
				t.Errorf("cleaning MariaDB up: %v", err)
			}
		}
	})
	for _, stmt := range []string{"DROP ROLE IF EXISTS " + user, "CREATE ROLE " + user + " LOGIN"} {
		if _, err := pg.Exec(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dataDB)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP ROLE IF EXISTS "+user)
			c.Close(context.Background())
		}
	})

	dir := t.TempDir()
	api, pgAddr, myAddr := daemontest.FreeAddr(t), daemontest.FreeAddr(t), daemontest.FreeAddr(t)
	file := filepath.Join(dir, "standalone.yaml")
	writeFile(t, file, fmt.Sprintf(`queryflux:
  adminApi: {listen: %q, token: "rt-admin-token"}
  frontends: {postgres: {enabled: true, listen: %q}, mysql: {enabled: true, listen: %q}}
clusters:
  pg: {engine: postgres, endpoint: "127.0.0.1:5432", database: %q, credentials: {user: postgres}, maxRunningQueries: 2}
  maria: {engine: mysql, endpoint: "127.0.0.1:3306", credentials: {user: root}, maxRunningQueries: 2}
clusterGroups: [{name: pg, members: [pg]}, {name: maria, members: [maria]}]
routers: [{type: queryRegex, regex: "qf_rt_maria", group: maria}]
routingFallback: pg
settings: {security: {trustLoopback: true}}
`, api, pgAddr, myAddr, dataName))
	ps := &procs{}
	d := ps.startEnv(t, nil, "rt-history", append([]string{"serve", "--config", file}, logLevelArgs(t)...)...)
	daemontest.Eventually(t, 20*time.Second, "the standalone serving", func() bool {
		if d.Exited() {
			t.Fatalf("standalone exited:\n%s", daemontest.Tail(d.Output(), 3000))
		}
		code, _, _ := daemontest.Call("GET", "http://"+api+"/admin/queries", "rt-admin-token", "", nil)
		return code == 200
	})

	// PostgreSQL wire to MariaDB.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://alice@%s/%s?sslmode=disable", pgAddr, dataName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ALTER USER qf_rt_pw@'%' IDENTIFIED BY "`+secret+`" /* qf_rt_maria */`, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("ALTER USER through PostgreSQL wire: %v", err)
	}
	c.Close(ctx)
	// MySQL wire to PostgreSQL.
	my, err := sql.Open("mysql", (&gomysql.Config{User: "alice", Net: "tcp", Addr: myAddr, DBName: dataName, AllowNativePasswords: true}).FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	if _, err := my.Exec(`ALTER ROLE qf_rt_pw PASSWORD $$` + secret + `$$`); err != nil {
		t.Fatalf("ALTER ROLE through MySQL wire: %v", err)
	}

	// The engines took the password: the user logs in with it.
	direct, err := sql.Open("mysql", user+":"+secret+"@tcp(127.0.0.1:3306)/")
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if err := direct.Ping(); err != nil {
		t.Fatalf("MariaDB did not take the password: %v", err)
	}
	if pc, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s:%s@127.0.0.1:5432/%s?sslmode=disable", user, secret, dataName)); err != nil {
		t.Logf("PostgreSQL login with the new password: %v (pg_hba may trust loopback)", err)
	} else {
		pc.Close(ctx)
	}

	var body string
	daemontest.Eventually(t, 20*time.Second, "both statements in history", func() bool {
		_, _, body = daemontest.Call("GET", "http://"+api+"/admin/queries", "rt-admin-token", "", nil)
		low := strings.ToLower(body)
		return strings.Contains(low, "alter user") && strings.Contains(low, "alter role")
	})
	for where, text := range map[string]string{"GET /admin/queries": body, "the daemon's log": d.Output()} {
		low := strings.ToLower(text)
		if strings.Contains(low, "zq") || strings.Contains(low, "cretword") {
			t.Errorf("%s holds the password: %s", where, excerpt(low, "cretword"))
		}
	}
}

func excerpt(s, near string) string {
	i := strings.Index(s, near)
	if i < 0 {
		i = strings.Index(s, "zq")
	}
	return s[max(0, i-120):min(len(s), i+60)]
}
