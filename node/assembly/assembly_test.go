package assembly

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/worker"
)

func standalone(t *testing.T) *ControlPlane {
	t.Helper()
	cfg := &config.Config{}
	cfg.QueryFlux.Role = config.RoleStandalone
	config.ApplyDefaults(cfg)
	c, err := BuildControlPlane(env.Real(slog.New(slog.DiscardHandler)), cfg, controlplane.Config{}.WithDefaults(), ControlPlaneDeps{
		Metrics: prometheus.NewRegistry(), Registry: registry.NewMemory(), History: history.NewMemory(10), OpenEngine: noEngines,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A configuration applied on a control plane (a reload) sets its history uplink's redaction
// policy: a tightened policy must not wait for a restart.
func TestControlPlaneApplySetsHistoryPolicy(t *testing.T) {
	c := standalone(t)
	cfg := &config.Config{}
	cfg.HistoryPolicy.Redaction = "metadata"
	if err := c.apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := c.Query.Uplink.Policy(); got != redact.Policy("metadata") {
		t.Fatalf("uplink policy after apply: %q, want metadata", got)
	}
}

// Without the worker API a control plane has no lease store to need, and takes none.
func TestControlPlaneWithoutWorkerAPIHasNoCapacity(t *testing.T) {
	c := standalone(t)
	if c.Sweeper != nil || c.Leases != nil || c.authority != nil {
		t.Fatal("capacity API mounted although queryflux.workerApi.enabled is false")
	}
}

// Missing required dependencies are refused by name, not a nil dereference later.
func TestBuildRefusesMissingDeps(t *testing.T) {
	e := env.Real(slog.New(slog.DiscardHandler))
	cfg := &config.Config{}
	config.ApplyDefaults(cfg)
	if _, err := BuildControlPlane(e, cfg, controlplane.Config{}, ControlPlaneDeps{}); err == nil {
		t.Fatal("a control plane without stores was built")
	}
	cfg.QueryFlux.WorkerAPI.Enabled = true
	if _, err := BuildControlPlane(e, cfg, controlplane.Config{}.WithDefaults(), ControlPlaneDeps{
		Metrics: prometheus.NewRegistry(), Registry: registry.NewMemory(), History: history.NewMemory(10), OpenEngine: noEngines,
	}); err == nil {
		t.Fatal("a control plane with the worker API but no lease store was built")
	}
	if _, err := BuildControlPlane(e, cfg, controlplane.Config{}.WithDefaults(), ControlPlaneDeps{
		Metrics: prometheus.NewRegistry(), Registry: registry.NewMemory(), History: history.NewMemory(10), Leases: capacity.NewMemory(),
	}); err == nil || !strings.Contains(err.Error(), "OpenEngine") {
		t.Fatalf("a control plane without engines: %v, want a refusal naming OpenEngine", err)
	}
	if _, err := BuildWorker(e, cfg, workerConfig(), WorkerDeps{}); err == nil {
		t.Fatal("a worker without a client was built")
	}
	if _, err := BuildWorker(e, cfg, workerConfig(), WorkerDeps{Metrics: prometheus.NewRegistry(), Client: &http.Client{}}); err == nil ||
		!strings.Contains(err.Error(), "OpenEngine") {
		t.Fatalf("a worker without engines: %v, want a refusal naming OpenEngine", err)
	}
}

// noEngines opens no engine: the tests here configure no cluster.
func noEngines(c config.Cluster) (query.Engine, error) {
	return nil, fmt.Errorf("cluster %s: no engines in this test", c.Name)
}

func workerConfig() worker.Config {
	return worker.Config{ControlPlaneURL: "http://127.0.0.1:1", Secret: "s3cret-worker", Name: "w-1"}
}

// A worker's ops listener lends its configuration to peers (behind the worker secret), and its
// uplink exists exactly when queryflux.historyUplink.enabled.
func TestWorkerServesPeerConfigAndUplink(t *testing.T) {
	e := env.Real(slog.New(slog.DiscardHandler))
	for _, enabled := range []bool{false, true} {
		cfg := &config.Config{}
		cfg.QueryFlux.Role = config.RoleWorker
		cfg.QueryFlux.HistoryUplink.Enabled = enabled
		config.ApplyDefaults(cfg)
		wk, err := BuildWorker(e, cfg, workerConfig(), WorkerDeps{Metrics: prometheus.NewRegistry(), Client: &http.Client{}, OpenEngine: noEngines})
		if err != nil {
			t.Fatal(err)
		}
		if (wk.Query.Uplink != nil) != enabled {
			t.Fatalf("historyUplink.enabled %v: uplink %v", enabled, wk.Query.Uplink)
		}
		rec := httptest.NewRecorder()
		wk.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, worker.PathPeerConfig, nil))
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("peer config without the secret: %d, want 401", rec.Code)
		}
	}
}
