package fleettest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A control-plane replica started after a worker registered at another one, while that worker
// runs a query under a lease, leaves the worker and its lease alone: it reads the worker's
// heartbeats from the shared registry. Before, it evicted the worker after staleAfter +
// evictGrace and revoked the lease, and the engine terminated the query (57P01).
func TestLateReplicaLeavesAnotherReplicasWorkerAlone(t *testing.T) {
	engineURL, db := engineDatabases(t)
	coordination := "coordination: {mode: controlPlane, leaseTtlSecs: 8, driftMarginSecs: 1, sweepEverySecs: 1}"
	a := startEngineControlPlane(t, engineURL, db, coordination, 3, 120)
	addr, _ := startPGWorker(t, "wa", a.apiAddr, coordination, "")
	awaitPG(t, addr)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, "postgres://queryflux@"+addr+"/pg?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })

	// Long enough for B to see wa silent past staleAfter + evictGrace several times over.
	long := 5*(staleAfter+evictGrace) + 2*time.Second
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, fmt.Sprintf("SELECT pg_sleep(%g)", long.Seconds()))
		done <- err
	}()
	time.Sleep(heartbeat) // the query holds its lease
	b := startEngineControlPlane(t, engineURL, db, coordination, 3, 120)
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
