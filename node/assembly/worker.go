package assembly

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/worker"
)

// WorkerDeps are what a worker is built on besides its configuration.
type WorkerDeps struct {
	// Metrics receives every metric of the role and is what the ops /metrics serves. Required.
	Metrics *prometheus.Registry
	// Client carries every call to the control plane (no Timeout: deadlines come from the Env).
	Client *http.Client
	// PeerClient carries the requests to peers' ops listeners when
	// queryflux.controlPlane.peerBootstrap names any (nil: Client).
	PeerClient *http.Client
	// Snapshots keeps the last good configuration across restarts (nil: none).
	Snapshots worker.SnapshotStore
	// OpenEngine opens a cluster's engine (required; the daemon's is
	// querynode.EngineFactory(querynode.Engines()), the simulator's opens simulated engines).
	OpenEngine proxy.EngineFactory
	// OnApply sees every configuration the worker is about to swap in, before anything else.
	OnApply func(*config.Config)
	// ForwardClient carries requests for queries other workers own to them (forward.NewClient);
	// nil: such requests get the unknown-query answer.
	ForwardClient *http.Client
	// Endpoints turns the frontends' bound addresses (by protocol) into the endpoints peers
	// forward to, registered with the control plane; nil registers none. The ops listener
	// (Handler) takes whole queries from peers (forward.PathQuery): its endpoint is keyed
	// forward.Query.
	Endpoints func(addrs map[string]string) (map[string]string, error)
	// DecodeSnapshot reads the control plane's snapshot bodies (nil: snapshot.Decode); see
	// worker.ConfigSyncOptions.Decode.
	DecodeSnapshot func(body []byte) (*snapshot.WorkerSnapshotV1, error)
	// DeriveConfig builds the configuration a snapshot means for this worker (nil:
	// worker.DeriveConfig); see worker.ConfigSyncOptions.Derive. With one that shares its
	// results, OnApply must not write to the configuration it sees.
	DeriveConfig func(snap *snapshot.WorkerSnapshotV1, local *config.QueryFlux) (*config.Config, error)
	// CompilePlan compiles each configuration the worker applies (nil: proxy.Compile); see
	// querynode.Options.Compile.
	CompilePlan func(*config.Config) (*proxy.Plan, error)
	Observe     Observers
}

// Worker is a built worker.
type Worker struct {
	W      *worker.Worker
	Sync   *worker.ConfigSync
	Guard  *worker.CapacityGuard
	Query  *Query
	e      env.Env
	cfg    *config.Config
	deps   WorkerDeps
	ending atomic.Bool
}

// BuildWorker builds a worker: its link to the control plane, the config sync that follows
// the control plane's snapshot (and lends it to peers), the history uplink when
// queryflux.historyUplink.enabled, the capacity guard and the query node. wCfg is its identity
// and timing (the daemon's flags). Nothing runs until Start.
func BuildWorker(e env.Env, cfg *config.Config, wCfg worker.Config, deps WorkerDeps) (*Worker, error) {
	if deps.Metrics == nil || deps.Client == nil || deps.OpenEngine == nil {
		return nil, errors.New("assembly: a worker needs Metrics, Client and OpenEngine")
	}
	q := &cfg.QueryFlux // by pointer: a copy on the boot task's stack would cross its 8 KB (config_sync.go, Local)
	wCfg.Metrics = deps.Metrics
	wk := &Worker{e: e, cfg: cfg, deps: deps, W: worker.New(e, wCfg, deps.Client)}
	wk.W.AddReadinessCheck("draining", func() error {
		if wk.ending.Load() {
			return errDraining
		}
		return nil
	})
	wk.Sync = worker.NewConfigSync(wk.W, worker.ConfigSyncOptions{
		Local: q, Peers: wk.peers(), Store: deps.Snapshots, PollTimeout: secs(q.ControlPlane.PollTimeoutSecs),
		BackoffMax: secs(q.ControlPlane.RetryMaxSecs),
		Apply:      wk.apply, Decode: deps.DecodeSnapshot, Derive: deps.DeriveConfig,
	})
	// Ready workers lend their config to peers that start while the control plane is down.
	wk.W.HandleOps("GET "+worker.PathPeerConfig, wk.Sync.PeerConfigHandler(q.ControlPlane.Secret.Reveal()))
	uplink, err := wk.uplink()
	if err != nil {
		return nil, err
	}
	wk.Guard, err = worker.NewCapacityGuard(e, wk.W, q.Coordination, capacity.NewMetrics(deps.Metrics))
	if err != nil {
		return nil, err
	}
	qo := queryOptions{env: e, cfg: cfg, metrics: deps.Metrics, guard: wk.Guard.Guard(), open: deps.OpenEngine, compile: deps.CompilePlan,
		uplink: uplink, observe: deps.Observe}
	if deps.ForwardClient != nil {
		qo.forward, err = forward.New(forward.Options{Env: e, Name: wCfg.Name, Secret: q.ControlPlane.Secret.Reveal(), Directory: wk.W,
			Client: deps.ForwardClient, Registerer: deps.Metrics, Advertised: wk.W.Advertised})
		if err != nil {
			return nil, err
		}
	}
	wk.Query, err = newQuery(qo)
	if err != nil {
		return nil, err
	}
	if qo.forward != nil {
		// Peers send this worker the queries whose cache keys it owns here too, so a worker
		// without a Trino listener (a PostgreSQL-only sidecar) can own keys.
		wk.W.HandleOps("POST "+forward.PathQuery, qo.forward.QueryHandler(wk.Query.Node.Core()))
	}
	return wk, nil
}

func (wk *Worker) peers() *worker.PeerOptions {
	q := &wk.cfg.QueryFlux
	pb := &q.ControlPlane.PeerBootstrap
	if len(pb.Address) == 0 {
		return nil
	}
	return &worker.PeerOptions{
		Addresses: pb.Address, MaxAge: secs(pb.MaxAgeSecs), Secret: q.ControlPlane.Secret.Reveal(),
		Client: cmp.Or(wk.deps.PeerClient, wk.deps.Client),
	}
}

// uplink is the worker's history uplink to the control plane (nil when disabled).
func (wk *Worker) uplink() (*history.Uplink, error) {
	up := wk.cfg.QueryFlux.HistoryUplink
	if !up.Enabled {
		wk.e.Logger().Info("queryflux.historyUplink.enabled is false: query history stays on this worker's metrics only")
		return nil, nil
	}
	hc := uplinkConfig(wk.cfg)
	hc.OnDrop = wk.deps.Observe.HistoryDropped
	return wk.W.NewHistoryUplink(wk.e, hc)
}

// apply swaps a configuration the config sync accepted into the query node; an error rejects
// that revision and keeps the previous one.
func (wk *Worker) apply(_ context.Context, cfg *config.Config, _ *snapshot.WorkerSnapshotV1) error {
	if wk.deps.OnApply != nil {
		wk.deps.OnApply(cfg)
	}
	//determinism:ok Apply reads the TLS files the configuration names (the daemon's)
	if err := wk.Query.Node.Apply(cfg); err != nil {
		return err
	}
	wk.Query.applyHistoryPolicy(cfg)
	return nil
}

// Handler serves the ops listener: /health, /readyz, /metrics, /worker/status, peer config.
func (wk *Worker) Handler() http.Handler { return wk.W.OpsHandler() }

// Start runs the role until ctx ends: the frontends, the history uplink, the config sync, and
// one loop task (env.Loop) for the periodic duties: the clusters' health checks, the capacity
// guard's keeper, release flusher and idle reaper, the heartbeats and the self-health probe.
// The frontends listen first: the registration (whichever task needs the control plane first)
// carries their endpoints.
func (wk *Worker) Start(ctx context.Context) error {
	duties := env.NewLoop(wk.e)
	if err := wk.Query.start(ctx, wk.e, &wk.cfg.QueryFlux.Frontends, duties); err != nil {
		return err
	}
	if wk.deps.Endpoints != nil {
		endpoints, err := wk.deps.Endpoints(wk.Query.Node.Addrs())
		if err == nil && len(endpoints) > 0 {
			err = wk.W.SetEndpoints(endpoints)
		}
		if err != nil {
			return err
		}
	}
	duties.Add(wk.Guard.Duties()...)
	if wk.Query.Uplink != nil {
		wk.Query.Uplink.Start(ctx)
	}
	wk.e.Go(ctx, "config-sync", func(ctx context.Context) { _ = wk.Sync.Run(ctx) })
	duties.Add(wk.W.Duties()...)
	wk.e.Go(ctx, "worker-duties", duties.Run)
	return nil
}

// SetDraining turns /readyz 503 for good.
func (wk *Worker) SetDraining() { wk.ending.Store(true) }

// Drain ends the frontends' clients at transaction boundaries, until ctx ends.
func (wk *Worker) Drain(ctx context.Context) error { return wk.Query.Drain(ctx) }

// Shutdown, once the role's servers have drained and the role stopped, closes the frontends and
// sends the history still buffered.
func (wk *Worker) Shutdown(ctx context.Context) error {
	wk.Query.shutdown(ctx)
	return nil
}
