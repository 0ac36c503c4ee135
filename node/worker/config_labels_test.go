package worker

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
)

func zonedSnap(t *testing.T, labels map[string]string) *snapshot.WorkerSnapshotV1 {
	t.Helper()
	cfg, err := config.Parse([]byte(`
clusters:
  - {name: c-eu, engine: sim, maxRunningQueries: 1, workerSelector: {zone: eu-1}}
  - {name: c-us, engine: sim, maxRunningQueries: 1, workerSelector: {zone: us-1}}
clusterGroups:
  - {name: eu, members: [c-eu]}
  - {name: us, members: [c-us]}
routingFallback: eu
`))
	if err != nil {
		t.Fatal(err)
	}
	full, err := snapshot.Build(cfg, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := full.For(labels)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// A snapshot filtered for other labels (a peer's, or this worker's own from before a restart
// with new labels) is refused; one filtered for the same selector verdicts is taken.
func TestSnapshotForOtherLabelsIsRefused(t *testing.T) {
	e := newCSFleet(t, time.Minute).e
	euSnap := zonedSnap(t, map[string]string{"zone": "eu-1"})
	store := &MemorySnapshotStore{}
	body, _ := snapshot.Encode(euSnap)
	_ = store.Save(body)

	usWorker := New(e, Config{ControlPlaneURL: "http://127.0.0.1:1", Secret: csSecret, Name: "w-us",
		Labels: map[string]string{"zone": "us-1"}}, &http.Client{})
	us := NewConfigSync(usWorker, ConfigSyncOptions{Store: store})
	err := us.Seed(t.Context(), euSnap, "peer", e.Now())
	if err == nil || !strings.Contains(err.Error(), `not this worker's snapshot: snapshot holds cluster "c-eu" for workers labelled {zone=eu-1}`) {
		t.Fatalf("a us worker took an eu worker's snapshot: %v", err)
	}
	us.startFromCache(t.Context(), "test")
	if cfg, _ := us.Active(); cfg != nil {
		t.Fatal("a us worker started from the snapshot it saved as an eu worker")
	}

	euWorker := New(e, Config{ControlPlaneURL: "http://127.0.0.1:1", Secret: csSecret, Name: "w-eu2",
		Labels: map[string]string{"zone": "eu-1", "rack": "r7"}}, &http.Client{})
	eu := NewConfigSync(euWorker, ConfigSyncOptions{})
	if err := eu.Seed(t.Context(), euSnap, "peer", e.Now()); err != nil {
		t.Fatalf("a worker with the same verdicts: %v", err)
	}
	cfg, _ := eu.Active()
	if len(cfg.WithheldGroups) != 1 || cfg.WithheldGroups[0].Name != "us" {
		t.Fatalf("withheld groups %v", cfg.WithheldGroups)
	}
}
