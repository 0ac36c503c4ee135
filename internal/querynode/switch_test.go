package querynode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
)

// switchConfig is a configuration over the local PostgreSQL whose cluster changes (a new engine)
// when edit is odd, and whose group's queue changes (the engine kept) otherwise.
func switchConfig(t *testing.T, edit int) *config.Config {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, `
clusters:
  - {name: pg, engine: postgres, endpoint: "127.0.0.1:5432", database: postgres, credentials: {user: postgres}, maxRunningQueries: %d}
  - {name: pg2, engine: postgres, endpoint: "127.0.0.1:5432", database: postgres, credentials: {user: postgres}, maxRunningQueries: %d}
clusterGroups:
  - {name: main, members: [pg, pg2], maxQueuedQueries: %d, capacityWaitTimeoutSecs: 30}
  - {name: cached, members: [%s], maxQueuedQueries: 100, capacityWaitTimeoutSecs: 30, cache: {enabled: true, ttlSecs: 1, maxBytes: 1000000}}
  - {name: sessions, members: [pg, pg2], maxQueuedQueries: 100, capacityWaitTimeoutSecs: 30, poolMode: session}
routers:
  - {type: queryRegex, regex: "cached", group: cached}
routingFallback: main
`, 2+edit%2, 2+edit%3, 100+edit, []string{"pg", "pg2"}[edit%2]))
	cfg.Settings.Security.TrustLoopback = true
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// No query fails because a configuration was activated while it ran or queued: many switches,
// some of which replace the cluster's engine, under a stream of queries and of the readers of
// the active configuration (health checks, login metadata, client hang-ups).
func TestConfigSwitchesUnderQueriesFailNone(t *testing.T) {
	n := New(Options{OpenEngine: EngineFactory(Engines()), Env: env.Real(slog.New(slog.DiscardHandler))})
	t.Cleanup(func() { _ = n.Close() })
	if err := n.Apply(switchConfig(t, 0)); err != nil {
		t.Fatal(err)
	}
	if err := n.Listen(config.Frontends{Postgres: config.Frontend{Enabled: true, Listen: "127.0.0.1:0"}}); err != nil {
		t.Fatal(err)
	}
	core := n.Core()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var failures sync.Map
	fail := func(what string, err error) { failures.LoadOrStore(what+": "+err.Error(), true) }
	var answered, relayed atomic.Int64
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				sql := fmt.Sprintf("SELECT %d, pg_sleep(0.002)", i)
				if i%2 == 1 {
					sql = fmt.Sprintf("SELECT %d AS cached, pg_sleep(0.002)", i)
				}
				req := &query.Request{SQL: sql, User: "u", Protocol: query.ProtocolTrino}
				rows, err := core.Execute(ctx, req)
				if err == nil {
					err = drain(ctx, rows)
				}
				if err != nil {
					fail("query", err)
				} else {
					answered.Add(1)
				}
			}
		}()
	}
	// PostgreSQL wire clients: their statements are relayed to the engine (passthrough), over a
	// connection kept for a transaction (group main) or for the client's whole connection
	// (group sessions), in the simple and the extended protocol.
	for i, db := range []string{"main", "sessions", "main", "sessions"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg, err := pgx.ParseConfig("postgres://queryflux@" + n.Addrs()["postgres"] + "/" + db + "?sslmode=disable")
			if err != nil {
				fail("pgwire", err)
				return
			}
			if i >= 2 {
				cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
			}
			for !stop.Load() {
				conn, err := pgx.ConnectConfig(ctx, cfg)
				if err != nil {
					fail("pgwire connect", err)
					return
				}
				for range 20 {
					var v int
					if err := conn.QueryRow(ctx, "SELECT $1::int + 0 FROM pg_sleep(0.002)", i).Scan(&v); err != nil {
						fail("pgwire "+db, err)
					} else {
						relayed.Add(1)
					}
				}
				_ = conn.Close(ctx)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			core.CheckHealth(ctx, 5*time.Second)
			core.ExtendedMetadata()
			core.LoginTimeZone()
			core.ClientClosed(query.ProtocolPostgres, "c")
		}
	}()
	for edit := 1; edit <= 60; edit++ {
		// Some statements of each kind end between two switches, whatever the machine's speed.
		a, r := answered.Load(), relayed.Load()
		for (answered.Load() < a+4 || relayed.Load() < r+4) && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		if err := n.Apply(switchConfig(t, edit)); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	failures.Range(func(k, _ any) bool { t.Error(k); return true })
	t.Logf("%d queries answered, %d PostgreSQL wire statements, over 60 switches", answered.Load(), relayed.Load())
	if ctx.Err() != nil {
		t.Fatal("the statements stalled between switches")
	}
}

// drain reads rows to their end and closes them, with the first error.
func drain(ctx context.Context, rows query.Rows) error {
	for {
		if _, err := rows.Next(ctx); err != nil {
			cerr := rows.Close()
			if errors.Is(err, io.EOF) {
				return cerr
			}
			return err
		}
	}
}
