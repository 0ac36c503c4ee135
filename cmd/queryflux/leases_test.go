package main

import (
	"context"
	"net/http/httptest"
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
