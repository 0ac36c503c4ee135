package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/sim"
)

// WorkerSecret is the shared worker secret every simulated fleet uses.
const WorkerSecret = "sim-worker-secret"

// controlPlaneRole boots the shipped control plane (node/assembly) on the fleet's stores, whose
// registry (a registry.Memory) survives restarts.
func controlPlaneRole(w *World, spec NodeSpec) (sim.Factory, error) {
	iv := w.Scenario.Intervals
	cfg := controlplane.Config{
		WorkerSecret: WorkerSecret, AdminToken: AdminToken,
		HeartbeatInterval: iv.Heartbeat, StaleAfter: iv.StaleAfter, EvictGrace: iv.EvictGrace,
		ReaperInterval: iv.Reaper, AllowShortTimeouts: true,
	}
	if err := cfg.WithDefaults().Validate(); err != nil {
		return nil, fmt.Errorf("intervals: %v", err)
	}
	cfg = cfg.WithDefaults()
	local, err := compiled(fleetQueryFlux(w, config.RoleControlPlane))
	if err != nil {
		return nil, err
	}
	return func(n *sim.Node) http.Handler {
		c, err := assembly.BuildControlPlane(n.Env(), local, cfg, controlPlaneDeps(w, n))
		if !boot(w, n, "control plane", c, err, func() any { return c.CP }) {
			return http.NotFoundHandler()
		}
		if w.Scenario.Workload != nil {
			return workloadControlPlane(w, n, c)
		}
		return c.Handler()
	}, nil
}

// TokenLog is what a worker's recording transport saw: each session token the control plane
// accepted a heartbeat with, in order, and when. It lives outside the worker (it is the
// scenario's, not the node's memory).
type TokenLog struct {
	Tokens []string
	At     []time.Duration
}

// Last is the latest accepted token at or before t.
func (l *TokenLog) Last(t time.Duration) string {
	tok := ""
	for i, at := range l.At {
		if at <= t {
			tok = l.Tokens[i]
		}
	}
	return tok
}

type recordingTransport struct {
	inner http.RoundTripper
	log   *TokenLog
	s     *sim.Sim
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.inner.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusOK && req.URL.Path == workerapi.PathHeartbeat {
		if tok, ok := workerapi.BearerToken(req); ok {
			if n := len(rt.log.Tokens); n == 0 || rt.log.Tokens[n-1] != tok {
				rt.log.Tokens = append(rt.log.Tokens, tok)
				rt.log.At = append(rt.log.At, rt.s.Elapsed())
			}
		}
	}
	return resp, err
}

// workerRole boots the shipped worker (node/assembly) following its control plane.
func workerRole(w *World, spec NodeSpec) (sim.Factory, error) {
	iv := w.Scenario.Intervals
	cpName := w.Scenario.ControlPlaneOf(spec.Name)
	if cpName == "" {
		return nil, fmt.Errorf("worker %s: the fleet has no control plane", spec.Name)
	}
	cfg := worker.Config{
		ControlPlaneURL: "http://" + cpName, Secret: WorkerSecret, Name: spec.Name, Labels: spec.Labels,
		HeartbeatInterval: iv.Heartbeat, RequestTimeout: iv.RequestTimeout, HealthProbeInterval: iv.HealthProbe,
		LagThreshold: iv.LagThreshold, HealthFlips: iv.HealthFlips,
	}
	if err := cfg.WithDefaults().Validate(); err != nil {
		return nil, fmt.Errorf("intervals: %v", err)
	}
	q := fleetQueryFlux(w, config.RoleWorker) // the same for every worker of the run
	q.ControlPlane.URL = cfg.ControlPlaneURL
	if c := w.Scenario.Config; c != nil && c.Peers {
		names, _ := w.Scenario.Resolve("workers")
		for _, p := range names {
			if p != spec.Name {
				q.ControlPlane.PeerBootstrap.Address = append(q.ControlPlane.PeerBootstrap.Address, "http://"+p)
			}
		}
		q.ControlPlane.PeerBootstrap.MaxAgeSecs = wholeSecs(c.MaxAge)
	}
	shared := sharedConfigsOf(w)
	var local *config.Config
	var err error
	share := !w.opts.NoSharedConfig
	if share {
		local, share, err = shared.local(sectionKey(&q), q)
	} else {
		local, err = compiled(q)
	}
	if err != nil {
		return nil, err
	}
	log := w.Durable("tokens/"+spec.Name, func() any { return &TokenLog{} }).(*TokenLog)
	return func(n *sim.Node) http.Handler {
		cfg := cfg
		cfg.Labels = labelsNow(w, spec) // a relabel takes effect at the next boot
		client := &http.Client{Transport: &recordingTransport{inner: n.Transport(), log: log, s: w.Sim}}
		deps := workerDeps(w, n, client)
		if w.Scenario.Workload != nil {
			observeWorkload(w, n, &deps)
		}
		switch {
		case w.opts.PlantHalfApply:
			deps.OnApply = plantedRoutingSkip() // it writes to the configuration: never shared
		case share:
			deps.DeriveConfig, deps.CompilePlan = shared.deriver(local), shared.compile
		}
		wk, err := assembly.BuildWorker(n.Env(), local, cfg, deps)
		if !boot(w, n, "worker", wk, err, func() any { return wk.W }) {
			return http.NotFoundHandler()
		}
		if w.Scenario.Workload != nil {
			workloadWorker(w, n, wk)
		}
		return wk.Handler()
	}, nil
}

// sectionKey names what sets a worker's node-local section apart from another's in a run: its
// control plane and its peers (workerRole sets nothing else per worker), so workers with equal
// keys share one configuration (sharedConfigs.local).
func sectionKey(q *config.QueryFlux) string {
	return q.ControlPlane.URL + "\n" + strings.Join(q.ControlPlane.PeerBootstrap.Address, "\n")
}

// stateParams is the YAML of the polling registry checks.
type stateParams struct {
	Worker string `yaml:"worker"`
	State  string `yaml:"state"`
	Window `yaml:",inline"`
}

func parseStateParams(sc *Scenario, p Params, states ...string) (stateParams, []string, error) {
	var sp stateParams
	if err := p.Decode(&sp); err != nil {
		return sp, nil, err
	}
	if err := sp.Window.validate(sc, p); err != nil {
		return sp, nil, err
	}
	ok := false
	for _, s := range states {
		ok = ok || s == sp.State
	}
	if !ok {
		return sp, nil, p.Errorf("state %q: one of %s", sp.State, strings.Join(states, ", "))
	}
	names, err := sc.Resolve(sp.Worker)
	if err != nil {
		return sp, nil, p.Errorf("worker: %v", err)
	}
	return sp, names, nil
}

// cpInfo is the control plane's view of a worker; ok false while the control plane is down.
func cpInfo(w *World, name string) (workerapi.WorkerInfo, bool, bool) {
	cp, _ := w.Role(w.Scenario.ControlPlaneOf(name)).(*controlplane.ControlPlane)
	if cp == nil {
		return workerapi.WorkerInfo{}, false, false
	}
	info, known := cp.Worker(name)
	return info, known, true
}

// registryState: the control plane's registry state of a worker (healthy, stale, evicted, or
// unknown when it has no record).
func parseRegistryState(sc *Scenario, p Params) (Check, error) {
	sp, names, err := parseStateParams(sc, p, workerapi.StateHealthy, workerapi.StateStale, workerapi.StateEvicted, "unknown")
	if err != nil {
		return nil, err
	}
	return NewStateCheck("registry state", names, sp.State, sp.Window, func(w *World, name string) (string, bool) {
		info, known, up := cpInfo(w, name)
		if !up {
			return "", false
		}
		if !known {
			return "unknown", true
		}
		return info.State, true
	}), nil
}

// reportedHealth: the self-health the control plane last heard from a worker.
func parseReportedHealth(sc *Scenario, p Params) (Check, error) {
	sp, names, err := parseStateParams(sc, p, workerapi.HealthHealthy, workerapi.HealthUnhealthy)
	if err != nil {
		return nil, err
	}
	return NewStateCheck("reported health", names, sp.State, sp.Window, func(w *World, name string) (string, bool) {
		info, known, up := cpInfo(w, name)
		if !up || !known || info.Heartbeat == nil {
			return "", false
		}
		return info.Heartbeat.Health.State, true
	}), nil
}

// selfHealth: the worker's own health state (its /worker/status).
func parseSelfHealth(sc *Scenario, p Params) (Check, error) {
	sp, names, err := parseStateParams(sc, p, workerapi.HealthHealthy, workerapi.HealthUnhealthy)
	if err != nil {
		return nil, err
	}
	return NewStateCheck("self health", names, sp.State, sp.Window, func(w *World, name string) (string, bool) {
		wk, _ := w.Role(name).(*worker.Worker)
		if wk == nil {
			return "", false
		}
		return wk.Status().Health.State, true
	}), nil
}

// tokenRevoked: at `at`, a heartbeat carrying the worker's last accepted session token is
// answered 401 by its control plane.
type tokenRevoked struct {
	worker string
	at     time.Duration
	done   bool
	status int
	err    error
	had    bool
}

func parseTokenRevoked(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Worker string        `yaml:"worker"`
		At     time.Duration `yaml:"at"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if s, ok := sc.Spec(c.Worker); !ok || s.Role != "worker" {
		return nil, p.Errorf("worker: no worker named %q", c.Worker)
	}
	if c.At <= 0 || c.At >= sc.Duration {
		return nil, p.Errorf("at %v: must be inside the scenario (0, %v)", c.At, sc.Duration)
	}
	return &tokenRevoked{worker: c.Worker, at: c.At}, nil
}

func (c *tokenRevoked) Start(w *World) {
	w.Sim.At(c.at, func() {
		log := w.Durable("tokens/"+c.worker, func() any { return &TokenLog{} }).(*TokenLog)
		token := log.Last(c.at)
		c.had = token != ""
		if !c.had {
			return
		}
		obs := w.Observer
		w.Sim.Spawn(obs, "probe-token-"+c.worker, func() {
			c.status, c.err = probeHeartbeat(obs, w.Scenario.ControlPlaneOf(c.worker), token)
			c.done = true
		})
	})
}

func (c *tokenRevoked) Result(w *World) (bool, string) {
	switch {
	case !c.had:
		return false, fmt.Sprintf("%s never had a heartbeat accepted before %v", c.worker, c.at)
	case !c.done:
		return false, "the probe did not finish"
	case c.err != nil:
		return false, fmt.Sprintf("probe at %v: %v", c.at, c.err)
	}
	return c.status == http.StatusUnauthorized, fmt.Sprintf("heartbeat with %s's old token at %v answered %d (want 401)", c.worker, c.at, c.status)
}

// probeHeartbeat sends one heartbeat with token from node and returns the status.
func probeHeartbeat(from *sim.Node, cp, token string) (int, error) {
	e := from.Env()
	hb := workerapi.Heartbeat{Seq: 1 << 40, SentAt: e.Now(), Health: workerapi.HealthStatus{State: workerapi.HealthHealthy}}
	body, _ := json.Marshal(hb)
	ctx, cancel := e.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+cp+workerapi.PathHeartbeat, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", workerapi.MediaHeartbeat)
	workerapi.SetBearer(req, token)
	resp, err := from.Client().Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// reregistered: the worker had a heartbeat accepted under a new session token inside the window
// (it registered again) after having had one before it.
type reregistered struct {
	worker string
	win    Window
}

func parseReregistered(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Worker string `yaml:"worker"`
		Window `yaml:",inline"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if s, ok := sc.Spec(c.Worker); !ok || s.Role != "worker" {
		return nil, p.Errorf("worker: no worker named %q", c.Worker)
	}
	if err := c.Window.validate(sc, p); err != nil {
		return nil, err
	}
	return &reregistered{worker: c.Worker, win: c.Window}, nil
}

func (c *reregistered) Start(w *World) {}

func (c *reregistered) Result(w *World) (bool, string) {
	log := w.Durable("tokens/"+c.worker, func() any { return &TokenLog{} }).(*TokenLog)
	var times []string
	pass := false
	for i, at := range log.At {
		times = append(times, at.String())
		if i > 0 && at >= c.win.From && at <= c.win.To {
			pass = true
		}
	}
	return pass, fmt.Sprintf("%s's session tokens first accepted at [%s]; want a new one in [%v, %v]",
		c.worker, strings.Join(times, " "), c.win.From, c.win.To)
}
