package scenarios_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/promreg"
	"github.com/queryflux/queryflux/internal/querynode"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/scenarios"
)

// shippedAssembly, at the end of a run, fetches /metrics over the simulated network from every
// control plane and worker, and holds each to the metric families a role built by node/assembly
// (as queryflux serve builds it) registers: the simulator must serve the shipped roles, query
// node, policy, capacity guard, config sync and history uplink included, not an assembly of its own.
type shippedAssembly struct {
	mu      sync.Mutex
	metrics map[string]string // node -> its /metrics body
	kinds   map[string]string // node -> what node/assembly built there
}

var registerShipped sync.Once

func (c *shippedAssembly) Start(w *scenarios.World) {
	w.Sim.At(w.Scenario.Duration-time.Second, func() {
		for _, s := range w.Scenario.Nodes() {
			name := s.Name
			switch scenarios.Assembled(w, name).(type) {
			case *assembly.ControlPlane:
				c.kinds[name] = "controlplane"
			case *assembly.Worker:
				c.kinds[name] = "worker"
			}
			w.Sim.Spawn(w.Observer, "probe-metrics-"+name, func() {
				body := fetch(w.Observer.Env(), w.Observer.Client(), "http://"+name+"/metrics")
				c.mu.Lock()
				c.metrics[name] = body
				c.mu.Unlock()
			})
		}
	})
}

func fetch(e env.Env, client *http.Client, url string) string {
	ctx, cancel := e.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (c *shippedAssembly) Result(w *scenarios.World) (bool, string) { return true, "" }

var familyRE = regexp.MustCompile(`(?m)^# TYPE (queryflux_\S+)`)

func families(body string) []string {
	var out []string
	for _, m := range familyRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// reference are the metric families of a control plane and a worker built directly by
// node/assembly with real memory stores: what every simulated node must serve at least.
func reference(t *testing.T) map[string][]string {
	t.Helper()
	e := env.Real(slog.New(slog.DiscardHandler))
	q := config.QueryFlux{Role: config.RoleControlPlane}
	q.WorkerAPI.Enabled, q.WorkerAPI.Secret = true, scenarios.WorkerSecret
	q.Persistence.DatabaseURL = "postgres://reference/queryflux"
	cpCfg := &config.Config{QueryFlux: q}
	config.ApplyDefaults(cpCfg)
	cp, err := assembly.BuildControlPlane(e, cpCfg, controlplane.Config{}.WithDefaults(), assembly.ControlPlaneDeps{
		Metrics: prometheus.NewRegistry(), Registry: registry.NewMemory(), History: history.NewMemory(10), Leases: capacity.NewMemory(),
		OpenEngine: querynode.EngineFactory(querynode.Engines()),
		// As the simulator's control planes (and a daemon on Postgres): the configuration is stored.
		Config: assembly.ConfigDeps{Stored: &assembly.StoredConfig{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wq := config.QueryFlux{Role: config.RoleWorker}
	wq.HistoryUplink.Enabled = true
	wCfg := &config.Config{QueryFlux: wq}
	config.ApplyDefaults(wCfg)
	wk, err := assembly.BuildWorker(e, wCfg, worker.Config{ControlPlaneURL: "http://cp-1", Secret: scenarios.WorkerSecret, Name: "ref"},
		assembly.WorkerDeps{Metrics: prometheus.NewRegistry(), Client: &http.Client{}, OpenEngine: querynode.EngineFactory(querynode.Engines())})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for kind, h := range map[string]http.Handler{"controlplane": cp.Handler(), "worker": wk.Handler()} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		out[kind] = families(rec.Body.String())
	}
	return out
}

// The simulated fleet runs what the binary ships: every worker of a workload run is the one
// node/assembly builds, and serves every metric family the shipped worker registers (the query
// node's, the policy's, the capacity guard's, the config sync's, the history uplink's).
func TestSimulatedFleetIsTheShippedAssembly(t *testing.T) {
	var c *shippedAssembly
	registerShipped.Do(func() {
		scenarios.RegisterCheck("shippedAssembly", func(*scenarios.Scenario, scenarios.Params) (scenarios.Check, error) {
			return c, nil
		})
	})
	c = &shippedAssembly{metrics: map[string]string{}, kinds: map[string]string{}}
	sc, err := scenarios.Parse("shipped.yaml", []byte(`duration: 20s
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 2}]
workload:
  coordination: {mode: controlPlane, onUnavailable: failClosed, queue: retry, onLeaseLost: cancel, leaseTTL: 6s, driftMargin: 1s}
  clusters: [{name: c1, cap: 2, duration: {dist: constant, min: 200ms}}]
  groups: [{name: g, members: [c1], maxQueued: 20, waitTimeout: 2s}]
  arrivals: [{group: g, rate: 2}]
  history: {flushInterval: 500ms, buffer: 100, batch: 25, sendTimeout: 1s}
checks:
  - shippedAssembly: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	res := scenarios.Run(sc, 1, scenarios.RunOpts{})
	if !res.Pass() {
		t.Fatalf("run failed: %+v", res.Checks)
	}
	ref := reference(t)
	for _, name := range []string{"cp-1", "w-1", "w-2"} {
		kind := map[bool]string{true: "controlplane", false: "worker"}[name == "cp-1"]
		if c.kinds[name] != kind {
			t.Fatalf("%s is not a %s built by node/assembly (%q)", name, kind, c.kinds[name])
		}
		if len(ref[kind]) == 0 {
			t.Fatalf("the reference %s serves no queryflux_ metric families", kind)
		}
		have := families(c.metrics[name])
		for _, f := range ref[kind] {
			if !slices.Contains(have, f) {
				t.Errorf("%s does not serve %s, which the shipped %s registers; it serves %s", name, f, kind, strings.Join(have, " "))
			}
		}
	}
}

// fleetProbe, at the end of a run, reads what the fleet's tests below need: the health checks
// the cluster's engine answered, and the fleet's shared metrics registry.
type fleetProbe struct {
	pings    int64
	registry *prometheus.Registry
	shared   bool // the registry was shared while the run ran
}

var (
	registerFleetProbe sync.Once
	probed             *fleetProbe
)

func (p *fleetProbe) Start(*scenarios.World) {}

func (p *fleetProbe) Result(w *scenarios.World) (bool, string) {
	if eng := scenarios.EngineOf(w, "c1"); eng != nil {
		p.pings = eng.Stats().Pings
	}
	p.registry, _ = w.Durable("worker-metrics", func() any { return nil }).(*prometheus.Registry)
	p.shared = p.registry != nil && promreg.Shared(p.registry)
	return true, ""
}

// probeFleet runs a fleet of one control plane and two workers sharing cluster c1 for 25 s and
// returns what fleetProbe saw.
func probeFleet(t *testing.T) *fleetProbe {
	t.Helper()
	registerFleetProbe.Do(func() {
		scenarios.RegisterCheck("fleetProbe", func(*scenarios.Scenario, scenarios.Params) (scenarios.Check, error) {
			return probed, nil
		})
	})
	probed = &fleetProbe{}
	sc, err := scenarios.Parse("probe.yaml", []byte(`duration: 25s
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 2}]
workload:
  coordination: {mode: controlPlane, onUnavailable: failClosed, queue: retry, leaseTTL: 6s, driftMargin: 1s}
  clusters: [{name: c1, cap: 2, duration: {dist: constant, min: 200ms}}]
  groups: [{name: g, members: [c1], maxQueued: 20, waitTimeout: 2s}]
  arrivals: [{group: g, rate: 1}]
checks:
  - fleetProbe: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	if res := scenarios.Run(sc, 1, scenarios.RunOpts{}); !res.Pass() {
		t.Fatalf("run failed: %+v", res.Checks)
	}
	return probed
}

// A worker checks its clusters' health in its duty loop: every node pings c1 every
// querynode.HealthEveryDefault (10 s), so in 25 s the two workers and the control plane (whose
// health checks run in a task of their own) ping it twice each.
func TestWorkerChecksClusterHealthInItsDutyLoop(t *testing.T) {
	p := probeFleet(t)
	if want := 3 * int64(25*time.Second/querynode.HealthEveryDefault); p.pings != want {
		t.Fatalf("c1 answered %d health checks in 25 s, want %d: 2 each from cp-1, w-1 and w-2", p.pings, want)
	}
}

// The fleet's shared metrics registry is forgotten when the run ends (promreg.Forget): a process
// that runs many fleets (qfsim plan, the rapid tests) must not keep every run's metric sets.
func TestRunForgetsItsSharedRegistry(t *testing.T) {
	p := probeFleet(t)
	if p.registry == nil || !p.shared {
		t.Fatalf("the workers' registry %p was not shared during the run", p.registry)
	}
	if promreg.Shared(p.registry) {
		t.Fatal("the workers' registry is still shared after the run ended")
	}
}
