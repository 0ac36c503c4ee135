package querytest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// TestABusyPostgreSQLClusterStaysHealthy: a standalone daemon whose one PostgreSQL slot runs a
// statement longer than the health check's first round (10 s) and its timeout (5 s). The check's
// ping must answer beside it; a second client queues for the slot and is answered when the first
// statement ends. Before, the pooled ping waited for the busy connection, timed out, the cluster
// was marked unhealthy and the second client was refused "no enabled, healthy cluster".
func TestABusyPostgreSQLClusterStaysHealthy(t *testing.T) {
	testlong.Skip(t, "internal/engine/pgengine.TestPingOfABusyEngineAnswers")
	dbURL := pgtest.NewDatabase(t)
	addrs := daemontest.FreeAddrs(t, 2)
	pg, admin := addrs[0], addrs[1]
	cfg := pgStandalone(t, admin, pg, "", dbURL, 1)
	d := startDaemon(t, nil, []string{pg, admin}, "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proxied := "postgres://queryflux@" + pg + "/main?sslmode=disable"

	long := connect(ctx, t, proxied)
	longDone := make(chan error, 1)
	go func() {
		_, err := long.Exec(ctx, "select pg_sleep(17) /* busyping_long */")
		longDone <- err
	}()
	direct := connect(ctx, t, dbURL)
	daemontest.Eventually(t, 30*time.Second, "the long statement running on the engine", func() bool {
		var n int
		err := direct.QueryRow(ctx, "select count(*) from pg_stat_activity where query like '%busyping_long%' and pid <> pg_backend_pid()").Scan(&n)
		return err == nil && n == 1
	})
	time.Sleep(15 * time.Second) // past the first check (10 s) and its timeout (5 s)

	next := connect(ctx, t, proxied)
	var v int
	if err := next.QueryRow(ctx, "select 42").Scan(&v); err != nil || v != 42 {
		t.Fatalf("a client queued behind the busy slot: %d %v", v, err)
	}
	if err := <-longDone; err != nil {
		t.Fatalf("the long statement: %v", err)
	}
	if out := d.Output(); strings.Contains(out, `"healthy":false`) || strings.Contains(out, "healthy=false") {
		t.Errorf("the busy cluster was marked unhealthy:\n%s", out)
	}
}
