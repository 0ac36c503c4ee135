package pgwire_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// ownRoleAndDatabase creates a login role that is no superuser and a database it owns, as an
// engine user of its own cluster would be; both are dropped when t ends. It returns the role's
// name and a URL that logs in as it.
func ownRoleAndDatabase(t *testing.T) (role, roleURL string) {
	t.Helper()
	ctx := context.Background()
	admin := connect(t, pgtest.ServerURL())
	role, db := pgtest.NewName("qf_rt_role_"), pgtest.NewName("qf_test_")
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the database's drop (cleanups run last first), on a connection still open
		if _, err := admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role); err != nil {
			t.Errorf("dropping role %s: %v", role, err)
		}
	})
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db+" OWNER "+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pgtest.Drop(db); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.User, u.Path = url.User(role), "/"+db
	return role, u.String()
}

// TestClientCannotChangeTheSharedEngineUser: the engine role here is no superuser and owns its
// database, as a cluster's engine user should. PostgreSQL lets it set its own and its
// database's session defaults and its own password (the direct connection shows it): through
// the proxy, Bob's `ALTER ROLE CURRENT_USER SET statement_timeout = '1ms'` would cancel every
// statement of every engine connection opened after it, every client's, and a new password
// would keep the proxy out of its engine. On the passthrough and the Arrow path and in every
// pgx mode, these are refused with 42501, and the engine role's settings stay as they were.
func TestClientCannotChangeTheSharedEngineUser(t *testing.T) {
	ctx := context.Background()
	role, roleURL := ownRoleAndDatabase(t)
	cfg, err := pgx.ParseConfig(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := cfg.Database
	direct := connect(t, roleURL)
	for _, sql := range []string{"alter role current_user set work_mem = '1MB'", "alter role current_user reset work_mem",
		"alter database " + dbName + " set work_mem = '1MB'", "alter database " + dbName + " reset work_mem"} {
		if _, err := direct.Exec(ctx, sql); err != nil {
			t.Fatalf("the engine role cannot %q (the test needs one that can): %v", sql, err)
		}
	}

	e, err := pgengine.Open(engine.Spec{Name: "own", Kind: pgengine.Kind, Endpoint: roleURL, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	attacks := []string{
		"alter role current_user set statement_timeout = '1ms'",
		"ALTER ROLE " + role + " SET default_transaction_read_only = on",
		`alter user "` + role + `" password 'taken-over'`,
		"alter database " + dbName + " set statement_timeout = '1ms'",
		"ALTER DATABASE " + dbName + " WITH CONNECTION LIMIT 0",
		"revoke all on schema public from current_user",
		"do $$ begin execute 'alter role current_user set statement_timeout = 1'; end $$",
		"do $$ begin alter role current_user set statement_timeout = 1; end $$",
	}
	for _, noPassthrough := range []bool{false, true} {
		core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
		rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
			Clusters:      []proxy.ClusterSpec{{Name: "own", Enabled: true, MaxRunningQueries: 4, Engine: e}},
			Groups:        []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "own"}}, MaxQueuedQueries: 100}},
			Fallback:      "main",
			NoPassthrough: noPassthrough,
		})
		if err != nil {
			t.Fatal(err)
		}
		core.Activate(rt)
		bob := connect(t, proxyURL(startServer(t, core, pgwireTrustAll()), "bob"))
		for _, attack := range attacks {
			for mode, m := range pgxModes {
				_, err := bob.Exec(ctx, attack, m)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "42501" {
					t.Errorf("passthrough %v, %s %q: %v, want refused with 42501", !noPassthrough, mode, attack, err)
				}
			}
		}
		var n int
		if err := bob.QueryRow(ctx, "select 40 + 2").Scan(&n); err != nil || n != 42 {
			t.Fatalf("bob's query after the refusals: %d %v", n, err)
		}
	}

	fresh := connect(t, roleURL) // a new engine connection, as every client's next one
	var timeout, readOnly string
	var settings int
	if err := fresh.QueryRow(ctx, "select current_setting('statement_timeout'), current_setting('default_transaction_read_only'), "+
		"(select count(*) from pg_db_role_setting s left join pg_roles r on r.oid = s.setrole where r.rolname = $1 or s.setdatabase = "+
		"(select oid from pg_database where datname = current_database()))", role).Scan(&timeout, &readOnly, &settings); err != nil {
		t.Fatalf("a new engine connection after the attacks: %v", err)
	}
	if timeout != "0" || readOnly != "off" || settings != 0 {
		t.Errorf("after the attacks a new engine connection has statement_timeout %s, default_transaction_read_only %s, and %d role or database settings; want 0, off, 0",
			timeout, readOnly, settings)
	}
}
