package fleettest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// A control-plane replica started after a worker registered at another one, while that worker
// runs a query under a lease, leaves the worker and its lease alone: it reads the worker's
// heartbeats from the shared registry. Before, it evicted the worker after staleAfter +
// evictGrace and revoked the lease, and the engine terminated the query (57P01).
func TestLateReplicaLeavesAnotherReplicasWorkerAlone(t *testing.T) {
	engineURL, db := engineDatabases(t)
	coordination := "coordination: {mode: controlPlane, leaseTtlSecs: 8, driftMarginSecs: 1, sweepEverySecs: 1}"
	replica := func() *fleet {
		f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
		f.cpConfig = engineControlPlane(t, f, engineURL, db, coordination, 3, 120, "")
		f.startControlPlane()
		return f
	}
	a := replica()
	addrs := daemontest.FreeAddrs(t, 2)
	cfg := daemontest.WriteFile(t, "wa.yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: "http://%s", secret: %q}
  %s
  frontends:
    postgres: {enabled: true, listen: %q}
`, a.apiAddr, workerSecret, coordination, addrs[0]))
	daemontest.Start(t, "wa", "serve", "--config", cfg, "--name", "wa", "--ops-listen", addrs[1],
		"--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts")
	ctx := context.Background()
	var c *pgx.Conn
	daemontest.EventuallyNil(t, 30*time.Second, func() (err error) {
		if c, err = pgx.Connect(ctx, "postgres://queryflux@"+addrs[0]+"/pg?sslmode=disable&connect_timeout=5"); err != nil {
			return err
		}
		return c.QueryRow(ctx, "SELECT 1").Scan(new(int))
	})
	t.Cleanup(func() { c.Close(context.Background()) })

	// Long enough for B to see wa silent past staleAfter + evictGrace several times over.
	long := 5*(staleAfter+evictGrace) + 2*time.Second
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, fmt.Sprintf("SELECT pg_sleep(%g)", long.Seconds()))
		done <- err
	}()
	time.Sleep(heartbeat) // the query holds its lease
	b := replica()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wa's query under A's lease, once replica B started: %v", err)
		}
	case <-time.After(long + time.Minute):
		t.Fatal("wa's query did not end")
	}
	if w, ok := b.workers()["wa"]; !ok || !w.Online {
		t.Fatalf("wa as replica B sees it: %+v", w)
	}
}
