package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/querynode"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// A client's database must name something: a group, a cluster or a cluster's engine database.
// Any other name is refused as PostgreSQL refuses it (FATAL 3D000), once the client has
// authenticated; it is never silently replaced by the routers' choice.
func TestUnknownDatabaseIsRefused(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	engineDB := strings.TrimPrefix(u.Path, "/")
	cfg, err := config.Parse(fmt.Appendf(nil, `
clusters:
  - {name: pg, engine: postgres, endpoint: %q, maxRunningQueries: 4}
clusterGroups:
  - {name: reporting, members: [pg]}
routers:
  - {type: protocolBased, postgres: reporting}
routingFallback: reporting
`, dbURL))
	if err != nil {
		t.Fatal(err)
	}
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
	rt, err := proxy.Build(cfg, querynode.EngineFactory(querynode.Engines()))
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	users := pgwire.NewStaticUsers(map[string]string{"alice": "s3cret"}, true)
	addr := startServer(t, core, pgwire.Options{Authenticator: users})

	connect := func(user, password, db string) error {
		conn, err := tryConnect(fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", user, password, addr, db))
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		var got string
		if err := conn.QueryRow(context.Background(), "select current_database()").Scan(&got); err != nil {
			return err
		}
		if got != engineDB {
			return fmt.Errorf("current_database() = %q, want the engine's %q", got, engineDB)
		}
		return nil
	}
	for _, db := range []string{"reporting", "pg", engineDB} {
		if err := connect("alice", "s3cret", db); err != nil {
			t.Errorf("database %q: %v", db, err)
		}
	}
	var pe *pgconn.PgError
	err = connect("alice", "s3cret", "nonexistent_db")
	if !errors.As(err, &pe) || pe.Code != "3D000" || pe.Severity != "FATAL" || pe.Message != `database "nonexistent_db" does not exist` {
		t.Errorf("unknown database: want FATAL 3D000 database \"nonexistent_db\" does not exist, got %v", err)
	}
	// Not before authentication: a wrong password learns nothing about databases.
	err = connect("alice", "wrong", "nonexistent_db")
	if !errors.As(err, &pe) || pe.Code != "28P01" {
		t.Errorf("wrong password to an unknown database: want 28P01, got %v", err)
	}

	// psql says what PostgreSQL says.
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("psql", "-X", "-At", "-h", host, "-p", port, "-U", "alice", "-d", "nonexistent_db", "-c", "select 1")
	cmd.Env = append(cmd.Environ(), "PGPASSWORD=s3cret", "PGSSLMODE=disable")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `FATAL:  database "nonexistent_db" does not exist`) {
		t.Errorf("psql to an unknown database: %v %s", err, out)
	}
}
