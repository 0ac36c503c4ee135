package querynode

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

func loopbackFrontends() config.Frontends {
	return config.Frontends{
		Postgres:  config.Frontend{Enabled: true, Listen: "127.0.0.1:0"},
		MySQL:     config.Frontend{Enabled: true, Listen: "127.0.0.1:0"},
		Trino:     config.Frontend{Enabled: true, Listen: "127.0.0.1:0"},
		FlightSQL: config.Frontend{Enabled: true, Listen: "127.0.0.1:0"},
	}
}

// The frontends listen before any configuration, answer "not configured yet" (at once: this
// node holds nothing for its first configuration, StartWait < 0), and serve the demo dataset
// once the embedded default is applied; every query reaches OnFinish.
func TestNotConfiguredThenDemo(t *testing.T) {
	finished := make(chan proxy.Record, 16)
	n := New(Options{OpenEngine: EngineFactory(Engines()), Env: env.Real(slog.New(slog.DiscardHandler)), OnFinish: func(r *proxy.Record) { finished <- *r },
		StartWait: -1})
	t.Cleanup(func() { _ = n.Close() })
	if err := n.Listen(loopbackFrontends()); err != nil {
		t.Fatal(err)
	}
	addrs := n.Addrs()
	if len(addrs) != 4 {
		t.Fatalf("want 4 frontends listening, got %v", addrs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "postgres://queryflux@" + addrs["postgres"] + "/demo?sslmode=disable"

	conn, err := pgx.Connect(ctx, url)
	if err == nil {
		var v int
		err = conn.QueryRow(ctx, "select 1").Scan(&v)
		_ = conn.Close(ctx)
	}
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "not configured") {
		t.Fatalf("before the first configuration: want a 'not configured' error, got %v", err)
	}

	cfg, err := defaultconfig.Load(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var orders int64
	if err := conn.QueryRow(ctx, "select count(*) from orders").Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if orders != 500 {
		t.Fatalf("demo orders: %d, want 500", orders)
	}
	for {
		select {
		case r := <-finished:
			if r.Status == proxy.StatusSucceeded && r.Cluster == "demo" {
				return
			}
		case <-ctx.Done():
			t.Fatal("no succeeded record on cluster demo reached OnFinish")
		}
	}
}

// A re-applied configuration keeps the engine (and so the in-memory data) of an unchanged cluster.
func TestReapplyKeepsUnchangedEngine(t *testing.T) {
	opened := 0
	n := New(Options{Env: env.Real(slog.New(slog.DiscardHandler)), OpenEngine: func(c config.Cluster) (query.Engine, error) {
		opened++
		return EngineFactory(Engines())(c)
	}})
	t.Cleanup(func() { _ = n.Close() })
	for range 2 {
		cfg, err := defaultconfig.Load(0)
		if err != nil {
			t.Fatal(err)
		}
		// With every engine linked in, as a worker's config sync compiles a snapshot.
		if err := config.Compile(cfg); err != nil {
			t.Fatalf("the embedded default does not compile with the engines' checks: %v", err)
		}
		if err := n.Apply(cfg); err != nil {
			t.Fatal(err)
		}
	}
	if opened != 1 {
		t.Fatalf("engine opened %d times over two identical configurations, want 1", opened)
	}
	bad, _ := defaultconfig.Load(0)
	bad.Clusters[0].Options = map[string]string{defaultconfig.OptionDataset: "nope"}
	if err := n.Apply(bad); err == nil || !strings.Contains(err.Error(), "dataset") {
		t.Fatalf("an unknown dataset should be refused by name, got %v", err)
	}
	if !n.Core().Ready() {
		t.Fatal("a refused configuration must leave the previous one active")
	}
}
