package controlplane

// This file reloads a control plane's (or standalone's) configuration file on demand (SIGHUP,
// POST /admin/config/reload): the file is read and compiled whole; a bad one keeps the running
// configuration and says why (every error with its path), a good one is applied to the node's
// own query path and published to workers at once (long-polls wake).
//
// It touches the world only through the Env, the loader and appliers it is given, and the
// ConfigServer it feeds, so it runs in the simulator like the rest of the control plane.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/promreg"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// PathAdminConfigReload re-reads the configuration file (admin token required).
const PathAdminConfigReload = "/admin/config/reload"

// Reload stages, the `stage` label of queryflux_config_reload_failures_total.
const (
	ReloadStageFile  = "file"  // the file could not be read, parsed or compiled
	ReloadStageApply = "apply" // the node's own query path refused it
)

// reloadPublishTimeout bounds how long a reload waits to see its snapshot served.
const reloadPublishTimeout = 30 * time.Second

// ReloadOptions configure a ConfigReloader.
type ReloadOptions struct {
	// Load reads and parses the configuration file (config.Load). It need not compile it.
	Load func() (*config.Config, error)
	// Snapshot are the options of every snapshot built (credentials mode); ConfirmedAt is set
	// from the Env at each build.
	Snapshot snapshot.Options
	// Apply, if set, swaps a compiled configuration into the node's own query path; an error
	// refuses the reload (stage "apply") and nothing is published.
	Apply func(ctx context.Context, cfg *config.Config) error
	// Registerer receives queryflux_config_reload_failures_total and
	// queryflux_config_reloads_total (nil: not exported).
	Registerer prometheus.Registerer
}

// ReloadResult is the answer of a reload (and the body of POST /admin/config/reload).
type ReloadResult struct {
	OK               bool              `json:"ok"`
	Stage            string            `json:"stage,omitempty"` // where a refused reload failed
	Revision         string            `json:"revision"`        // served after the reload
	PreviousRevision string            `json:"previousRevision,omitempty"`
	Changed          bool              `json:"changed"`
	Errors           []adminFieldError `json:"errors,omitempty"`
	Warnings         []string          `json:"warnings,omitempty"`
}

// ConfigReloader holds a file-backed configuration and reloads it on demand. Its Source feeds
// ConfigServer.RunConfigRefresh, which it wakes after each accepted reload.
type ConfigReloader struct {
	env     env.Env
	local   config.QueryFlux // the node-local section in force since start
	srv     *ConfigServer
	opts    ReloadOptions
	wake    env.Signal // wakes the refresh loop
	idle    env.Signal // a reload finished (reloads take turns)
	metrics reloadMetrics

	mu      sync.Mutex
	busy    bool
	current *config.Config
	snap    *snapshot.WorkerSnapshotV1 // built from current
}

type reloadMetrics struct {
	failures *prometheus.CounterVec
	reloads  prometheus.Counter
}

// NewConfigReloader returns a reloader serving initial (already compiled, as the daemon started
// with it) through srv. initial's node-local section (queryflux:) stays in force across reloads:
// listeners, tokens and the role change only with a restart. Run
// srv.RunConfigRefresh(ctx, r.Source, r.Wake(), ...) beside it.
func NewConfigReloader(e env.Env, srv *ConfigServer, initial *config.Config, opts ReloadOptions) (*ConfigReloader, error) {
	if opts.Load == nil {
		panic("controlplane: ReloadOptions.Load is nil")
	}
	r := &ConfigReloader{env: e, local: initial.QueryFlux, srv: srv, opts: opts, wake: e.NewSignal(), idle: e.NewSignal()}
	r.registerMetrics(opts.Registerer)
	snap, err := r.build(initial)
	if err != nil {
		return nil, err
	}
	r.current, r.snap = initial, snap
	return r, nil
}

func (r *ConfigReloader) registerMetrics(reg prometheus.Registerer) {
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queryflux_config_reload_failures_total",
		Help: "Config reloads refused, by stage (file: unreadable, unparsable or not compiling; apply: the node's own query path refused it).",
	}, []string{"stage"})
	reloads := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "queryflux_config_reloads_total",
		Help: "Config file reloads accepted (changed or not).",
	})
	// A second reloader on the same registry (tests) reuses the first one's series.
	failures = promreg.Register(reg, failures)
	reloads = promreg.Register(reg, reloads)
	// Both stages appear at 0 from the start, so a dashboard can rate() them.
	failures.WithLabelValues(ReloadStageFile)
	failures.WithLabelValues(ReloadStageApply)
	r.metrics = reloadMetrics{failures: failures, reloads: reloads}
}

// Wake is the signal the refresh loop waits on.
func (r *ConfigReloader) Wake() env.Signal { return r.wake }

// Source is the ConfigSource of the file: the snapshot of the configuration last accepted.
func (r *ConfigReloader) Source(context.Context) (*snapshot.WorkerSnapshotV1, error) {
	now := r.env.Now()
	r.mu.Lock()
	snap := *r.snap
	r.mu.Unlock()
	snap.ConfirmedAt = now.UTC()
	return &snap, nil
}

// Current is the configuration last accepted (node-local section included).
func (r *ConfigReloader) Current() *config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// Reload re-reads the file. A file that does not compile, or that the node's query path refuses,
// changes nothing; an accepted one is applied, then served to workers, and Reload returns once
// the control plane serves its revision (or ctx ends).
func (r *ConfigReloader) Reload(ctx context.Context) ReloadResult {
	if err := r.take(ctx); err != nil {
		return ReloadResult{Stage: ReloadStageFile, Errors: []adminFieldError{{Message: "reload not started: " + err.Error()}}}
	}
	defer r.release()
	res := r.reload(ctx)
	log := r.env.Logger()
	if !res.OK {
		r.metrics.failures.WithLabelValues(res.Stage).Inc()
		log.Warn("config reload refused; the running configuration stays", "stage", res.Stage,
			"revision", res.Revision, "errors", errorLines(res.Errors))
		return res
	}
	r.metrics.reloads.Inc()
	for _, w := range res.Warnings {
		log.Warn("config reload: " + w)
	}
	log.Info("config reloaded", "revision", res.Revision, "previous", res.PreviousRevision, "changed", res.Changed)
	return res
}

func (r *ConfigReloader) reload(ctx context.Context) ReloadResult {
	prev := r.latestSnapshot()
	res := ReloadResult{Revision: prev.Revision}
	cfg, warnings, err := r.loadFile()
	if err == nil {
		var snap *snapshot.WorkerSnapshotV1
		if snap, err = r.build(cfg); err == nil {
			return r.accept(ctx, cfg, snap, prev, warnings)
		}
	}
	res.Stage, res.Errors = ReloadStageFile, fieldErrors(err)
	return res
}

// accept applies cfg to the node's query path, makes it the served configuration and waits
// until the refresh loop has published it.
func (r *ConfigReloader) accept(ctx context.Context, cfg *config.Config, snap, prev *snapshot.WorkerSnapshotV1, warnings []string) ReloadResult {
	res := ReloadResult{Revision: prev.Revision, PreviousRevision: prev.Revision, Warnings: warnings}
	if r.opts.Apply != nil {
		if err := r.opts.Apply(ctx, cfg); err != nil {
			res.Stage, res.Errors = ReloadStageApply, fieldErrors(err)
			return res
		}
	}
	r.mu.Lock()
	r.current, r.snap = cfg, snap
	r.mu.Unlock()
	r.wake.Notify()
	res.OK, res.Revision, res.Changed = true, snap.Revision, snap.Revision != prev.Revision
	if err := r.waitServed(ctx, snap.Revision); err != nil {
		res.Warnings = append(res.Warnings, "accepted, but not yet served to workers: "+err.Error())
	}
	return res
}

// loadFile reads the file and compiles it as written (so every error in it is reported), then
// returns it with the running node-local section in place of the file's.
func (r *ConfigReloader) loadFile() (*config.Config, []string, error) {
	cfg, err := r.opts.Load()
	if err != nil {
		return nil, nil, err
	}
	cfg.QueryFlux.Role = r.local.Role // the --role flag wins over the file, as at start
	config.ApplyDefaults(cfg)
	if err := config.Compile(cfg); err != nil {
		return nil, nil, err
	}
	var warnings []string
	if !reflect.DeepEqual(cfg.QueryFlux, r.local) {
		warnings = append(warnings, "the queryflux: section changed; node-local settings (listeners, tokens, timing) take effect at the next restart")
	}
	cfg.QueryFlux = r.local
	return cfg, warnings, nil
}

func (r *ConfigReloader) build(cfg *config.Config) (*snapshot.WorkerSnapshotV1, error) {
	opts := r.opts.Snapshot
	opts.ConfirmedAt = r.env.Now()
	return snapshot.Build(cfg, opts)
}

func (r *ConfigReloader) latestSnapshot() *snapshot.WorkerSnapshotV1 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snap
}

// waitServed returns once the server publishes revision, or a newer accepted one.
func (r *ConfigReloader) waitServed(ctx context.Context, revision string) error {
	wctx, cancel := r.env.WithTimeout(ctx, reloadPublishTimeout)
	defer cancel()
	for {
		seen := r.srv.changed.Seq()
		cur := r.srv.Current()
		if cur != nil && (cur.Revision == revision || cur.Revision == r.latestSnapshot().Revision) {
			return nil
		}
		if err := r.srv.changed.Wait(wctx, seen); err != nil {
			return err
		}
	}
}

// take makes reloads run one at a time (a SIGHUP and an HTTP reload may cross). It waits on a
// Signal, never a mutex, so it is safe in the simulator.
func (r *ConfigReloader) take(ctx context.Context) error {
	for {
		seen := r.idle.Seq()
		r.mu.Lock()
		if !r.busy {
			r.busy = true
			r.mu.Unlock()
			return nil
		}
		r.mu.Unlock()
		if err := r.idle.Wait(ctx, seen); err != nil {
			return err
		}
	}
}

func (r *ConfigReloader) release() {
	r.mu.Lock()
	r.busy = false
	r.mu.Unlock()
	r.idle.Notify()
}

// MountReload serves POST /admin/config/reload on cp behind the admin token: 200 with the new
// revision, or 422 with every error of the file and the revision still served. r nil means the
// configuration does not come from a file: 409 saying where it comes from (why).
func MountReload(cp *ControlPlane, r *ConfigReloader, why string) {
	cp.HandleAdmin("POST "+PathAdminConfigReload, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r == nil {
			workerapi.WriteError(w, http.StatusConflict, why, "")
			return
		}
		res := r.Reload(req.Context())
		code := http.StatusOK
		if !res.OK {
			code = http.StatusUnprocessableEntity
		}
		workerapi.WriteJSON(w, code, "application/json", res)
	}))
}

// fieldErrors lists err as the admin API shows configuration errors: every config.FieldError
// with its path, anything else as one pathless message.
func fieldErrors(err error) []adminFieldError {
	var errs config.Errors
	if !errors.As(err, &errs) {
		return []adminFieldError{{Message: err.Error()}}
	}
	out := make([]adminFieldError, len(errs))
	for i, e := range errs {
		out[i] = adminFieldError{Path: e.Path, Message: e.Message, Line: e.Line}
	}
	return out
}

func errorLines(errs []adminFieldError) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = config.FieldError{Path: e.Path, Message: e.Message, Line: e.Line}.Error()
	}
	return out
}

// String summarizes a result in one line (for logs and the CLI).
func (res ReloadResult) String() string {
	if res.OK {
		return fmt.Sprintf("reloaded: revision %s (changed: %v)", res.Revision, res.Changed)
	}
	return fmt.Sprintf("reload refused at stage %s; still serving %s:\n  %s", res.Stage, res.Revision,
		strings.Join(errorLines(res.Errors), "\n  "))
}
