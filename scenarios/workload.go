package scenarios

// This file is the scenario's query workload: the `workload:` section (clusters with caps and
// simulated engines, groups, coordination settings, arrivals per worker, optional history
// uplink, a queue-time objective). When a scenario has one, every worker of the fleet runs the
// real proxy core (node/proxy) behind the real capacity guard (worker.NewCapacityGuard) against
// the control plane's capacity API (controlplane.MountCapacity), and the control plane serves
// the history ingest (MountHistory). What happened is kept in a WorkloadStats that survives
// restarts; the oracles (leasesWithinCap, engineWithinCap, historyConserved) read it.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/simengine"
)

// Workload is the `workload:` section of a scenario.
type Workload struct {
	Coordination WorkloadCoordination `yaml:"coordination"`
	Clusters     []WorkloadCluster    `yaml:"clusters"`
	Groups       []WorkloadGroup      `yaml:"groups"`
	Arrivals     []Arrival            `yaml:"arrivals"`
	// Replay is a history export (queryflux history export; path relative to the scenario
	// file) whose queries the workers submit besides the arrivals: each at its recorded arrival
	// time divided by Scale, into its recorded group, running for its recorded execution time.
	Replay string `yaml:"replay"`
	// Scale compresses the replay's arrival times: 2 submits the recorded queries twice as fast
	// (twice the rate; execution times unchanged). Default 1.
	Scale float64 `yaml:"scale"`
	// Workers, when > 0, sets the fleet's worker count (the first fleet.workers entry with a
	// prefix and a count); the replay's recorded workers are spread over them.
	Workers int              `yaml:"workers"`
	History *WorkloadHistory `yaml:"history"`
	// Objective is the service level the planner checks each sweep point against.
	Objective Objective `yaml:"objective"`
	// Warmup: queries submitted before it are not counted in the statistics (they still run).
	Warmup time.Duration `yaml:"warmup"`
	// ControlPlane is the control plane's service model (pool, service times per path);
	// nil: requests take no time. qfsim plan --calibration FILE replaces it.
	ControlPlane *Calibration `yaml:"controlPlane"`
	// SweepEvery is how often the control plane sweeps stale leases (default 1s).
	SweepEvery time.Duration `yaml:"sweepEvery"`
	// EngineFence: the control plane stops a reclaimed lease's queries on the engine before it
	// frees the slot (default true); false frees the slot when the lease has expired.
	EngineFence *bool `yaml:"engineFence"`
	// LeaseTable is where the lease table lives: database (default: one table every control
	// plane shares, on the database's clock) or memory (the only control plane's own memory, as
	// `queryflux serve` without a database keeps it: on that process's clock, its wall steps
	// included, through capacity.Memory.Monotonic; it survives the control plane's restarts
	// here, which a real one's does not).
	LeaseTable string `yaml:"leaseTable"`

	replayed *replayed // the loaded Replay
}

// Workload.LeaseTable's values.
const (
	leaseTableDatabase = "database"
	leaseTableMemory   = "memory"
)

// WorkloadCoordination is queryflux.coordination of every worker.
type WorkloadCoordination struct {
	Mode          string        `yaml:"mode"`          // controlPlane (default) | local
	OnUnavailable string        `yaml:"onUnavailable"` // failClosed (default) | localLimits
	Queue         string        `yaml:"queue"`         // retry (default) | ordered
	OnLeaseLost   string        `yaml:"onLeaseLost"`   // cancel (default) | overrun
	LeaseTTL      time.Duration `yaml:"leaseTTL"`      // whole seconds (default 30s)
	DriftMargin   time.Duration `yaml:"driftMargin"`   // whole seconds (default 2s)
	// Weights is the control plane's coordination.weights (queue: ordered): worker name ->
	// weight, 1 to 100; waiting workers are granted in weighted fair order.
	Weights map[string]int `yaml:"weights"`
}

// WorkloadCluster is one simulated cluster: its cap and its engine's behaviour.
type WorkloadCluster struct {
	Name        string   `yaml:"name"`
	Cap         int      `yaml:"cap"`
	Duration    Duration `yaml:"duration"`
	FailureRate float64  `yaml:"failureRate"`
	// Engine is the engine kind the cluster stands for, which decides what happens to a query
	// whose worker died (its process killed, its sockets closed); a frozen worker keeps its
	// sockets, so its queries run on. postgres (the default): the backend looks at its client's
	// socket every client_connection_check_interval (pgengine.ClientCheckInterval, which the
	// binary sets) and ends the query at the first look after the death. mysql: the statement
	// runs to its end. duckdb: embedded in the worker, the query ends with it. trino: the
	// coordinator ends it OrphanTimeout after its client stopped polling.
	Engine string `yaml:"engine"`
	// OrphanTimeout is a trino cluster's query.client.timeout (default 5m).
	OrphanTimeout time.Duration `yaml:"orphanTimeout"`
}

// trinoClientTimeout is Trino's default query.client.timeout.
const trinoClientTimeout = 5 * time.Minute

// clientLoss is the simulated engine's rule for the queries of a dead worker (see Engine).
func (c WorkloadCluster) clientLoss() simengine.ClientLoss {
	switch c.Engine {
	case config.EngineMySQL:
		return simengine.ClientLoss{}
	case config.EngineDuckDB:
		return simengine.ClientLoss{Embedded: true}
	case config.EngineTrino:
		return simengine.ClientLoss{Timeout: cmp.Or(c.OrphanTimeout, trinoClientTimeout)}
	default:
		return simengine.ClientLoss{CheckEvery: pgengine.ClientCheckInterval}
	}
}

// Duration is a query-duration distribution: constant (min), uniform (min..max), exponential
// (mean, capped at max) or lognormal (median, sigma, capped at max).
type Duration struct {
	Dist   string        `yaml:"dist"`
	Min    time.Duration `yaml:"min"`
	Max    time.Duration `yaml:"max"`
	Mean   time.Duration `yaml:"mean"`
	Median time.Duration `yaml:"median"`
	Sigma  float64       `yaml:"sigma"`
}

// WorkloadGroup is a cluster group the arrivals name.
type WorkloadGroup struct {
	Name        string        `yaml:"name"`
	Members     []string      `yaml:"members"`
	Strategy    string        `yaml:"strategy"`    // roundRobin (default), leastLoaded, failover, weighted
	MaxQueued   int           `yaml:"maxQueued"`   // queries that may wait for a slot on one worker
	WaitTimeout time.Duration `yaml:"waitTimeout"` // one query's wait for a slot (0: unbounded)
	// Cache turns on the group's result cache (locality.go); nil: none.
	Cache *WorkloadCache `yaml:"cache"`
}

// Arrival is a stream of queries into a group from a set of workers.
type Arrival struct {
	Workers string  `yaml:"workers"` // a node or group (default: workers)
	Group   string  `yaml:"group"`
	Rate    float64 `yaml:"rate"` // mean queries per second per worker (Poisson)
	// Clients > 0 makes the arrival a closed loop instead: each worker runs that many clients,
	// each sending its next query as soon as the last one ended (as pgbench does). A worker's
	// demand is then its client count, so the fairness share is admitted per client.
	Clients int           `yaml:"clients"`
	Skew    float64       `yaml:"skew"` // worker i gets weight 1/i^skew (total rate unchanged)
	Burst   *Burst        `yaml:"burst"`
	OnOff   *OnOff        `yaml:"onOff"`
	From    time.Duration `yaml:"from"`
	To      time.Duration `yaml:"to"` // default: the scenario's end
	// Keys > 0: each query is one of that many distinct cacheable statements, drawn uniformly
	// (a repeated mix); 0: every query is "select 1".
	Keys int `yaml:"keys"`
}

// Burst submits Size queries at once every Every (on top of the Poisson rate).
type Burst struct {
	Every time.Duration `yaml:"every"`
	Size  int           `yaml:"size"`
}

// OnOff alternates On of arrivals with Off of silence.
type OnOff struct {
	On  time.Duration `yaml:"on"`
	Off time.Duration `yaml:"off"`
}

// WorkloadHistory turns on the history uplink of every worker. Its settings are the binary's
// queryflux.historyUplink (flushIntervalMs, bufferRecords, batchRecords, sendTimeoutMs; one
// left out is the binary's default), so real daemons run the same uplink (chaos).
type WorkloadHistory struct {
	FlushInterval time.Duration `yaml:"flushInterval"`
	Buffer        int           `yaml:"buffer"`
	Batch         int           `yaml:"batch"`
	SendTimeout   time.Duration `yaml:"sendTimeout"`
	StoreMax      int           `yaml:"storeMax"` // the control plane's in-memory store (default 1,000,000)
}

// uplink is the queryflux.historyUplink section of h (durations rounded up to milliseconds).
func (h *WorkloadHistory) uplink() config.HistoryUplink {
	return config.HistoryUplink{Enabled: true, FlushIntervalMs: wholeMs(h.FlushInterval), BufferRecords: h.Buffer,
		BatchRecords: h.Batch, SendTimeoutMs: wholeMs(h.SendTimeout)}
}

// ConfigYAML is h as a worker's queryflux.historyUplink line, what chaos gives real workers
// (a setting left out stays out: the binary's default).
func (h *WorkloadHistory) ConfigYAML() string {
	u := h.uplink()
	fields := []string{"enabled: true"}
	for _, f := range []struct {
		name string
		v    int
	}{{"flushIntervalMs", u.FlushIntervalMs}, {"bufferRecords", u.BufferRecords}, {"batchRecords", u.BatchRecords}, {"sendTimeoutMs", u.SendTimeoutMs}} {
		if f.v != 0 {
			fields = append(fields, fmt.Sprintf("%s: %d", f.name, f.v))
		}
	}
	return "historyUplink: {" + strings.Join(fields, ", ") + "}"
}

// Objective is the queue-time objective the planner's knee is measured against.
type Objective struct {
	QueueP99 time.Duration `yaml:"queueP99"`
	QueueP50 time.Duration `yaml:"queueP50"`
}

func (wl *Workload) validate(sc *Scenario) error {
	c := &wl.Coordination
	if c.Mode == "" {
		c.Mode = config.CoordinationControlPlane
	}
	if c.OnUnavailable == "" {
		c.OnUnavailable = config.OnUnavailableFailClosed
	}
	if c.Queue == "" {
		c.Queue = config.QueueRetry
	}
	if c.OnLeaseLost == "" {
		c.OnLeaseLost = config.OnLeaseLostCancel
	}
	switch {
	case c.Mode != config.CoordinationControlPlane && c.Mode != config.CoordinationLocal:
		return fmt.Errorf("workload.coordination.mode %q: controlPlane or local", c.Mode)
	case c.Queue != config.QueueRetry && c.Queue != config.QueueOrdered:
		return fmt.Errorf("workload.coordination.queue %q: retry or ordered", c.Queue)
	case c.LeaseTTL%time.Second != 0 || c.DriftMargin%time.Second != 0:
		return fmt.Errorf("workload.coordination: leaseTTL and driftMargin are whole seconds")
	case len(c.Weights) > 0 && c.Queue != config.QueueOrdered:
		return fmt.Errorf("workload.coordination.weights: need queue: ordered")
	}
	switch wl.LeaseTable {
	case "", leaseTableDatabase:
		wl.LeaseTable = leaseTableDatabase
	case leaseTableMemory:
		if cps, _ := sc.Resolve("controlPlanes"); len(cps) != 1 {
			return fmt.Errorf("workload.leaseTable: memory needs exactly one control plane, not %d", len(cps))
		}
	default:
		return fmt.Errorf("workload.leaseTable %q: database or memory", wl.LeaseTable)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Weights)) {
		if wt := c.Weights[name]; wt < 1 || wt > config.WeightMax {
			return fmt.Errorf("workload.coordination.weights.%s: %d must be 1 to %d", name, wt, config.WeightMax)
		}
		if names, err := sc.Resolve(name); err != nil || len(names) != 1 || names[0] != name {
			return fmt.Errorf("workload.coordination.weights.%s: not a worker's name", name)
		}
	}
	if len(wl.Clusters) == 0 || len(wl.Groups) == 0 || (len(wl.Arrivals) == 0 && wl.Replay == "") {
		return fmt.Errorf("workload: needs clusters, groups and arrivals (or a replay)")
	}
	clusters := map[string]bool{}
	for i, cl := range wl.Clusters {
		if cl.Name == "" || clusters[cl.Name] {
			return fmt.Errorf("workload.clusters[%d]: name %q empty or repeated", i, cl.Name)
		}
		clusters[cl.Name] = true
		if cl.Cap < 1 {
			return fmt.Errorf("workload.clusters[%d] (%s): cap %d must be >= 1", i, cl.Name, cl.Cap)
		}
		if cl.FailureRate < 0 || cl.FailureRate > 1 {
			return fmt.Errorf("workload.clusters[%d] (%s): failureRate %v outside [0, 1]", i, cl.Name, cl.FailureRate)
		}
		switch cl.Engine {
		case "":
			wl.Clusters[i].Engine = config.EnginePostgres
		case config.EnginePostgres, config.EngineMySQL, config.EngineDuckDB, config.EngineTrino:
		default:
			return fmt.Errorf("workload.clusters[%d] (%s): engine %q: postgres, mysql, duckdb or trino", i, cl.Name, cl.Engine)
		}
		if cl.OrphanTimeout != 0 && cl.Engine != config.EngineTrino {
			return fmt.Errorf("workload.clusters[%d] (%s): orphanTimeout is a trino cluster's client timeout (engine: trino)", i, cl.Name)
		}
		if cl.OrphanTimeout < 0 {
			return fmt.Errorf("workload.clusters[%d] (%s): orphanTimeout %v must be >= 0", i, cl.Name, cl.OrphanTimeout)
		}
		if _, err := cl.Duration.Distribution(); err != nil {
			return fmt.Errorf("workload.clusters[%d] (%s).duration: %v", i, cl.Name, err)
		}
	}
	groups := map[string]bool{}
	for i, g := range wl.Groups {
		if g.Name == "" || groups[g.Name] || len(g.Members) == 0 {
			return fmt.Errorf("workload.groups[%d]: name %q empty or repeated, or no members", i, g.Name)
		}
		groups[g.Name] = true
		if g.Cache != nil {
			if err := g.Cache.validate(fmt.Sprintf("workload.groups[%d].cache", i)); err != nil {
				return err
			}
		}
		for _, m := range g.Members {
			if !clusters[m] {
				return fmt.Errorf("workload.groups[%d] (%s): no cluster named %q", i, g.Name, m)
			}
		}
	}
	for i := range wl.Arrivals {
		a := &wl.Arrivals[i]
		if a.Workers == "" {
			a.Workers = "workers"
		}
		if _, err := sc.Resolve(a.Workers); err != nil {
			return fmt.Errorf("workload.arrivals[%d].workers: %v", i, err)
		}
		if !groups[a.Group] {
			return fmt.Errorf("workload.arrivals[%d]: no group named %q", i, a.Group)
		}
		if a.Keys < 0 {
			return fmt.Errorf("workload.arrivals[%d]: keys %d must be >= 0", i, a.Keys)
		}
		if a.Clients < 0 {
			return fmt.Errorf("workload.arrivals[%d]: clients %d must be >= 0", i, a.Clients)
		}
		if a.Clients > 0 && (a.Rate != 0 || a.Burst != nil || a.Skew != 0) {
			return fmt.Errorf("workload.arrivals[%d]: clients (a closed loop) cannot be combined with rate, skew or burst", i)
		}
		if a.Clients == 0 && (a.Rate < 0 || (a.Rate == 0 && a.Burst == nil)) {
			return fmt.Errorf("workload.arrivals[%d]: rate must be > 0 (or give a burst, or clients)", i)
		}
		if a.Burst != nil && (a.Burst.Every <= 0 || a.Burst.Size <= 0) {
			return fmt.Errorf("workload.arrivals[%d].burst: every and size must be > 0", i)
		}
		if a.OnOff != nil && (a.OnOff.On <= 0 || a.OnOff.Off < 0) {
			return fmt.Errorf("workload.arrivals[%d].onOff: on must be > 0, off >= 0", i)
		}
		if a.To == 0 {
			a.To = sc.Duration
		}
		if a.From > a.To {
			return fmt.Errorf("workload.arrivals[%d]: from %v after to %v", i, a.From, a.To)
		}
	}
	if n := closedLoop(wl.Arrivals); n > 0 && (n < len(wl.Arrivals) || wl.Replay != "") {
		return fmt.Errorf("workload.arrivals: closed-loop (clients) and open (rate, replay) arrivals cannot be mixed: fairness compares admitted per client in one and per submitted query in the other")
	}
	if wl.replayed == nil {
		if err := wl.loadReplay(sc); err != nil {
			return err
		}
	}
	if c := wl.ControlPlane; c != nil && c.Pool < 1 {
		return fmt.Errorf("workload.controlPlane.pool %d: must be >= 1", c.Pool)
	}
	if wl.SweepEvery == 0 {
		wl.SweepEvery = time.Second
	}
	if h := wl.History; h != nil && h.StoreMax == 0 {
		h.StoreMax = 1_000_000
	}
	return nil
}

// Distribution is the duration model the simulated engine draws from (chaos draws real sleeps from it).
func (d Duration) Distribution() (simengine.Distribution, error) {
	if err := d.unreadFields(); err != nil {
		return nil, err
	}
	switch d.Dist {
	case "", "constant", "fixed":
		return simengine.Constant{D: d.Min}, nil
	case "uniform":
		if d.Max < d.Min {
			return nil, fmt.Errorf("max %v < min %v", d.Max, d.Min)
		}
		return simengine.Uniform{Min: d.Min, Max: d.Max}, nil
	case "exponential":
		if d.Mean <= 0 {
			return nil, fmt.Errorf("exponential needs mean > 0")
		}
		return simengine.Exponential{Mean: d.Mean, Max: d.Max}, nil
	case "lognormal":
		if d.Median <= 0 || d.Sigma < 0 {
			return nil, fmt.Errorf("lognormal needs median > 0 and sigma >= 0")
		}
		return simengine.LogNormal{Median: d.Median, Sigma: d.Sigma, Max: d.Max}, nil
	}
	return nil, fmt.Errorf("dist %q: constant, uniform, exponential or lognormal", d.Dist)
}

// unreadFields refuses a field the distribution does not read: `{dist: constant, mean: 2s}`
// would otherwise run queries that take no time at all.
func (d Duration) unreadFields() error {
	reads := map[string][]string{"": {"min"}, "constant": {"min"}, "fixed": {"min"}, "uniform": {"min", "max"},
		"exponential": {"mean", "max"}, "lognormal": {"median", "sigma", "max"}}[d.Dist]
	given := map[string]bool{"min": d.Min != 0, "max": d.Max != 0, "mean": d.Mean != 0, "median": d.Median != 0, "sigma": d.Sigma != 0}
	for _, f := range []string{"min", "max", "mean", "median", "sigma"} {
		if given[f] && reads != nil && !slices.Contains(reads, f) {
			return fmt.Errorf("dist %q does not read %s (it reads %s)", d.Dist, f, strings.Join(reads, ", "))
		}
	}
	return nil
}

// Cap is the cap of cluster name (0 if unknown).
func (wl *Workload) Cap(name string) int {
	for _, c := range wl.Clusters {
		if c.Name == name {
			return c.Cap
		}
	}
	return 0
}

func (wl *Workload) coordination() config.Coordination {
	c := wl.Coordination
	return config.Coordination{Mode: c.Mode, OnUnavailable: c.OnUnavailable, Queue: c.Queue, OnLeaseLost: c.OnLeaseLost,
		LeaseTTLSecs: int(c.LeaseTTL / time.Second), DriftMarginSecs: int(c.DriftMargin / time.Second)}
}

// config is the fleet's shared configuration for the workload with caps: its clusters (on
// simulated engines) and groups, and a tags router sending each query to the group its arrival
// tags it with.
func (wl *Workload) config(caps map[string]int) *config.Config {
	cfg := &config.Config{}
	for _, c := range wl.Clusters {
		cfg.Clusters = append(cfg.Clusters, config.Cluster{Name: c.Name, Engine: config.EngineSim, MaxRunningQueries: caps[c.Name]})
	}
	route := config.Router{Type: "tags", TagToGroup: map[string]string{}}
	for _, g := range wl.Groups {
		cfg.ClusterGroups = append(cfg.ClusterGroups, config.ClusterGroup{Name: g.Name, Members: g.Members, Strategy: g.Strategy,
			MaxQueuedQueries: g.MaxQueued, CapacityWaitTimeoutSecs: wholeSecs(g.WaitTimeout), Cache: g.Cache.config()})
		route.TagToGroup[g.Name] = g.Name
	}
	cfg.Routers = []config.Router{route}
	cfg.RoutingFallback = wl.Groups[0].Name
	config.ApplyDefaults(cfg)
	return cfg
}

// closedLoop counts the arrivals that are closed loops (clients > 0).
func closedLoop(as []Arrival) int {
	n := 0
	for _, a := range as {
		if a.Clients > 0 {
			n++
		}
	}
	return n
}

// clientsPerWorker is how many closed-loop clients each worker runs (absent: its arrivals are
// open), resolved once for the whole fleet.
func (sc *Scenario) clientsPerWorker() map[string]int {
	n := map[string]int{}
	for _, a := range sc.Workload.Arrivals {
		if a.Clients == 0 {
			continue
		}
		members, _ := sc.Resolve(a.Workers)
		counted := map[string]bool{} // a worker named twice in a group runs the arrival's clients once
		for _, m := range members {
			if !counted[m] {
				counted[m] = true
				n[m] += a.Clients
			}
		}
	}
	return n
}

// WorkerWeights is each worker's share of an arrival's rate under skew (mean 1).
func WorkerWeights(n int, skew float64) []float64 {
	ws := make([]float64, n)
	sum := 0.0
	for i := range ws {
		ws[i] = 1
		if skew != 0 {
			ws[i] = 1 / math.Pow(float64(i+1), skew)
		}
		sum += ws[i]
	}
	for i := range ws {
		ws[i] *= float64(n) / sum
	}
	return ws
}
