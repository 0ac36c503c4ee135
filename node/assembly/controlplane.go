package assembly

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/internal/studio"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// ControlPlaneLeaseHolder holds the leases of the queries a control plane runs itself.
const ControlPlaneLeaseHolder = "queryflux-control-plane"

// historyMemoryRecordsMax bounds the history of a control plane without a database.
const HistoryMemoryRecordsMax = 100_000

// LeaseStore is the capacity lease table and its sweep lock (Postgres, or memory).
type LeaseStore interface {
	capacity.CapacityStore
	capacity.SweepCoordinator
}

// HistoryStore keeps the fleet's query history and prunes it (Postgres, or memory).
type HistoryStore interface {
	history.Store
	history.Pruner
}

// NoFence is a Fence that stops nothing: a reclaimed lease's slot is freed once the lease has
// expired, whatever its work still does on the engine.
var NoFence capacity.EngineFence = noFence{}

type noFence struct{}

// TestNoEngineFenceEnv, set to 1 in a control plane's environment, makes `queryflux serve` run
// with NoFence: the chaos harness shows on real daemons what a fleet without the engine fence
// does (scenarios' workload.engineFence: false). Never set it outside tests.
const TestNoEngineFenceEnv = "QUERYFLUX_TEST_NO_ENGINE_FENCE"

// TestNoContentionWatchEnv, set to 1 in a control plane's environment, makes `queryflux serve`
// run without the contention watch's route (ControlPlaneDeps.NoContentionWatch): what a worker
// sees of a control plane that predates it. Never set it outside tests.
const TestNoContentionWatchEnv = "QUERYFLUX_TEST_NO_CONTENTION_WATCH"

func (noFence) Fence(context.Context, string, []capacity.LeaseRef) (bool, error) { return true, nil }

// ControlPlaneDeps are what a control plane is built on besides its configuration.
type ControlPlaneDeps struct {
	// Metrics receives every metric of the role and is what /metrics serves. Required.
	Metrics *prometheus.Registry
	// Registry, Leases and History are the role's stores. Registry and History are required;
	// Leases when queryflux.workerApi.enabled.
	Registry registry.Store
	Leases   LeaseStore
	History  HistoryStore
	// Config is where the configuration served to workers comes from.
	Config ConfigDeps
	// OpenEngine opens a cluster's engine for the role's own query node (required; the daemon's
	// is querynode.EngineFactory(querynode.Engines()), the simulator's opens simulated engines).
	OpenEngine proxy.EngineFactory
	// Fence stops a reclaimed lease's work on its engine (nil: the engine fence on the
	// configuration's clusters, following every configuration applied; NoFence: none).
	Fence capacity.EngineFence
	// Ready are more /readyz conditions (the database answers).
	Ready []ReadyCheck
	// OnApply sees every configuration the role applies, before anything else does.
	OnApply func(*config.Config)
	Observe Observers
	// StudioPlanning serves Studio's Planning page (planning.New); nil: no Planning page.
	StudioPlanning http.Handler
	// CapacityStatsEvery is how often the capacity stats (GET /admin/capacity/stats) sample the
	// leases; 0: on each call only.
	CapacityStatsEvery time.Duration
	// NoContentionWatch leaves the contention watch's route out, as on a control plane that
	// predates it (tests of the workers' fallback: TestNoContentionWatchEnv).
	NoContentionWatch bool
}

// ConfigDeps say where a control plane's configuration comes from: its own file (reloaded on
// demand) or a store.
type ConfigDeps struct {
	// Stored, when set, serves the configuration kept in a store instead of the file's; the
	// control plane's own query node follows it as workers do.
	Stored *StoredConfig
	// Load re-reads and checks the configuration file on a reload; nil: there is no file (the
	// embedded default) and reloads are refused.
	Load func() (*config.Config, error)
	// Admin are the admin endpoints' hooks (a candidate's revision, the engine check, history).
	Admin controlplane.AdminOptions
	// BuildTimeout bounds one snapshot build (0: controlplane.ConfigBuildTimeoutDefault).
	BuildTimeout time.Duration
}

// StoredConfig is a configuration kept in a store.
type StoredConfig struct {
	// Source builds the snapshot of what the store holds now.
	Source controlplane.ConfigSource
	// Store takes PUT /admin/config's edits; nil refuses them.
	Store controlplane.ConfigStore
	// Where names the store in answers ("Postgres").
	Where string
}

// ControlPlane is a built control plane (or standalone node).
type ControlPlane struct {
	CP        *controlplane.ControlPlane
	Query     *Query
	Config    *controlplane.ConfigServer
	Reloader  *controlplane.ConfigReloader // nil when the configuration is stored
	Readiness *Readiness
	Sweeper   *capacity.Sweeper    // nil without the worker API
	Leases    *capacity.LeaseGuard // nil unless the node's own queries take fleet leases

	e          env.Env
	cfg        *config.Config
	deps       ControlPlaneDeps
	source     controlplane.ConfigSource
	wake       env.Signal
	authority  *leaseAuthority // nil without the worker API
	configured atomic.Bool     // a configuration with clusters is active
}

// BuildControlPlane builds a control plane: the registry and its API, the worker config
// endpoints, the history ingest and the node's own uplink, the capacity API and guard, the
// query node, the studio. cpCfg is its timing (the daemon's flags over the file's); cfg must
// be compiled. Nothing runs until Start.
func BuildControlPlane(e env.Env, cfg *config.Config, cpCfg controlplane.Config, deps ControlPlaneDeps) (*ControlPlane, error) {
	if deps.Metrics == nil || deps.Registry == nil || deps.History == nil || deps.OpenEngine == nil {
		return nil, errors.New("assembly: a control plane needs Metrics, Registry, History and OpenEngine")
	}
	q := cfg.QueryFlux
	cpCfg.Metrics = deps.Metrics
	c := &ControlPlane{e: e, cfg: cfg, deps: deps, CP: controlplane.New(e, cpCfg, deps.Registry), Readiness: newReadiness(e, deps.Ready)}
	c.CP.Handle("GET /health", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	}))
	c.CP.Handle("GET /metrics", promhttp.HandlerFor(deps.Metrics, promhttp.HandlerOpts{}))
	c.CP.Handle("GET /readyz", c.Readiness.handler())
	if err := c.serveConfig(); err != nil {
		return nil, err
	}
	c.CP.MountHistory(deps.History)
	hc := uplinkConfig(cfg)
	hc.Worker, hc.Destination, hc.OnDrop = string(q.Role), "this node's history store", deps.Observe.HistoryDropped
	uplink := history.NewStoreUplink(e, hc, deps.History)
	if err := uplink.Register(deps.Metrics); err != nil {
		return nil, err
	}
	guard, err := c.capacity()
	if err != nil {
		return nil, err
	}
	c.Query, err = newQuery(queryOptions{env: e, cfg: cfg, metrics: deps.Metrics, guard: guard, open: deps.OpenEngine, uplink: uplink, observe: deps.Observe})
	if err != nil {
		return nil, err
	}
	if err := c.applyInitial(); err != nil {
		return nil, err
	}
	//determinism:ok Studio serves browsers on the admin listener; its clock is the role's, its session tokens come from crypto/rand
	c.CP.Handle(studio.Prefix, studio.New(studio.Config{AdminToken: q.AdminAPI.Token.Reveal(), Admin: c.CP.Handler(), Logger: e.Logger(), Now: e.Now,
		Planning: deps.StudioPlanning}))
	return c, nil
}

// serveConfig mounts the worker snapshot endpoints, the admin config endpoints and the reload.
func (c *ControlPlane) serveConfig() error {
	q, d := c.cfg.QueryFlux, c.deps.Config
	srv := controlplane.NewConfigServer(c.e, secs(q.ControlPlane.PollTimeoutSecs))
	srv.Mount(c.CP)
	srv.SetAdminOptions(d.Admin)
	c.Config = srv
	if st := d.Stored; st != nil {
		c.source, c.wake = st.Source, c.e.NewSignal()
		srv.MountAdmin(c.CP, st.Store)
		controlplane.MountReload(c.CP, nil, "the configuration is stored in "+cmp.Or(st.Where, "a store")+": edit it with PUT "+controlplane.PathAdminConfig)
		srv.OnChange(func(string) { c.applyStored() })
		c.e.Logger().Info("config: serving workers the stored configuration", "store", cmp.Or(st.Where, "a store"))
		return nil
	}
	load := d.Load
	if load == nil {
		load = func() (*config.Config, error) { return nil, errors.New("no configuration file") }
	}
	r, err := controlplane.NewConfigReloader(c.e, srv, c.cfg, controlplane.ReloadOptions{
		Load:       load,
		Snapshot:   snapshot.Options{Credentials: snapshot.CredentialsMode(q.WorkerAPI.Credentials)},
		Registerer: c.deps.Metrics,
		Apply:      c.apply,
	})
	if err != nil {
		return err
	}
	c.Reloader, c.source, c.wake = r, r.Source, r.Wake()
	srv.MountAdmin(c.CP, nil)
	if d.Load == nil {
		controlplane.MountReload(c.CP, nil, "no configuration file: this node runs the embedded default")
	} else {
		controlplane.MountReload(c.CP, r, "")
	}
	c.e.Logger().Info("config: serving workers the configuration file's clusters and groups")
	return nil
}

// serves reports whether the configuration served to worker holds cluster: a worker takes no
// capacity of a cluster its labels do not select.
func (c *ControlPlane) serves(worker, cluster string) bool {
	if c.Config == nil {
		return true
	}
	labels, _ := c.CP.Labels(worker)
	return c.Config.Serves(labels, cluster)
}

// capacity mounts the worker capacity API when workers may register and returns the guard of
// the node's own queries (nil: a local guard).
func (c *ControlPlane) capacity() (proxy.Guard, error) {
	q := c.cfg.QueryFlux
	if !q.WorkerAPI.Enabled {
		return nil, nil
	}
	if c.deps.Leases == nil {
		return nil, errors.New("assembly: queryflux.workerApi.enabled needs a lease store")
	}
	metrics := capacity.NewMetrics(c.deps.Metrics)
	c.authority = newLeaseAuthority(c.cfg, c.deps.Fence)
	fence, grace := c.authority.capacityFence(), secs(cmp.Or(q.Coordination.FenceGraceSecs, q.Coordination.LeaseTTLSecs))
	if fence == nil {
		grace = 0 // nothing to wait for: the slot is free once the lease has expired
	}
	c.Sweeper = controlplane.MountCapacity(c.e, c.CP, controlplane.CapacityConfig{
		Fence: fence, FenceGrace: grace,
		Store: c.deps.Leases, Locks: c.deps.Leases, Metrics: metrics, Owner: ControlPlaneLeaseHolder,
		Ordered: q.Coordination.Queue == config.QueueOrdered, Weights: q.Coordination.Weights,
		Limits: c.authority.limits, SweepEvery: secs(q.Coordination.SweepEverySecs),
		StatsEvery: c.deps.CapacityStatsEvery, NoContentionWatch: c.deps.NoContentionWatch,
		Served: c.serves,
	})
	if q.Coordination.Mode == config.CoordinationLocal {
		return nil, nil
	}
	lg, err := capacity.NewLeaseGuard(capacity.GuardOptions{
		Env: c.e, Client: c.deps.Leases, Holder: ControlPlaneLeaseHolder,
		OnUnavailable: q.Coordination.OnUnavailable, OnLeaseLost: q.Coordination.OnLeaseLost,
		LeaseTTL: secs(q.Coordination.LeaseTTLSecs), DriftMargin: secs(q.Coordination.DriftMarginSecs),
		Metrics: metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("coordination: %w", err)
	}
	c.Leases = lg
	return lg, nil
}

// applyInitial applies the configuration the node starts with, if it has clusters.
func (c *ControlPlane) applyInitial() error {
	if anyFrontend(&c.cfg.QueryFlux.Frontends) {
		c.Readiness.add(ReadyCheck{Name: "config", Check: func(context.Context) error {
			if !c.configured.Load() {
				return errors.New("no configuration with clusters applied yet")
			}
			return nil
		}})
	}
	if len(c.cfg.Clusters) == 0 {
		c.e.Logger().Warn("the configuration file defines no clusters: this node's frontends answer 'not configured'")
		return nil
	}
	//determinism:ok Apply reads the TLS files the configuration names (the daemon's)
	if err := c.Query.Node.Apply(c.cfg); err != nil {
		return err
	}
	c.configured.Store(true)
	return nil
}

// apply swaps a configuration (a reloaded file, a stored revision) into the node: query node,
// lease terms, history policy. An error keeps the running one whole: the query node goes first
// because it is the part that can refuse, and a refused configuration's caps must not become
// the lease terms.
func (c *ControlPlane) apply(_ context.Context, cfg *config.Config) error {
	if c.deps.OnApply != nil {
		c.deps.OnApply(cfg)
	}
	if len(cfg.Clusters) > 0 { // as at start: no clusters, nothing to build
		//determinism:ok Apply reads the TLS files the configuration names (the daemon's)
		if err := c.Query.Node.Apply(cfg); err != nil {
			return err
		}
		c.configured.Store(true)
	}
	if c.authority != nil {
		c.authority.set(cfg)
	}
	c.Query.applyHistoryPolicy(cfg)
	return nil
}

// applyStored hands the snapshot just published to the node, compiled as strictly as a worker
// compiles it; a refusal is logged and the node keeps its previous configuration.
func (c *ControlPlane) applyStored() {
	snap := c.Config.Current()
	if snap == nil {
		return
	}
	// With credentials stripped the stored snapshot carries none: the node logs in with its own
	// queryflux.clusterCredentials, as a worker does, and refuses a cluster left without any.
	cfg, err := snap.WorkerConfig(&c.cfg.QueryFlux)
	if err == nil {
		err = config.Compile(cfg)
	}
	if err == nil {
		err = c.apply(context.Background(), cfg)
	}
	if err != nil {
		c.e.Logger().Error("config: the control plane's query node refused the stored config", "revision", snap.Revision, "err", redact.Error(err))
	}
}

// LeaseCap is the cap this control plane grants leases of cluster under (false: none, it
// grants none).
func (c *ControlPlane) LeaseCap(cluster string) (int, bool) {
	if c.authority == nil {
		return 0, false
	}
	limit, _, ok := c.authority.limits(cluster)
	return limit, ok
}

// Handler serves the admin and worker API.
func (c *ControlPlane) Handler() http.Handler { return c.CP.Handler() }

// Start runs the role until ctx ends: the registry and its reaper, the snapshot refresh, the
// history retention and uplink, the lease sweeper and guard, the frontends and health checks.
func (c *ControlPlane) Start(ctx context.Context) error {
	if err := c.CP.Start(ctx); err != nil {
		return err
	}
	timeout := c.deps.Config.BuildTimeout
	c.e.Go(ctx, "config-refresh", func(ctx context.Context) { _ = c.Config.RunConfigRefresh(ctx, c.source, c.wake, timeout) })
	days := c.cfg.HistoryPolicy.RetentionDays
	c.e.Go(ctx, "history-retention", func(ctx context.Context) {
		history.RunRetention(ctx, c.e, c.deps.History, func() time.Duration { return time.Duration(days) * 24 * time.Hour }, history.RetentionIntervalDefault)
	})
	c.Query.Uplink.Start(ctx)
	if c.Sweeper != nil {
		c.e.Go(ctx, "capacity-sweeper", c.Sweeper.Run)
		c.CP.StartCapacityStats(ctx)
	}
	if c.Leases != nil {
		c.Leases.Start(ctx)
	}
	return c.Query.start(ctx, c.e, &c.cfg.QueryFlux.Frontends, nil)
}

// ReloadConfig re-reads the configuration (SIGHUP): the file (the reload logs its outcome), or
// the store. Without either there is nothing to do.
func (c *ControlPlane) ReloadConfig(ctx context.Context) {
	switch {
	case c.deps.Config.Stored != nil:
		c.wake.Notify()
	case c.deps.Config.Load != nil:
		c.Reloader.Reload(ctx)
	}
}

// ConfigChanged says the stored configuration changed (a notification from the store).
func (c *ControlPlane) ConfigChanged() { c.wake.Notify() }

// SetDraining turns /readyz 503 for good.
func (c *ControlPlane) SetDraining() { c.Readiness.SetDraining() }

// Drain ends the frontends' clients at transaction boundaries, until ctx ends.
func (c *ControlPlane) Drain(ctx context.Context) error { return c.Query.Drain(ctx) }

// Shutdown, once the role's servers have drained and the role stopped, closes the frontends,
// sends the history still buffered and writes the registry's last batch.
func (c *ControlPlane) Shutdown(ctx context.Context) error {
	c.Query.shutdown(ctx)
	return c.CP.Flush(ctx)
}
