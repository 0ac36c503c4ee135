package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
)

// TestLeasesListAndRevoke: `queryflux leases list [--cluster]` shows the control plane's leases
// and `queryflux leases revoke` revokes one, which the sweeper then frees.
func TestLeasesListAndRevoke(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := env.Real(nil)
	cp := controlplane.New(e, controlplane.Config{WorkerSecret: "sec", AdminToken: "adm"}, registry.NewMemory())
	store := capacity.NewMemory()
	sw := controlplane.MountCapacity(e, cp, controlplane.CapacityConfig{Store: store, Locks: store, Owner: "cp"})
	srv := httptest.NewServer(cp.Handler())
	defer srv.Close()
	a, _ := store.Acquire(ctx, "pg", "edge-1", 2, time.Minute, e.Now())
	_, _ = store.Acquire(ctx, "my", "edge-2", 2, time.Minute, e.Now())
	admin := []string{"--admin-url", srv.URL, "--admin-token", "adm"}

	out, err := runCLI(t, append([]string{"leases", "list", "--cluster", "pg"}, admin...)...)
	if err != nil || !strings.Contains(out, "pg#1") || !strings.Contains(out, "edge-1") || strings.Contains(out, "my#1") {
		t.Fatalf("leases list --cluster pg: %v\n%s", err, out)
	}
	if out, err = runCLI(t, append([]string{"leases", "revoke", "pg"}, admin...)...); err == nil || !strings.Contains(err.Error(), "<cluster>#<generation>") {
		t.Fatalf("revoke of a malformed lease: %v\n%s", err, out)
	}
	if out, err = runCLI(t, append([]string{"leases", "revoke", "pg#9"}, admin...)...); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("revoke of a lease never granted: %v\n%s", err, out)
	}
	out, err = runCLI(t, append([]string{"leases", "revoke", a.ID}, admin...)...)
	if err != nil || !strings.Contains(out, "revoked pg#1 (holder edge-1)") {
		t.Fatalf("leases revoke: %v\n%s", err, out)
	}
	out, err = runCLI(t, append([]string{"leases", "list", "--cluster="}, admin...)...)
	if err != nil || !strings.Contains(out, "REVOKED") || !strings.Contains(out, "my#1") {
		t.Fatalf("leases list: %v\n%s", err, out)
	}
	if freed, err := sw.SweepOnce(ctx, time.Minute); err != nil || len(freed) != 0 {
		t.Fatalf("a revoked, unexpired lease without an engine fence was freed before its TTL: %+v %v", freed, err)
	}
}

// TestLeasesStats: `queryflux leases stats` shows each cluster's leases held (against its cap
// when the control plane knows it) and who holds them, from GET /admin/capacity/stats.
func TestLeasesStats(t *testing.T) {
	ctx := context.Background()
	e := env.Real(nil)
	cp := controlplane.New(e, controlplane.Config{WorkerSecret: "sec", AdminToken: "adm"}, registry.NewMemory())
	store := capacity.NewMemory()
	limits := func(cluster string) (int, time.Duration, bool) { return 4, time.Minute, cluster == "pg" }
	controlplane.MountCapacity(e, cp, controlplane.CapacityConfig{Store: store, Locks: store, Owner: "cp", Limits: limits})
	srv := httptest.NewServer(cp.Handler())
	defer srv.Close()
	admin := []string{"--admin-url", srv.URL, "--admin-token", "adm"}
	out, err := runCLI(t, append([]string{"leases", "stats"}, admin...)...)
	if err != nil || !strings.Contains(out, "no cluster") {
		t.Fatalf("leases stats with no lease: %v\n%s", err, out)
	}
	for _, holder := range []string{"edge-1", "edge-1", "edge-2"} {
		if _, err := store.Acquire(ctx, "pg", holder, 4, time.Minute, e.Now()); err != nil {
			t.Fatal(err)
		}
	}
	out, err = runCLI(t, append([]string{"leases", "stats", "--cluster", "pg"}, admin...)...)
	if err != nil || !regexp.MustCompile(`(?m)^pg +3/4 `).MatchString(out) || !regexp.MustCompile(`(?m)^pg +edge-1 +1 +2 `).MatchString(out) {
		t.Fatalf("leases stats: %v\n%s", err, out)
	}
	out, err = runCLI(t, append([]string{"leases", "stats", "--json"}, admin...)...)
	var st controlplane.CapacityStats
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || len(st.Clusters) != 1 || st.Clusters[0].Now.Held != 3 || len(st.Clusters[0].Leases) != 3 {
		t.Fatalf("leases stats --json: %v\n%s", err, out)
	}
}
