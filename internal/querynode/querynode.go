// Package querynode runs a node's query path: the proxy core built from a configuration and
// rebuilt on every change (engines of unchanged clusters are kept), the enabled frontends'
// listeners, and the clusters' health checks. Every role runs one: a standalone node or control
// plane on its local YAML, a worker on each snapshot its config sync activates.
//
// Before the first configuration is applied the frontends are already listening and answer
// "not configured yet" (the core is not Ready).
//
// determinism: outside the simulator (opens frontend listeners and real engines)
package querynode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/frontend/flightsql"
	"github.com/queryflux/queryflux/internal/frontend/mysqlwire"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/frontend/trinohttp"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/loginlimit"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/policy"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// Health check timing defaults (queryflux.healthCheck's).
const (
	HealthEveryDefault   = config.HealthEverySecsDefault * time.Second
	HealthTimeoutDefault = config.HealthTimeoutSecsDefault * time.Second
)

// LoopbackUser is the user the embedded default's banner suggests; with
// settings.security.trustLoopback any name logs in from loopback.
const LoopbackUser = "queryflux"

// Options configure a Node. Env is required.
type Options struct {
	Env        env.Env
	Registerer prometheus.Registerer // the core's metrics; nil keeps them unregistered
	// Guard hands out capacity slots: nil means a LocalGuard (standalone); a worker passes its
	// control-plane lease guard.
	Guard proxy.Guard
	// OnFinish receives every finished query (history); it must not block.
	OnFinish func(*proxy.Record)
	// OpenEngine opens a cluster's engine (required: EngineFactory(Engines()) in the daemon).
	OpenEngine proxy.EngineFactory
	// Compile compiles each configuration Apply gets (nil: proxy.Compile). What it returns is
	// only read, so one that shares its plans between nodes (a simulated fleet) may.
	Compile func(*config.Config) (*proxy.Plan, error)
	// HealthEvery and HealthTimeout pace the cluster health checks of Run.
	HealthEvery, HealthTimeout time.Duration
	// Limits bound each frontend listener before clients are trusted (zero fields: defaults).
	Limits netlimit.Limits
	// LoginThrottle bounds failed logins per source on every frontend (zero fields: defaults).
	LoginThrottle loginlimit.Config
	// Forward, on a worker, sends requests for queries other workers own to them (Trino
	// follow-ups, Flight SQL tickets); nil on other roles.
	Forward *forward.Forwarder
	// StartWait is how long after New a login or query that arrives before the first
	// configuration waits for it (proxy.Options.StartWait).
	StartWait time.Duration
}

// LimitsOf turns queryflux.limits into listener limits.
func LimitsOf(l config.Limits) netlimit.Limits {
	return netlimit.Limits{
		ConnectionsMax:       l.MaxConnections,
		SourceConnectionsMax: l.MaxConnectionsPerSource,
		HandshakeTimeout:     time.Duration(l.HandshakeTimeoutSecs) * time.Second,
		PreAuthBytesMax:      l.MaxPreAuthMessageBytes,
		MessageBytesMax:      l.MaxMessageBytes,
		MessageTimeout:       time.Duration(l.MessageTimeoutSecs) * time.Second,
		WriteStallTimeout:    time.Duration(l.WriteStallTimeoutSecs) * time.Second,
		KeepaliveTime:        time.Duration(l.KeepaliveTimeSecs) * time.Second,
		KeepaliveTimeout:     time.Duration(l.KeepaliveTimeoutSecs) * time.Second,
		HeldBytesMax:         l.MaxHeldBytesPerConnection,
		Held:                 heldmem.NewPool(l.MaxHeldBytes),
		InFlight:             heldmem.NewPool(l.MaxHeldBytes),
	}.WithDefaults()
}

// ThrottleOf turns queryflux.limits.loginThrottle into the throttle's bounds. A login that
// never reports back stops counting as under way after the handshake timeout.
func ThrottleOf(l config.Limits) loginlimit.Config {
	t := l.LoginThrottle
	return loginlimit.Config{
		Disabled:        t.Disabled,
		Failures:        t.Failures,
		Window:          time.Duration(t.WindowSecs) * time.Second,
		Backoff:         time.Duration(t.BackoffSecs) * time.Second,
		UserFailures:    t.UserFailures,
		EntriesMax:      t.MaxEntries,
		InFlightTimeout: LimitsOf(l).HandshakeTimeout,
	}.WithDefaults()
}

// frontend is what every protocol server offers.
type frontend interface {
	Serve(net.Listener) error
	Close() error
}

// Node is one node's query path.
type Node struct {
	opts Options
	core *proxy.Core
	log  *slog.Logger

	applyMu sync.Mutex           // one configuration change at a time
	policy  *policy.Policy       // logins, access control, guard and translation scripts (internal/policy)
	logins  *loginlimit.Throttle // failed logins by source, shared by every frontend
	tls     certs.Switch         // the frontends' certificate: settings.security.tls, unless pinned
	pinned  bool                 // queryflux.tls named this node's own certificate (UseCertificate)

	mu        sync.Mutex
	frontends []frontend
	addrs     map[string]string // protocol -> bound address
	wg        sync.WaitGroup
	closed    bool
	draining  atomic.Bool // Drain began: listeners closing is expected
}

// New returns a node whose core has no configuration yet.
func New(opts Options) *Node {
	if opts.Env == nil {
		panic("querynode.New: Options.Env is required")
	}
	if opts.OpenEngine == nil {
		panic("querynode.New: Options.OpenEngine is required")
	}
	if opts.HealthEvery <= 0 {
		opts.HealthEvery = HealthEveryDefault
	}
	if opts.HealthTimeout <= 0 {
		opts.HealthTimeout = HealthTimeoutDefault
	}
	pol := policy.New(opts.Registerer)
	po := proxy.Options{Env: opts.Env, Guard: opts.Guard, Registerer: opts.Registerer, OnFinish: opts.OnFinish, Check: pol.Check, StartWait: opts.StartWait}
	if opts.Forward != nil {
		po.Locality = opts.Forward.Locality()
	}
	core := proxy.New(po)
	logins := loginlimit.New(opts.LoginThrottle, opts.Env.Now, opts.Env.Logger(), opts.Registerer)
	return &Node{opts: opts, core: core, policy: pol, logins: logins, log: opts.Env.Logger(), addrs: map[string]string{}}
}

// Core is the node's proxy core (a query.Backend).
func (n *Node) Core() *proxy.Core { return n.core }

// Apply builds a runtime for cfg, reusing the engines of clusters that did not change, and
// activates it. On error the previous runtime stays active and nothing leaks.
func (n *Node) Apply(cfg *config.Config) error {
	n.applyMu.Lock()
	defer n.applyMu.Unlock()
	pol, err := policy.Compile(cfg)
	if err != nil {
		return fmt.Errorf("compiling the policy: %w", err)
	}
	if !n.pinned {
		t := cfg.Settings.Security.TLS
		if err := n.tls.Set(t.CertFile, t.KeyFile); err != nil {
			return fmt.Errorf("settings.security.tls: %w", err)
		}
	}
	plan, err := n.compile(cfg)
	var rt *proxy.Runtime
	if err == nil {
		rt, err = plan.Build(n.opts.OpenEngine, proxy.Reuse(n.core.Runtime()))
	}
	if err != nil {
		return fmt.Errorf("building the query runtime: %w", err)
	}
	n.policy.Activate(pol)
	n.core.Activate(rt)
	if sec := &cfg.Settings.Security; len(sec.Users) == 0 && !sec.TrustLoopback && anyFrontend(&cfg.QueryFlux.Frontends) {
		n.log.Warn("settings.security has no users and trustLoopback is off: every frontend login is refused")
	}
	n.log.Info("query configuration active", "clusters", len(cfg.Clusters), "groups", len(cfg.ClusterGroups))
	return nil
}

func (n *Node) compile(cfg *config.Config) (*proxy.Plan, error) {
	if n.opts.Compile != nil {
		return n.opts.Compile(cfg)
	}
	return proxy.Compile(cfg)
}

// UseCertificate pins the frontends' certificate to this node's own (queryflux.tls):
// settings.security.tls is then ignored. Call it before Apply.
func (n *Node) UseCertificate(certFile, keyFile string) error {
	n.applyMu.Lock()
	defer n.applyMu.Unlock()
	if err := n.tls.Set(certFile, keyFile); err != nil {
		return fmt.Errorf("queryflux.tls: %w", err)
	}
	n.pinned = true
	return nil
}

// Listen opens a listener for every enabled frontend of f and serves it in the background.
// On error the listeners opened so far are closed.
func (n *Node) Listen(f config.Frontends) error {
	for _, fe := range []struct {
		name string
		cfg  config.Frontend
		make func(gate query.Gate) (frontend, error)
	}{
		{"postgres", f.Postgres, n.newPgwire},
		{"mysql", f.MySQL, n.newMySQL},
		{"trino", f.Trino, func(gate query.Gate) (frontend, error) { return n.newTrino(gate, f.Trino) }},
		{"flightsql", f.FlightSQL, func(gate query.Gate) (frontend, error) { return n.newFlightSQL(gate, f.FlightSQL) }},
	} {
		if !fe.cfg.Enabled {
			continue
		}
		gate := loginlimit.Gate{Gate: listenerGate{Gate: n.policy, requireTLS: fe.cfg.RequireTLS}, Throttle: n.logins}
		if err := n.listen(fe.name, fe.cfg.Listen, func() (frontend, error) { return fe.make(gate) }); err != nil {
			_ = n.Close()
			return err
		}
	}
	return nil
}

func (n *Node) listen(name, addr string, make func() (frontend, error)) error {
	srv, err := make()
	if err != nil {
		return fmt.Errorf("frontend %s: %w", name, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("frontend %s listener: %w", name, err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		_ = ln.Close()
		_ = srv.Close()
		return errors.New("query node closed")
	}
	n.frontends = append(n.frontends, srv)
	n.addrs[name] = ln.Addr().String()
	n.wg.Add(1)
	n.mu.Unlock()
	n.log.Info("listening", "frontend", name, "addr", ln.Addr().String())
	go func() {
		defer n.wg.Done()
		if err := srv.Serve(ln); err != nil && !n.isClosed() && !(n.draining.Load() && errors.Is(err, net.ErrClosed)) {
			n.log.Error("frontend stopped", "frontend", name, "err", redact.Error(err))
		}
	}()
	return nil
}

// The frontends ask the policy (through the listener's gate) whom to let in: users of
// settings.security.users with their password, or with settings.security.trustLoopback any
// loopback client; they offer TLS while a certificate is configured.

func (n *Node) newPgwire(gate query.Gate) (frontend, error) {
	return pgwire.NewServer(n.core, pgwire.Options{Gate: gate, Authenticator: n.policy.Postgres(), TLS: n.tls.Config, Logger: n.log, Limits: n.opts.Limits,
		Registerer: n.opts.Registerer}), nil
}

func (n *Node) newMySQL(gate query.Gate) (frontend, error) {
	return mysqlwire.NewServer(n.core, mysqlwire.Options{Gate: gate, Users: n.policy.MySQL(), TLS: n.tls.Config, Logger: n.log, Limits: n.opts.Limits,
		Registerer: n.opts.Registerer})
}

func (n *Node) newTrino(gate query.Gate, f config.Frontend) (frontend, error) {
	return trinohttp.NewServer(n.core, trinohttp.Options{Gate: gate, Auth: n.policy.Trino(), TLS: n.tls.Config, Logger: n.log, Limits: n.opts.Limits,
		AbandonAfter: time.Duration(f.ClientTimeoutSecs) * time.Second, Forward: n.opts.Forward, Registerer: n.opts.Registerer,
		PostWait: time.Duration(f.PostWaitMicros) * time.Microsecond, PostAnswerClients: f.PostAnswerClients})
}

func (n *Node) newFlightSQL(gate query.Gate, f config.Frontend) (frontend, error) {
	return flightsql.NewServer(n.core, flightsql.Options{Gate: gate, Auth: n.policy.FlightSQL(), TLS: n.tls.Config, Logger: n.log, Limits: n.opts.Limits,
		Forward: n.opts.Forward, Registerer: n.opts.Registerer, ResultTTL: time.Duration(f.ResultTTLSecs) * time.Second})
}

func anyFrontend(f *config.Frontends) bool {
	return f.Postgres.Enabled || f.MySQL.Enabled || f.Trino.Enabled || f.FlightSQL.Enabled
}

// listenerGate adds a listener's own requireTLS to the policy's gate.
type listenerGate struct {
	query.Gate
	requireTLS bool
}

func (g listenerGate) Admit(l query.Login) (bool, error) {
	if g.requireTLS && !l.TLS {
		return false, policy.Refusal("this listener accepts only encrypted connections: connect with TLS")
	}
	return g.Gate.Admit(l)
}

// Addrs returns the bound address of each listening frontend, by protocol.
func (n *Node) Addrs() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]string, len(n.addrs))
	for k, v := range n.addrs {
		out[k] = v
	}
	return out
}

// Run checks the active clusters' health every HealthEvery until ctx ends.
func (n *Node) Run(ctx context.Context) {
	_ = env.Every(ctx, n.opts.Env, n.opts.HealthEvery, func(ctx context.Context) {
		n.core.CheckHealth(ctx, n.opts.HealthTimeout)
	})
}

// HealthDuty is Run as a duty of the node's env.Loop: the clusters' health checks, the first
// HealthEvery after the loop starts and then HealthEvery after each check ends.
func (n *Node) HealthDuty() *env.Duty {
	return &env.Duty{Name: "cluster-health", Blocks: true, First: n.opts.HealthEvery,
		Run: func(ctx context.Context, _ time.Time) time.Time {
			n.core.CheckHealth(ctx, n.opts.HealthTimeout)
			return n.opts.Env.Now().Add(n.opts.HealthEvery)
		}}
}

func (n *Node) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}

// drainer is a frontend that can end at its clients' transaction boundaries.
type drainer interface {
	Drain(ctx context.Context) error
}

// Drain stops accepting on every frontend and waits, until ctx ends, for the clients of those
// that can drain to finish their open transactions (idle clients are disconnected at once).
// Frontends without transactions to wait for stop at Close. Call Close afterwards.
func (n *Node) Drain(ctx context.Context) error {
	n.draining.Store(true)
	n.mu.Lock()
	fes := slices.Clone(n.frontends)
	n.mu.Unlock()
	var errs []error
	for _, fe := range fes {
		if d, ok := fe.(drainer); ok {
			if err := d.Drain(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close stops every frontend (open connections end) and waits for their accept loops.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	fes := n.frontends
	n.mu.Unlock()
	var errs []error
	for _, fe := range fes {
		if err := fe.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	n.wg.Wait()
	n.core.Close()
	return errors.Join(errs...)
}
