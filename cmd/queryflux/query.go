package main

// The query path in the daemon: every role runs a query node (internal/querynode): the proxy
// core, the enabled frontends and the cluster health checks.
//   - standalone / control plane: built from the local YAML; capacity is a LocalGuard, or, when
//     workers may register (workerApi.enabled, coordination.mode controlPlane), leases from the
//     same store the control plane serves to workers, so a cluster's cap holds fleet-wide;
//   - worker: rebuilt on every snapshot the config sync activates; capacity leases from the
//     control plane (worker.CapacityGuard).
// Finished queries go to historyUplink (history.go): the local store, or the control plane.

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/querynode"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/worker"
)

// controlPlaneLeaseHolder holds the leases of queries the control plane runs itself.
const controlPlaneLeaseHolder = "queryflux-control-plane"

func init() {
	controlPlaneHooks = append(controlPlaneHooks, startControlPlaneQuery)
	// The config sync starts after every worker hook has run, so this one's applier sees the
	// first snapshot.
	workerHooks = append(workerHooks, startWorkerQuery)
}

// recordHistory hands a finished query to this node's history uplink, if there is one.
func recordHistory(r proxy.Record) {
	if u := historyUplink; u != nil {
		u.Add(worker.HistoryRecord(r))
	}
}

func startControlPlaneQuery(ctx context.Context, d *Daemon, cp *controlplane.ControlPlane) error {
	guard, err := controlPlaneCapacity(ctx, d, cp)
	if err != nil {
		return err
	}
	n, err := newQueryNode(d, guard, nil)
	if err != nil {
		return err
	}
	var configured atomic.Bool
	if anyFrontend(d.Config.QueryFlux.Frontends) {
		nodeReadiness.add("config", func(context.Context) error {
			if !configured.Load() {
				return errors.New("no configuration with clusters applied yet")
			}
			return nil
		})
	}
	if len(d.Config.Clusters) > 0 {
		if err := n.Apply(d.Config); err != nil {
			return err
		}
		configured.Store(true)
	} else {
		d.Logger.Warn("the configuration file defines no clusters: this node's frontends answer 'not configured'")
	}
	// A reloaded configuration file is applied here before workers see it (config_reload.go).
	controlPlaneConfigApply = append(controlPlaneConfigApply, func(_ context.Context, d *Daemon, cfg *config.Config) error {
		applyHistoryPolicy(d, cfg)
		if len(cfg.Clusters) == 0 {
			return nil // as at start: no clusters, nothing to build
		}
		if err := n.Apply(cfg); err != nil {
			return err
		}
		configured.Store(true)
		return nil
	})
	return runQueryNode(ctx, d, n)
}

func anyFrontend(f config.Frontends) bool {
	return f.Postgres.Enabled || f.MySQL.Enabled || f.Trino.Enabled || f.FlightSQL.Enabled
}

// controlPlaneCapacity mounts the worker capacity API when workers may register and returns the
// guard for the node's own queries (nil: a LocalGuard).
func controlPlaneCapacity(ctx context.Context, d *Daemon, cp *controlplane.ControlPlane) (proxy.Guard, error) {
	q := d.Config.QueryFlux
	if !q.WorkerAPI.Enabled {
		return nil, nil
	}
	var store interface {
		capacity.CapacityStore
		capacity.SweepCoordinator
	}
	if d.Pool != nil {
		store = pgcapacity.New(d.Pool)
	} else {
		d.Logger.Info("no database configured: capacity leases live in memory")
		store = capacity.NewMemory()
	}
	metrics := capacity.NewMetrics(d.Metrics)
	auth := newLeaseAuthority(d.Config)
	controlPlaneConfigApply = append(controlPlaneConfigApply, func(_ context.Context, _ *Daemon, cfg *config.Config) error {
		auth.set(cfg)
		return nil
	})
	sweeper := controlplane.MountCapacity(d.Env, cp, controlplane.CapacityConfig{
		Store: store, Locks: store, Metrics: metrics, Owner: controlPlaneLeaseHolder,
		Ordered: q.Coordination.Queue == config.QueueOrdered, Weights: q.Coordination.Weights,
		Limits: auth.limits, Fence: auth.fence, FenceGrace: secs(cmp.Or(q.Coordination.FenceGraceSecs, q.Coordination.LeaseTTLSecs)),
		SweepEvery: secs(q.Coordination.SweepEverySecs),
	})
	d.Env.Go(ctx, "capacity-sweeper", sweeper.Run)
	if q.Coordination.Mode == config.CoordinationLocal {
		return nil, nil
	}
	lg, err := capacity.NewLeaseGuard(capacity.GuardOptions{
		Env: d.Env, Client: store, Holder: controlPlaneLeaseHolder,
		OnUnavailable: q.Coordination.OnUnavailable, OnLeaseLost: q.Coordination.OnLeaseLost,
		LeaseTTL: secs(q.Coordination.LeaseTTLSecs), DriftMargin: secs(q.Coordination.DriftMarginSecs),
		Metrics: metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("coordination: %w", err)
	}
	lg.Start(ctx)
	return lg, nil
}

func startWorkerQuery(ctx context.Context, d *Daemon, w *worker.Worker) error {
	guard, err := worker.NewCapacityGuard(d.Env, w, d.Config.QueryFlux.Coordination, capacity.NewMetrics(d.Metrics))
	if err != nil {
		return err
	}
	guard.Start(ctx)
	fwd, err := newForwarder(d, w)
	if err != nil {
		return err
	}
	n, err := newQueryNode(d, guard.Guard(), fwd)
	if err != nil {
		return err
	}
	workerConfigApply = append(workerConfigApply, func(ctx context.Context, d *Daemon, cfg *config.Config, snap *snapshot.WorkerSnapshotV1) error {
		if err := n.Apply(cfg); err != nil {
			return err
		}
		applyHistoryPolicy(d, cfg)
		return nil
	})
	if err := runQueryNode(ctx, d, n); err != nil {
		return err
	}
	return advertiseEndpoints(d, w, n.Addrs())
}

// newQueryNode is this node's query path, its frontends presenting queryflux.tls when set.
func newQueryNode(d *Daemon, guard proxy.Guard, fwd *forward.Forwarder) (*querynode.Node, error) {
	n := querynode.New(querynode.Options{Env: d.Env, Registerer: d.Metrics, Limits: querynode.LimitsOf(d.Config.QueryFlux.Limits), Guard: guard, OnFinish: recordHistory,
		Forward: fwd})
	if t := d.Config.QueryFlux.TLS; t.CertFile != "" {
		if err := n.UseCertificate(t.CertFile, t.KeyFile); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// runQueryNode opens the frontends and runs the health checks. Once the role's servers have
// drained, the frontends close and the history uplink sends what it still holds.
func runQueryNode(ctx context.Context, d *Daemon, n *querynode.Node) error {
	if err := n.Listen(d.Config.QueryFlux.Frontends); err != nil {
		return err
	}
	d.Env.Go(ctx, "cluster-health", n.Run)
	drainHooks = append(drainHooks, n.Drain)
	shutdownHooks = append(shutdownHooks, func(ctx context.Context, d *Daemon) {
		if err := n.Close(); err != nil {
			d.Logger.Warn("closing frontends", "err", err)
		}
		if u := historyUplink; u != nil {
			if err := u.Shutdown(ctx); err != nil {
				d.Logger.Warn("final history flush incomplete", "err", err)
			}
		}
	})
	return nil
}

// Environment variables of the embedded default.
const (
	envPortOffset = "QUERYFLUX_PORT_OFFSET" // added to every port of the embedded default
	envAdminToken = "QUERYFLUX_ADMIN_TOKEN" // the admin API's token (else a random one, in a file)
)

// embeddedDefault is the configuration `queryflux serve` runs without --config: a standalone
// node on loopback with the DuckDB demo cluster (internal/defaultconfig). The admin token is
// QUERYFLUX_ADMIN_TOKEN, or a fresh random one written to a private file whose path is logged.
func embeddedDefault(log *slog.Logger) (*config.Config, error) {
	offset := 0
	if s := os.Getenv(envPortOffset); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: not an integer", envPortOffset, s)
		}
		offset = n
	}
	cfg, err := defaultconfig.Load(offset)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envPortOffset, err)
	}
	token := os.Getenv(envAdminToken)
	if token == "" {
		if token, err = writeAdminToken(cfg.QueryFlux.AdminAPI.Listen, log); err != nil {
			return nil, err
		}
	}
	cfg.QueryFlux.AdminAPI.Token = config.Secret(token)
	log.Info("no --config: running the embedded default (DuckDB demo dataset)",
		"postgres", cfg.QueryFlux.Frontends.Postgres.Listen, "mysql", cfg.QueryFlux.Frontends.MySQL.Listen,
		"trino", cfg.QueryFlux.Frontends.Trino.Listen, "flightsql", cfg.QueryFlux.Frontends.FlightSQL.Listen,
		"admin", cfg.QueryFlux.AdminAPI.Listen)
	return cfg, nil
}

// writeAdminToken makes a random admin token and stores it in a file only this user can read
// (the token itself is never logged).
func writeAdminToken(adminListen string, log *slog.Logger) (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b[:])
	_, port, _ := net.SplitHostPort(adminListen)
	path := defaultconfig.TokenFile(port)
	_ = os.Remove(path) // a stale file of another user would keep its mode
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing the admin token file: %w", err)
	}
	log.Info("admin API token written to a file; export QUERYFLUX_ADMIN_TOKEN=$(cat FILE)", "file", path)
	return token, nil
}

// applyHistoryPolicy gives this node's history uplink the redaction policy of cfg, on every
// role that applies a new configuration (a worker's snapshot, a control plane's reload).
func applyHistoryPolicy(d *Daemon, cfg *config.Config) {
	if u := historyUplink; u != nil {
		if err := u.SetPolicy(redact.Policy(cfg.HistoryPolicy.Redaction)); err != nil {
			d.Logger.Warn("history redaction policy not applied", "err", err)
		}
	}
}
