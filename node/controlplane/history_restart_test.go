package controlplane

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/registry/pgregistry"
	"github.com/queryflux/queryflux/migrations/migratedtest"
)

// TestHistoryGateTrustsRevisionsPublishedBeforeARestart: the control plane publishes a
// configuration with cluster c-eu, then one where it is renamed c-eu2, and restarts (a new
// process: a new control plane and config server on the same PostgreSQL database), publishing
// the second again. An eu worker files a query that ran on c-eu before the switch: taken, as
// it would have been without the restart. A cluster no configuration had is still refused. The
// database holds what the gate reads, not the clusters' passwords nor the users' password
// hashes. Past givenRevisionsKept more revisions and another restart, c-eu is refused.
func TestHistoryGateTrustsRevisionsPublishedBeforeARestart(t *testing.T) {
	pool, _ := migratedtest.NewPool(t)
	start := func() *csHarness {
		h := newCSHarnessOn(t, time.Minute, pgregistry.New(pool))
		h.cp.MountHistory(history.NewMemory(100))
		return h
	}
	const password = "c-eu-engine-password-0123"
	withPassword := fmt.Sprintf("  - {name: c-secret, engine: postgres, endpoint: 'postgres://db:5432/x', credentials: {user: u, password: %s}, maxRunningQueries: 1}", password)
	h := start()
	for _, snap := range []string{"c-eu", "c-eu2"} {
		if err := h.srv.Publish(givenSnapshot(t, snap, withPassword)); err != nil {
			t.Fatal(err)
		}
	}

	h = start() // restarted
	if err := h.srv.Publish(givenSnapshot(t, "c-eu2", withPassword)); err != nil {
		t.Fatal(err)
	}
	eu := h.register("w-eu", "eu-1")
	ack := h.postHistory(eu, histRecord("q-before", "alice", "eu", "c-eu"), histRecord("q-after", "alice", "eu", "c-eu2"),
		histRecord("q-ghost", "alice", "eu", "c-ghost"), histRecord("q-us", "alice", "us", "c-us"))
	if at, _ := refusedAt(ack, ""); ack.Inserted != 2 || fmt.Sprint(at) != "[2 3]" {
		t.Fatalf("after a restart, records of the revision before it, of the current one, of a cluster never given and of the us cluster: %+v; want 0 and 1 taken", ack)
	}

	rows, _ := pool.Query(context.Background(), `SELECT gate::text FROM config_published`)
	gates, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(gates) != 2 {
		t.Fatalf("kept %d revisions (%v), want the 2 published", len(gates), err)
	}
	for _, gate := range gates {
		for _, secret := range []string{password, "6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9", "db:5432"} {
			if strings.Contains(gate, secret) {
				t.Fatalf("the kept revision holds %q: %s", secret, gate)
			}
		}
	}

	for i := range givenRevisionsKept {
		extra := withPassword + fmt.Sprintf("\n  - {name: c-pad-%d, engine: sim, maxRunningQueries: 1}", i)
		if err := h.srv.Publish(givenSnapshot(t, "c-eu2", extra)); err != nil {
			t.Fatal(err)
		}
	}
	h = start() // restarted again, publishing the last revision
	if err := h.srv.Publish(givenSnapshot(t, "c-eu2", withPassword+fmt.Sprintf("\n  - {name: c-pad-%d, engine: sim, maxRunningQueries: 1}", givenRevisionsKept-1))); err != nil {
		t.Fatal(err)
	}
	eu = h.register("w-eu", "eu-1")
	ack = h.postHistory(eu, histRecord("q-long-before", "alice", "eu", "c-eu"), histRecord("q-pad", "alice", "all", "c-pad-0"))
	if at, _ := refusedAt(ack, "not in the configuration this worker is sent"); ack.Inserted != 1 || fmt.Sprint(at) != "[0]" {
		t.Fatalf("after %d more revisions and a restart, a c-eu record and one of the oldest pad: %+v; want the c-eu one refused", givenRevisionsKept, ack)
	}
	var kept int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM config_published`).Scan(&kept); err != nil || kept != 1+givenRevisionsKept {
		t.Fatalf("the database keeps %d revisions (%v), want %d", kept, err, 1+givenRevisionsKept)
	}
}
