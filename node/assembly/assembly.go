// Package assembly builds the roles a QueryFlux node runs: a control plane (which a standalone
// node is too) and a worker, each with its query node, policy, capacity guard and history uplink.
// The daemon and the simulator build every role here, from a configuration and explicit
// dependency structs; they differ only in what they pass: the Env, the HTTP client (the
// network), the stores and the engine factory.
//
// It touches time, tasks and randomness only through the Env, the network only through the
// clients and handlers it is given, and storage only through the stores it is given (frontend
// listeners open only for frontends the configuration enables, which the simulator never does).
package assembly

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/querynode"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Observers see what a role does without changing it (the simulator's statistics). Nil fields
// observe nothing.
type Observers struct {
	// Finished sees every finished query, after the history uplink took it.
	Finished func(proxy.Record)
	// Acquired sees the outcome of every capacity slot request of the role's query node.
	Acquired func(cluster string, err error)
	// HistoryDropped is told the query id of every record the history uplink drops (it runs
	// under the uplink's lock: it must not block; history.UplinkConfig.OnDrop).
	HistoryDropped func(queryID string)
}

// uplinkConfig is the history uplink queryflux.historyUplink describes (with cfg's redaction).
func uplinkConfig(cfg *config.Config) history.UplinkConfig {
	up := cfg.QueryFlux.HistoryUplink
	return history.UplinkConfig{
		Policy:        redact.Policy(cfg.HistoryPolicy.Redaction),
		FlushInterval: up.FlushInterval(),
		BufferMax:     up.BufferRecords,
		BatchMax:      up.BatchRecords,
		SendTimeout:   time.Duration(up.SendTimeoutMs) * time.Millisecond,
	}
}

// Query is the part every role shares: the query node and the history uplink it feeds.
type Query struct {
	Node   *querynode.Node
	Uplink *history.Uplink // nil when the role keeps no history
	log    *slog.Logger
}

// queryOptions are what the query node of a role is built from.
type queryOptions struct {
	env     env.Env
	cfg     *config.Config
	metrics prometheus.Registerer
	guard   proxy.Guard // nil: a local guard
	open    proxy.EngineFactory
	compile func(*config.Config) (*proxy.Plan, error) // nil: proxy.Compile
	uplink  *history.Uplink
	observe Observers
	forward *forward.Forwarder // nil: requests for other workers' queries are not forwarded
}

func newQuery(o queryOptions) (*Query, error) {
	q := &Query{Uplink: o.uplink, log: o.env.Logger()}
	guard := o.guard
	if guard != nil && o.observe.Acquired != nil {
		guard = observedGuard{inner: guard, seen: o.observe.Acquired}
	}
	finished := o.observe.Finished
	lim := o.cfg.QueryFlux.Limits
	health := o.cfg.QueryFlux.HealthCheck
	//determinism:ok the query node is built here for both: its listeners, TLS files and frontends run only once start opens them
	q.Node = querynode.New(querynode.Options{Env: o.env, Registerer: o.metrics, Limits: querynode.LimitsOf(lim), LoginThrottle: querynode.ThrottleOf(lim),
		HealthEvery: time.Duration(health.EverySecs) * time.Second, HealthTimeout: time.Duration(health.TimeoutSecs) * time.Second,
		Guard: guard, OpenEngine: o.open, Compile: o.compile, OnFinish: func(r *proxy.Record) {
			if q.Uplink != nil {
				hr := worker.HistoryRecordOf(r)
				q.Uplink.AddRecord(&hr)
			}
			if finished != nil {
				finished(*r)
			}
		}, Forward: o.forward})
	if t := o.cfg.QueryFlux.TLS; t.CertFile != "" {
		//determinism:ok reads the TLS files the configuration names (the daemon's)
		if err := q.Node.UseCertificate(t.CertFile, t.KeyFile); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// start opens the enabled frontends and runs the clusters' health checks: in loop when there is
// one (it runs when the caller runs it), else in a task of their own.
func (q *Query) start(ctx context.Context, e env.Env, f *config.Frontends, loop *env.Loop) error {
	//determinism:ok the daemon's frontends: real listeners
	if err := q.Node.Listen(*f); err != nil {
		return err
	}
	if loop != nil {
		loop.Add(q.Node.HealthDuty())
		return nil
	}
	e.Go(ctx, "cluster-health", q.Node.Run)
	return nil
}

// applyHistoryPolicy gives the uplink the redaction policy of cfg, on every configuration a role
// applies: a tightened policy must not wait for a restart.
func (q *Query) applyHistoryPolicy(cfg *config.Config) {
	if q.Uplink == nil {
		return
	}
	if err := q.Uplink.SetPolicy(redact.Policy(cfg.HistoryPolicy.Redaction)); err != nil {
		q.log.Warn("history redaction policy not applied", "err", redact.Error(err))
	}
}

// Drain ends the frontends' clients at transaction boundaries (idle ones at once), until ctx
// ends. The role still runs: open transactions' statements still need capacity leases.
func (q *Query) Drain(ctx context.Context) error { return q.Node.Drain(ctx) }

// shutdown closes the frontends and sends what the history uplink still holds.
func (q *Query) shutdown(ctx context.Context) {
	//determinism:ok closes the daemon's listeners
	if err := q.Node.Close(); err != nil {
		q.log.Warn("closing frontends", "err", redact.Error(err))
	}
	if q.Uplink != nil {
		if err := q.Uplink.Shutdown(ctx); err != nil {
			q.log.Warn("final history flush incomplete", "err", redact.Error(err))
		}
	}
}

// observedGuard reports every slot request's outcome.
type observedGuard struct {
	inner proxy.Guard
	seen  func(cluster string, err error)
}

func (g observedGuard) Acquire(ctx context.Context, cluster string, limit int) (capacity.Slot, error) {
	slot, err := g.inner.Acquire(ctx, cluster, limit)
	g.seen(cluster, err)
	return slot, err
}

// OnFreed and RetryMax pass on what the inner guard tells the core: without them an observed
// (simulated) worker would not wake when its releases land, nor ask as often, as a shipped one does.
func (g observedGuard) OnFreed(fn func()) {
	if n, ok := g.inner.(proxy.FreedNotifier); ok {
		n.OnFreed(fn)
	}
}

func (g observedGuard) RetryMax() time.Duration {
	if rc, ok := g.inner.(proxy.RetryCapper); ok {
		return rc.RetryMax()
	}
	return 0
}

func anyFrontend(f *config.Frontends) bool {
	return f.Postgres.Enabled || f.MySQL.Enabled || f.Trino.Enabled || f.FlightSQL.Enabled
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }

// ReadyCheck is one condition of a control plane's /readyz: not ready while it fails.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// readinessPingTimeout bounds each check so a hung database cannot hang the probe.
const readinessPingTimeout = 2 * time.Second

// Readiness is a role's readiness: not ready while draining or while a check fails.
type Readiness struct {
	e        env.Env
	draining atomic.Bool
	mu       sync.Mutex
	checks   []ReadyCheck
}

func newReadiness(e env.Env, checks []ReadyCheck) *Readiness {
	return &Readiness{e: e, checks: append([]ReadyCheck(nil), checks...)}
}

// SetDraining turns the role not ready for good (shutting down).
func (r *Readiness) SetDraining() { r.draining.Store(true) }

// Draining reports whether SetDraining was called.
func (r *Readiness) Draining() bool { return r.draining.Load() }

func (r *Readiness) add(c ReadyCheck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = append(r.checks, c)
}

// Reasons are why the role is not ready (none: ready).
func (r *Readiness) Reasons(ctx context.Context) []string {
	if r.draining.Load() {
		return []string{"draining: shutting down"}
	}
	r.mu.Lock()
	checks := append([]ReadyCheck(nil), r.checks...)
	r.mu.Unlock()
	var out []string
	for _, c := range checks {
		cctx, cancel := r.e.WithTimeout(ctx, readinessPingTimeout)
		err := c.Check(cctx)
		cancel()
		if err != nil {
			out = append(out, c.Name+": "+err.Error())
		}
	}
	return out
}

func (r *Readiness) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if reasons := r.Reasons(req.Context()); len(reasons) > 0 {
			workerapi.WriteJSON(w, http.StatusServiceUnavailable, "application/json", map[string]any{"ready": false, "reasons": reasons})
			return
		}
		workerapi.WriteJSON(w, http.StatusOK, "application/json", map[string]any{"ready": true})
	})
}

// errDraining is a worker's readiness while it shuts down.
var errDraining = errors.New("shutting down")
