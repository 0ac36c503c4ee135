package scenarios

// The fleet's roles are the shipped ones, built by node/assembly as `queryflux serve` builds
// them (policy, query node, capacity, history uplink, config sync included). What the
// simulator substitutes is passed in: the Env and network (the node's), the stores (memory
// ones standing for Postgres, kept across restarts in the World), the engines (simulated), and
// the configuration store the control planes serve (fleetSnapshot).

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/promreg"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/internal/simengine"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/sim"
)

// AdminToken is the admin token of every simulated control plane.
const AdminToken = "sim-admin-token"

// Assembled is the role node runs now, as node/assembly built it (*assembly.ControlPlane or
// *assembly.Worker; nil while the node is down or booting).
func Assembled(w *World, node string) any {
	n := w.Node(node)
	b, _ := w.durable["assembly/"+node].(builtRole)
	if n == nil || !n.Up() || b.inc != n.Incarnation() {
		return nil
	}
	return b.role
}

type builtRole struct {
	role any
	inc  uint64
}

// boot starts the role built on n (unless building failed: false) and publishes it, with
// inner as the role object checks look at.
func boot(w *World, n *sim.Node, what string, role interface{ Start(context.Context) error }, built error, inner func() any) bool {
	if built != nil {
		w.Errorf("%s %s: %v", what, n.Name(), built)
		return false
	}
	if err := role.Start(n.Ctx()); err != nil {
		w.Errorf("%s %s did not start: %v", what, n.Name(), err)
	}
	w.SetRole(n.Name(), inner())
	w.durable["assembly/"+n.Name()] = builtRole{role: role, inc: n.Incarnation()}
	return true
}

func wholeSecs(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

func wholeMs(d time.Duration) int { return int((d + time.Millisecond - 1) / time.Millisecond) }

// fleetQueryFlux is the node-local section every simulated node shares.
func fleetQueryFlux(w *World, role config.Role) config.QueryFlux {
	q := config.QueryFlux{Role: role}
	q.AdminAPI.Token = AdminToken
	if role == config.RoleControlPlane {
		q.WorkerAPI.Enabled, q.WorkerAPI.Secret = true, WorkerSecret
		// The database the memory stores stand for; nothing connects to it.
		q.Persistence.DatabaseURL = "postgres://simulated/queryflux"
	} else {
		q.ControlPlane.Secret = WorkerSecret
	}
	iv := w.Scenario.Intervals
	q.ControlPlane.PollTimeoutSecs, q.ControlPlane.RetryMaxSecs = wholeSecs(iv.ConfigPoll), wholeSecs(iv.ConfigRetryMax)
	if c := w.Scenario.Config; c != nil {
		q.ControlPlane.PollTimeoutSecs = wholeSecs(c.PollTimeout)
		q.ControlPlane.RetryMaxSecs = wholeSecs(c.RetryMax)
	}
	if wl := w.Scenario.Workload; wl != nil {
		q.Coordination = wl.coordination()
		q.Coordination.Weights = wl.Coordination.Weights
		q.Coordination.SweepEverySecs = wholeSecs(wl.SweepEvery)
		if h := wl.History; h != nil {
			q.HistoryUplink = h.uplink()
		}
	}
	return q
}

// compiled is q's configuration as `queryflux serve` would start with it: defaulted and
// compiled (a section the shipped checks refuse fails the run).
func compiled(q config.QueryFlux) (*config.Config, error) {
	cfg := &config.Config{QueryFlux: q}
	config.ApplyDefaults(cfg)
	if err := config.Compile(cfg); err != nil {
		return nil, fmt.Errorf("the node's configuration: %w", err)
	}
	return cfg, nil
}

// controlPlaneDeps are a simulated control plane's stores, engines and configuration store.
func controlPlaneDeps(w *World, n *sim.Node) assembly.ControlPlaneDeps {
	d := assembly.ControlPlaneDeps{
		Metrics:    prometheus.NewRegistry(),
		Registry:   w.Durable("registry/"+n.Name(), func() any { return registry.NewMemory() }).(*registry.Memory),
		Leases:     leaseStore(w),
		History:    HistoryStoreOf(w, n.Name()),
		OpenEngine: simEngines(w),
		Config:     assembly.ConfigDeps{Stored: &assembly.StoredConfig{Where: "the simulated store", Source: fleetSnapshot(w, n.Env())}},
	}
	if wl := w.Scenario.Workload; wl != nil {
		d.Fence = assembly.NoFence
		if wl.EngineFence == nil || *wl.EngineFence {
			d.Fence = engineFence{w}
		}
	}
	if c := w.Scenario.Config; c != nil {
		d.Config.BuildTimeout = c.BuildTimeout
	}
	return d
}

// leaseStore is the one lease table of the fleet (it stands for the Postgres one).
func leaseStore(w *World) assembly.LeaseStore {
	if w.Scenario.Workload != nil {
		return LeasesOf(w)
	}
	return w.Durable("leases", func() any { return capacity.NewMemory().WithClock(w.Sim.Now) }).(*capacity.Memory)
}

// fleetSnapshot is the configuration store the control planes serve: the workload's clusters
// and groups with their caps now, or the config section's cluster, or nothing.
func fleetSnapshot(w *World, e env.Env) controlplane.ConfigSource {
	return func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error) {
		switch {
		case w.Scenario.Config != nil:
			st := configStateOf(w)
			if hang := st.hangUntil - w.Sim.Elapsed(); hang > 0 {
				if err := e.Sleep(ctx, hang); err != nil {
					return nil, fmt.Errorf("snapshot build hung: %w", err)
				}
			}
			return configSnapshot(st.cap, e.Now(), w.Scenario.Config.Zones)
		case w.Scenario.Workload != nil:
			return workloadSnapshot(w, e.Now())
		}
		cfg := &config.Config{}
		config.ApplyDefaults(cfg)
		return snapshot.Build(cfg, snapshot.Options{ConfirmedAt: e.Now()})
	}
}

// configChanged wakes every running control plane's snapshot refresh (the store's notification).
func configChanged(w *World) {
	for _, s := range w.Scenario.Nodes() {
		if c, ok := Assembled(w, s.Name).(*assembly.ControlPlane); ok {
			c.ConfigChanged()
		}
	}
}

// simEngines opens a cluster's simulated engine: one per cluster, shared by every node (as one
// database serves every worker's connections); a runtime's Close leaves it running.
func simEngines(w *World) proxy.EngineFactory {
	return func(c config.Cluster) (query.Engine, error) {
		eng := EngineOf(w, c.Name)
		if eng == nil {
			eng = simengine.New(w.Node(EnginesName).Env(), c.Name, simengine.Params{Rows: 1})
			w.durable["engine/"+c.Name] = eng
		}
		return sharedEngine{eng}, nil
	}
}

// sharedDecoder decodes each distinct snapshot body once per run: a fleet's workers fetch the
// same bytes, decoding is a pure function of them (strict JSON plus the revision check, most of
// a worker's boot), and the workers only read the snapshot.
type sharedDecoder struct {
	decoded map[string]decodedSnapshot
}

type decodedSnapshot struct {
	snap *snapshot.WorkerSnapshotV1
	err  error
}

func newSharedDecoder() any { return &sharedDecoder{decoded: map[string]decodedSnapshot{}} }

func (d *sharedDecoder) decode(body []byte) (*snapshot.WorkerSnapshotV1, error) {
	if r, ok := d.decoded[string(body)]; ok {
		return r.snap, r.err
	}
	snap, err := snapshot.Decode(body)
	d.decoded[string(body)] = decodedSnapshot{snap, err}
	return snap, err
}

type sharedEngine struct{ *simengine.Engine }

func (sharedEngine) Close() error { return nil }

// sharedRegistry is the fleet's one registry, declared shared so that each metric set is built
// on it once (promreg.Once) instead of once per worker, until the run ends.
func sharedRegistry(w *World) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	promreg.Share(reg)
	w.closers = append(w.closers, func() { promreg.Forget(reg) })
	return reg
}

// workerDeps are a simulated worker's client, stores and engines. The fleet's workers share one
// metrics registry, whose series are the fleet's sums (as a Prometheus summing over the fleet
// shows them): nothing in a run reads one worker's series, and a registry of its own per worker
// was about a third of a simulated worker's memory.
func workerDeps(w *World, n *sim.Node, client *http.Client) assembly.WorkerDeps {
	d := assembly.WorkerDeps{
		Metrics: w.Durable("worker-metrics", func() any { return sharedRegistry(w) }).(*prometheus.Registry), Client: client, PeerClient: n.Client(), OpenEngine: simEngines(w),
		DecodeSnapshot: w.Durable("snapshot-decoder", newSharedDecoder).(*sharedDecoder).decode,
	}
	if c := w.Scenario.Config; c != nil && c.LastGood {
		d.Snapshots = w.Durable("lastgood/"+n.Name(), func() any { return &worker.MemorySnapshotStore{} }).(*worker.MemorySnapshotStore)
	}
	return d
}
