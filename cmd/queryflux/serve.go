package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/gcfloor"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/history/pghistory"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/querynode"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/internal/registry/pgregistry"
	"github.com/queryflux/queryflux/internal/studio/planning"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/spf13/cobra"
)

// Daemon is what serve builds a role from.
type Daemon struct {
	Env     env.Env
	Config  *config.Config
	Metrics *prometheus.Registry
	Logger  *slog.Logger
	// Pool is the control plane's database (nil when none is configured, and on workers).
	Pool *pgxpool.Pool
	// ConfigFile is the --config path ("" when running the embedded default); reloads read it.
	ConfigFile string
	// AdvertiseHost is the host peers reach a worker's frontends at (--advertise-host).
	AdvertiseHost string
	// Secrets is what the shared sections' references resolve from: the process's environment
	// and files, bounded by queryflux.sharedSecrets (config.SharedSecretSource).
	Secrets config.SecretSource
}

// role is a built role (assembly.ControlPlane or assembly.Worker) as serve runs it.
type role interface {
	Start(ctx context.Context) error
	SetDraining()
	Drain(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// shutdownRole runs once the role's servers have drained: close the frontends, flush the
// history uplink (and a control plane's registry), within 20 s.
func shutdownRole(d *Daemon, r role) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		d.Logger.Error("final flush failed", "err", redact.Error(err))
	}
}

// serveFlags are the daemon's command-line settings: what the config file does not say (a
// worker's identity, its ops listener) and sub-second timing for tests.
type serveFlags struct {
	role, configFile, name, listen, opsListen string
	advertiseHost                             string
	labels                                    []string
	heartbeat, staleAfter, grace, lagMax      time.Duration
	reaper, probe                             time.Duration
	allowShort                                bool
	drainTimeout, drainDelay                  time.Duration
	memoryHeadroom                            int64
	log                                       logFlags
}

func newServeCommand() *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a QueryFlux node: standalone, controlPlane or worker",
		Long: `Run a QueryFlux node: standalone, controlPlane or worker (queryflux.role, or --role).

Without --config it runs the embedded default: a standalone node on 127.0.0.1 with a DuckDB
demo dataset (PostgreSQL wire 15432, MySQL 13306, Trino HTTP 18080, Flight SQL 18815, admin API
and /metrics 19000). QUERYFLUX_PORT_OFFSET=N moves every port by N; QUERYFLUX_ADMIN_TOKEN sets the
admin token (else a random one is written to a file whose path is logged).

With --config FILE it runs that YAML configuration (docs/configuration.md is the reference;
check a file with: queryflux config check FILE). SIGHUP, or POST /admin/config/reload, re-reads
the file; a bad file keeps the running configuration.

SIGTERM: /readyz turns 503 at once, the node keeps serving for --drain-delay, then stops
accepting and gives in-flight work --drain-timeout to finish, flushes its history and exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serve(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.role, "role", "", "standalone, controlPlane or worker (overrides queryflux.role)")
	fl.StringVar(&f.configFile, "config", "", "configuration file (YAML)")
	fl.StringVar(&f.name, "name", envOr("QUERYFLUX_WORKER_NAME", ""), "worker name (default: the host name; or QUERYFLUX_WORKER_NAME)")
	fl.StringArrayVar(&f.labels, "label", nil, "worker label key=value, added over queryflux.labels (repeatable)")
	fl.StringVar(&f.advertiseHost, "advertise-host", envOr("QUERYFLUX_ADVERTISE_HOST", ""), "host or IP at which peer workers reach this worker's Trino and Flight SQL frontends, to forward requests for queries it owns (default: the listener's host, or the host name when it listens on all addresses; or QUERYFLUX_ADVERTISE_HOST)")
	fl.StringVar(&f.listen, "listen", "", "admin and worker API listener of a control plane (overrides queryflux.adminApi.listen; default 127.0.0.1:9000)")
	fl.StringVar(&f.opsListen, "ops-listen", "127.0.0.1:9100", "a worker's ops listener (/health, /readyz, /metrics, /worker/status)")
	fl.DurationVar(&f.heartbeat, "heartbeat-interval", 0, "overrides queryflux.heartbeatIntervalSecs (sub-second values need --allow-short-timeouts)")
	fl.DurationVar(&f.staleAfter, "stale-after", 0, "overrides queryflux.registry.staleAfterSecs")
	fl.DurationVar(&f.grace, "evict-grace", 0, "overrides queryflux.registry.graceSecs")
	fl.DurationVar(&f.reaper, "reaper-interval", 0, "a control plane's registry reaper tick (default min(staleAfter/3, heartbeat interval))")
	fl.DurationVar(&f.probe, "health-probe-interval", 0, "a worker's self-health probe period (default 1s)")
	fl.DurationVar(&f.lagMax, "health-lag-threshold", 250*time.Millisecond, "a worker's self-health: probe lateness that counts as a bad probe (3 in a row: unhealthy)")
	fl.BoolVar(&f.allowShort, "allow-short-timeouts", false, "lift the production minimums on heartbeat and reaper timing (tests only)")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 15*time.Second, "how long SIGTERM waits for in-flight requests")
	fl.DurationVar(&f.drainDelay, "drain-delay", 0, "after SIGTERM, how long /readyz answers 503 while everything still serves (lets a load balancer stop sending new clients first)")
	fl.Int64Var(&f.memoryHeadroom, "memory-headroom", memoryHeadroomDefault, "bytes the Go runtime's soft memory limit leaves above queryflux.limits.maxHeldBytes (the limit is their sum; below 0: no limit; GOMEMLIMIT in the environment wins)")
	f.log.register(cmd)
	return cmd
}

// loadConfig is the daemon's configuration and what its shared sections' references resolve
// from later (Daemon.Secrets).
func loadConfig(f *serveFlags, log *slog.Logger) (*config.Config, config.SecretSource, error) {
	cfg := &config.Config{}
	shared := config.SharedSecretSource(cfg.QueryFlux, "", config.OSSecrets)
	if f.configFile != "" {
		loaded, src, err := loadResolved(f.configFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.configFile, err)
		}
		cfg, shared = loaded, src
	} else if f.role == "" || f.role == string(config.RoleStandalone) {
		def, err := embeddedDefault(log)
		if err != nil {
			return nil, nil, err
		}
		cfg = def
	}
	if f.role != "" {
		cfg.QueryFlux.Role = config.Role(f.role)
	}
	config.ApplyDefaults(cfg)
	// Compile, not just Validate: routers, scripts and engine checks registered by other
	// packages must reject a bad file at start, as they reject a bad snapshot.
	var errs config.Errors
	if err := config.Compile(cfg); errors.As(err, &errs) {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, nil, fmt.Errorf("invalid configuration:\n  %s", strings.Join(msgs, "\n  "))
	} else if err != nil {
		return nil, nil, fmt.Errorf("invalid configuration: %w", err)
	}
	return cfg, shared, nil
}

func serve(ctx context.Context, f *serveFlags) error {
	base, err := f.log.logger(logScrub.to(os.Stderr))
	if err != nil {
		return err
	}
	slog.SetDefault(base) // libraries' own log lines keep the chosen level and format too
	cfg, shared, err := loadConfig(f, base)
	if err != nil {
		return err
	}
	logScrub.add(configSecrets(cfg)...)
	logger := base.With("role", string(cfg.QueryFlux.Role))
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d := &Daemon{Env: env.Real(logger), Config: cfg, Metrics: metrics, Logger: logger, ConfigFile: f.configFile, AdvertiseHost: f.advertiseHost, Secrets: shared}

	setMemoryLimit(logger, cfg.QueryFlux.Limits, f.memoryHeadroom, os.Getenv("GOMEMLIMIT"))
	defer gcfloor.Start(serveGCFloor)()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cfg.QueryFlux.Role {
	case config.RoleWorker:
		return serveWorker(ctx, d, f)
	default:
		return serveControlPlane(ctx, d, f)
	}
}

// serveGCFloor is the garbage collector's headroom while the daemon serves (gcfloor.Start): a
// cycle no sooner than 32 MB of allocation after the last. A daemon's live heap is a few MB (a
// worker's, one whose history is in a database, a standalone's for its first 30,000 or so
// statements), and at GOGC=100 the collector then ran every 1,100 Trino SELECT 1s, a fifth of
// their instructions (RESULTS.md, "Trino HTTP SELECT 1 ... (#22, session 33, trino)"). A live
// heap above 32 MB (an in-memory history of 100,000 records holds about 54) keeps GOGC as it
// is; GOGC=off and GOMEMLIMIT still rule.
const serveGCFloor = 32 << 20

func secs(n int) time.Duration { return time.Duration(n) * time.Second }

func orFlag(flag, fromFile time.Duration) time.Duration {
	if flag != 0 {
		return flag
	}
	return fromFile
}

func serveControlPlane(ctx context.Context, d *Daemon, f *serveFlags) error {
	q := d.Config.QueryFlux
	store, closeStore, err := openRegistry(ctx, d)
	if err != nil {
		return err
	}
	defer closeStore()
	cpCfg := controlplane.Config{
		AdminToken:         q.AdminAPI.Token.Reveal(),
		HeartbeatInterval:  orFlag(f.heartbeat, secs(q.HeartbeatIntervalSecs)),
		StaleAfter:         orFlag(f.staleAfter, secs(q.Registry.StaleAfterSecs)),
		EvictGrace:         orFlag(f.grace, secs(q.Registry.GraceSecs)),
		MaxWorkers:         q.Registry.MaxWorkers,
		ReaperInterval:     f.reaper,
		AllowShortTimeouts: f.allowShort,
		Metrics:            d.Metrics,
	}
	if q.WorkerAPI.Enabled {
		cpCfg.WorkerSecret = q.WorkerAPI.Secret.Reveal()
	} else if q.Role == config.RoleControlPlane {
		d.Logger.Warn("queryflux.workerApi.enabled is false: workers cannot register")
	}
	if cpCfg.AdminToken == "" {
		d.Logger.Warn("queryflux.adminApi.token is empty: the admin API refuses every call (401); set it to use the admin API and CLI")
	} else {
		d.Logger.Info("admin API enabled (bearer token from queryflux.adminApi.token)")
	}
	cpCfg = cpCfg.WithDefaults()
	if err := cpCfg.Validate(); err != nil {
		return fmt.Errorf("control plane timing: %w", err)
	}
	cfgDeps, stored, err := controlPlaneConfig(d)
	if err != nil {
		return err
	}
	c, err := assembly.BuildControlPlane(d.Env, d.Config, cpCfg, assembly.ControlPlaneDeps{
		Metrics: d.Metrics, Registry: store, Leases: leaseStore(d), History: historyStore(d),
		Config: cfgDeps, Ready: databaseReady(d), OnApply: scrubSecrets, CapacityStatsEvery: capacityStatsEvery,
		StudioPlanning: planning.New(time.Now), Fence: testEngineFence(d), OpenEngine: querynode.EngineFactory(querynode.Engines()),
		NoContentionWatch: testNoContentionWatch(d),
	})
	if err != nil {
		return err
	}
	if stored != nil {
		go listenForConfig(ctx, d, stored, c.ConfigChanged)
	}
	onHangup(ctx, d, func() {
		switch {
		case stored != nil:
			d.Logger.Info("SIGHUP: re-reading the configuration stored in Postgres")
		case d.ConfigFile == "":
			d.Logger.Warn("SIGHUP: no configuration file to reload (embedded default)")
		default:
			d.Logger.Info("SIGHUP: reloading the configuration file", "file", d.ConfigFile)
		}
		c.ReloadConfig(ctx)
	})
	roleCtx, cancelRole := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRole()
	if err := c.Start(roleCtx); err != nil {
		return err
	}
	listen := f.listen
	if listen == "" {
		listen = q.AdminAPI.Listen
	}
	if listen == "" {
		listen = "127.0.0.1:9000"
	}
	apiTLS, err := listenerTLS(q.TLS, d.Config.Settings.Security.TLS)
	if err != nil {
		return err
	}
	// On SIGTERM the role stops first: a draining control plane that workers cannot reach must
	// not evict them, and long-polls bound to the role's context end instead of holding the drain.
	err = runServers(ctx, roleCtx, cancelRole, d.Logger, d.Metrics, f.drainDelay, f.drainTimeout, querynode.LimitsOf(q.Limits), c, namedServer{"api", listen, c.Handler(), apiTLS})
	shutdownRole(d, c)
	return err
}

// leaseStore is the capacity lease table workers' leases live in: Postgres when configured,
// else memory (nil when workers may not register).
// testEngineFence is nil (the engine fence on the configuration's clusters) unless the test
// hook turns the fence off (assembly.TestNoEngineFenceEnv), which is logged loudly.
func testEngineFence(d *Daemon) capacity.EngineFence {
	if os.Getenv(assembly.TestNoEngineFenceEnv) != "1" {
		return nil
	}
	d.Logger.Warn("the engine fence is off: reclaimed leases' queries keep running; never set this outside tests", "env", assembly.TestNoEngineFenceEnv)
	return assembly.NoFence
}

// testNoContentionWatch is false unless the test hook leaves the contention watch's route out
// (assembly.TestNoContentionWatchEnv), which is logged loudly.
func testNoContentionWatch(d *Daemon) bool {
	if os.Getenv(assembly.TestNoContentionWatchEnv) != "1" {
		return false
	}
	d.Logger.Warn("the contention watch's route is off: workers check reused leases with renewals; never set this outside tests", "env", assembly.TestNoContentionWatchEnv)
	return true
}

func leaseStore(d *Daemon) assembly.LeaseStore {
	if !d.Config.QueryFlux.WorkerAPI.Enabled {
		return nil
	}
	if d.Pool != nil {
		return pgcapacity.New(d.Pool).WithMetrics(d.Metrics)
	}
	d.Logger.Info("no database configured: capacity leases live in memory")
	return capacity.NewMemory().Monotonic(d.Env)
}

// historyStore is the fleet's query history: Postgres when configured, else memory.
func historyStore(d *Daemon) assembly.HistoryStore {
	if d.Pool != nil {
		return pghistory.New(d.Pool)
	}
	d.Logger.Info("no database configured: query history lives in memory", "records", assembly.HistoryMemoryRecordsMax)
	return history.NewMemory(assembly.HistoryMemoryRecordsMax)
}

// databaseReady is the /readyz check of the control plane's database, if it has one.
func databaseReady(d *Daemon) []assembly.ReadyCheck {
	if d.Pool == nil {
		return nil
	}
	return []assembly.ReadyCheck{{Name: "database", Check: func(ctx context.Context) error {
		if err := d.Pool.Ping(ctx); err != nil {
			d.Logger.Warn("readiness: the database does not answer", "err", redact.Error(err))
			return errors.New("the database does not answer")
		}
		return nil
	}}}
}

// openRegistry picks the worker registry: Postgres when a database URL is configured, else memory.
func openRegistry(ctx context.Context, d *Daemon) (registry.Store, func(), error) {
	url := d.Config.QueryFlux.Persistence.DatabaseURL.Reveal()
	if url == "" {
		d.Logger.Info("no database configured: the worker registry lives in memory")
		return registry.NewMemory(), func() {}, nil
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(octx, url)
	if err == nil {
		err = pool.Ping(octx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, nil, fmt.Errorf("connecting to queryflux.persistence.databaseUrl: %w", err)
	}
	d.Pool = pool
	store := pgregistry.New(pool)
	if _, err := store.List(octx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("%w (has `queryflux migrate` been run?)", err)
	}
	return store, pool.Close, nil
}

func serveWorker(ctx context.Context, d *Daemon, f *serveFlags) error {
	q := d.Config.QueryFlux
	name := f.name
	if name == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--name not given and no host name: %w", err)
		}
		name = host
	}
	labels, err := workerLabels(q.Labels, f.labels)
	if err != nil {
		return err
	}
	wCfg := worker.Config{
		ControlPlaneURL:     q.ControlPlane.URL,
		Secret:              q.ControlPlane.Secret.Reveal(),
		Name:                name,
		Version:             version,
		Labels:              labels,
		Frontends:           enabledFrontends(q.Frontends),
		HeartbeatInterval:   orFlag(f.heartbeat, secs(q.HeartbeatIntervalSecs)),
		LagThreshold:        f.lagMax,
		HealthProbeInterval: f.probe,
		Metrics:             d.Metrics,
	}
	if err := wCfg.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if u, err := url.Parse(q.ControlPlane.URL); err == nil && u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		d.Logger.Warn("the control plane is reached over plain http: the worker secret, session tokens and engine passwords "+
			"travel in clear (use an https:// url, with queryflux.controlPlane.tls)", "url", u.Redacted())
	}
	opsTLS, err := listenerTLS(q.TLS, config.TLS{})
	if err != nil {
		return err
	}
	clientTLS, err := controlPlaneTLS(q)
	if err != nil {
		return err
	}
	deps := assembly.WorkerDeps{
		Metrics: d.Metrics,
		// Keep-alive connections for every concurrent lease acquire; never a Timeout (Env contexts).
		Client:    worker.NewControlPlaneClient(clientTLS),
		Snapshots: workerStateDir(d, name),
		OnApply:   scrubSecrets,
		// Peers are verified as the control plane is: queryflux.controlPlane.tls.
		ForwardClient: forward.NewClient(clientTLS),
		Endpoints:     workerEndpoints(d, f.opsListen),
		OpenEngine:    querynode.EngineFactory(querynode.Engines()),
	}
	if len(q.ControlPlane.PeerBootstrap.Address) > 0 {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = clientTLS
		deps.PeerClient = &http.Client{Transport: t}
	}
	w, err := assembly.BuildWorker(d.Env, d.Config, wCfg, deps)
	if err != nil {
		return err
	}
	// SIGHUP would end the process (its default action).
	onHangup(ctx, d, func() {
		d.Logger.Info("SIGHUP ignored: a worker's configuration comes from the control plane")
	})
	roleCtx, cancelRole := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRole()
	if err := w.Start(roleCtx); err != nil {
		return err
	}
	err = runServers(ctx, roleCtx, cancelRole, d.Logger, d.Metrics, f.drainDelay, f.drainTimeout, querynode.LimitsOf(q.Limits), w, namedServer{"ops", f.opsListen, w.Handler(), opsTLS})
	shutdownRole(d, w)
	return err
}

// workerLabels are queryflux.labels with each --label flag (key=value) added over them.
func workerLabels(fromConfig map[string]string, flags []string) (map[string]string, error) {
	labels := maps.Clone(fromConfig)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, p := range flags {
		k, v, err := config.ParseLabel(p)
		if err != nil {
			return nil, fmt.Errorf("--label: %w", err)
		}
		labels[k] = v
	}
	if len(labels) > config.LabelsMax {
		return nil, fmt.Errorf("--label: more than %d labels", config.LabelsMax)
	}
	return labels, nil
}

func enabledFrontends(f config.Frontends) []string {
	var out []string
	for name, fe := range map[string]config.Frontend{"postgres": f.Postgres, "mysql": f.MySQL, "trino": f.Trino, "flightsql": f.FlightSQL} {
		if fe.Enabled {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// capacityStatsEvery is the capacity stats' sampling period: their ring of 720 samples then
// spans an hour.
const capacityStatsEvery = 5 * time.Second

// Bounds on the admin, worker API and ops listeners' requests: the largest body any handler
// takes is a history batch (each handler also caps its own).
const (
	apiBodyBytesMax   = history.BatchBytesMax + 1<<20
	apiHeaderBytesMax = 64 << 10
)

// namedServer is one HTTP listener; with tls set it serves https only.
type namedServer struct {
	name, addr string
	handler    http.Handler
	tls        *tls.Config
}

// controlPlaneTLS is how a worker verifies its control plane and its peers (and presents its
// own client certificate): queryflux.controlPlane.tls.
func controlPlaneTLS(q config.QueryFlux) (*tls.Config, error) {
	ct := q.ControlPlane.TLS
	cfg, err := certs.Client(ct.CAFile, ct.CertFile, ct.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("queryflux.controlPlane.tls: %w", err)
	}
	return cfg, nil
}

// listenerTLS is the admin / worker API or ops listener's TLS: the node's own certificate
// (with its client CA for mutual TLS), else the frontends' one, else none (plain http).
func listenerTLS(node config.NodeTLS, shared config.TLS) (*tls.Config, error) {
	switch {
	case node.CertFile != "":
		cfg, err := certs.Server(node.CertFile, node.KeyFile, node.ClientCAFile, node.RequireClientCert)
		if err != nil {
			return nil, fmt.Errorf("queryflux.tls: %w", err)
		}
		return cfg, nil
	case shared.CertFile != "":
		cfg, err := certs.Server(shared.CertFile, shared.KeyFile, "", false)
		if err != nil {
			return nil, fmt.Errorf("settings.security.tls: %w", err)
		}
		return cfg, nil
	}
	return nil, nil
}

// runServers serves until ctx ends (SIGTERM); then readiness turns false for drainDelay while
// everything still serves, then it calls stopRole and drains: no new connections, in-flight
// requests get drainTimeout to finish. Requests' contexts derive from roleCtx, so handlers
// waiting on the role (long-polls) end when it stops.
func runServers(ctx, roleCtx context.Context, stopRole func(), log *slog.Logger, reg prometheus.Registerer, drainDelay, drainTimeout time.Duration, lim netlimit.Limits, r role, servers ...namedServer) error {
	errs := make(chan error, len(servers))
	var running []*http.Server
	for _, s := range servers {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			return fmt.Errorf("%s listener: %w", s.name, err)
		}
		// One source's connections that have not delivered a whole request (half-open, or
		// sending headers a byte at a time until the handshake timeout) are at most its share
		// of the limit: with no share, one source held every connection netlimit.HTTP allows
		// and the workers' heartbeats were turned away.
		refuse := netlimit.RefuseHTTP
		if s.tls != nil {
			refuse = nil
		}
		ln = netlimit.PerSource(ln, lim.SourceConnectionsMax, refuse, netlimit.SourceRefused(s.name, netlimit.BoundRefusals(reg), log))
		srv := &http.Server{Handler: netlimit.RequestsLeaveShare(netlimit.WriteBound(netlimit.BodyTimeout(http.MaxBytesHandler(s.handler, apiBodyBytesMax), lim.MessageTimeout), lim.MessageTimeout)),
			ReadHeaderTimeout: lim.HandshakeTimeout, MaxHeaderBytes: apiHeaderBytesMax, IdleTimeout: lim.IdleTimeout,
			BaseContext: func(net.Listener) context.Context { return roleCtx }}
		netlimit.HTTP(srv, lim.ConnectionsMax)
		running = append(running, srv)
		log.Info("listening", "server", s.name, "addr", ln.Addr().String(), "tls", s.tls != nil)
		if s.tls == nil && !isLoopbackAddr(ln.Addr()) {
			log.Warn("plain http beyond this host: "+plainHTTPCarries[s.name]+" travel in clear (set queryflux.tls)",
				"server", s.name, "addr", ln.Addr().String())
		}
		serve := srv.Serve
		if s.tls != nil {
			srv.TLSConfig = s.tls
			serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
		}
		go func() {
			if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("%s server: %w", s.name, err)
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
		r.SetDraining()
		log.Info("shutting down: not ready, still serving", "delay", drainDelay)
		select {
		case <-time.After(drainDelay):
		case err = <-errs:
		}
		log.Info("shutting down: draining in-flight requests", "timeout", drainTimeout)
	case err = <-errs:
	}
	r.SetDraining()
	dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	// Clients' open transactions end while the role still runs: their statements still need
	// capacity leases, and the leases renewals.
	if derr := r.Drain(dctx); derr != nil {
		log.Warn("drain cut short: clients still in a transaction are disconnected", "err", redact.Error(derr))
	}
	stopRole()
	for _, srv := range running {
		if serr := srv.Shutdown(dctx); serr != nil {
			log.Warn("drain cut short", "err", redact.Error(serr))
		}
	}
	log.Info("stopped")
	return err
}

// plainHTTPCarries says, per listener, which secrets its plain http would carry in clear.
var plainHTTPCarries = map[string]string{
	"api": "the admin token, the worker secret, session tokens and the engine passwords of worker snapshots",
	"ops": "the worker secret and the snapshot peers copy from this worker (engine passwords)",
}

// isLoopbackAddr reports whether a listener's address is on this host only.
func isLoopbackAddr(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// isLoopbackHost reports whether a URL's host name is this host.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
