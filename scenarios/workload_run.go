package scenarios

// The workload at run time: what the control plane mounts (capacity API over a checked lease
// store, history ingest), what each worker runs (simulated engines, the capacity guard, the
// proxy core, the history uplink, arrival generators), and the statistics and oracle state
// they feed (WorkloadStats, kept across restarts in the World).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/simengine"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/sim"
)

// WorkerLoad is one worker's share of the workload (all its incarnations).
type WorkerLoad struct {
	Submitted int     // queries the arrivals started
	Admitted  int     // guard grants (a slot: a lease, or a local slot)
	Denied    int     // guard denials (at capacity, or coordination unavailable and failClosed)
	Finished  int     // finished-query records
	Succeeded int     //
	Failed    int     // engine failures, timeouts, queue full...
	Cancelled int     //
	TimedOut  int     // gave up waiting for a slot (group waitTimeout), or ended by a lost lease
	LeaseLost int     // admitted on a cluster, then ended because its capacity lease was lost
	QueueFull int     // refused: the group's queue was full
	QueueMs   []int64 // queue time of every finished query that was allowed to wait
}

// GroupLoad is one cluster group's share of the workload: what the planner compares with a
// replayed recording.
type GroupLoad struct {
	Submitted int
	Finished  int
	CacheHits int // finished queries answered from a result cache
	// ClientErrors are the submitted queries whose clients got an error (a finished query's
	// failure, or an owner that stopped answering a forwarded one).
	ClientErrors int
	ExecMs       []int64 // execution time of every finished query that got a slot
	QueueMs      []int64
}

func (l *GroupLoad) finished(r proxy.Record) {
	l.Finished++
	if r.CacheHit {
		l.CacheHits++
	}
	if r.Cluster != "" {
		l.ExecMs = append(l.ExecMs, r.ExecMs)
	}
	if r.ErrorCode != query.CodeQueueFull {
		l.QueueMs = append(l.QueueMs, r.QueueMs)
	}
}

// WorkloadStats is the workload's record of a run: per-worker counts, control-plane requests,
// and the oracles' findings. It lives in the World (w.Durable), so restarts keep it.
type WorkloadStats struct {
	Workers    map[string]*WorkerLoad
	Groups     map[string]*GroupLoad
	CPRequests map[string]int // control-plane requests by path

	LeaseViolations  int      // grants that left a cluster with more leases than its cap
	EngineViolations int      // instants when a cluster ran more queries than its cap
	FirstViolations  []string // the first few, with time and counts
	MaxLeases        map[string]int
	MaxExecuting     map[string]int

	// caps are the clusters' caps now (configSet edits them); limits what the engine oracle
	// holds each cluster to: a raised cap at once, a lowered one once the cluster has drained
	// under it (the queries admitted before run to their end).
	caps, limits map[string]int
	// engineWatchers see every change of a cluster's executing total (lease_checks.go).
	engineWatchers []func(cluster string, total int)
}

// WorkloadOf is the run's workload statistics.
func WorkloadOf(w *World) *WorkloadStats {
	return w.Durable("workload/stats", func() any {
		st := &WorkloadStats{Workers: map[string]*WorkerLoad{}, Groups: map[string]*GroupLoad{}, CPRequests: map[string]int{},
			MaxLeases: map[string]int{}, MaxExecuting: map[string]int{}, caps: map[string]int{}, limits: map[string]int{}}
		for _, c := range w.Scenario.Workload.Clusters {
			st.caps[c.Name], st.limits[c.Name] = c.Cap, c.Cap
		}
		return st
	}).(*WorkloadStats)
}

func (st *WorkloadStats) worker(name string) *WorkerLoad {
	wl := st.Workers[name]
	if wl == nil {
		wl = &WorkerLoad{}
		st.Workers[name] = wl
	}
	return wl
}

func (st *WorkloadStats) group(name string) *GroupLoad {
	gl := st.Groups[name]
	if gl == nil {
		gl = &GroupLoad{}
		st.Groups[name] = gl
	}
	return gl
}

func (st *WorkloadStats) violation(w *World, msg string) {
	if len(st.FirstViolations) < 5 {
		st.FirstViolations = append(st.FirstViolations, fmt.Sprintf("at %v: %s", w.Sim.Elapsed(), msg))
	}
	w.Sim.Record("violation", msg)
}

// engineChanged is the engine's view: the queries executing on cluster's engine (every
// worker's, those of crashed or frozen workers included until the engine stops them) must
// stay within its cap.
func (st *WorkloadStats) engineChanged(w *World, cluster string, total int) {
	st.MaxExecuting[cluster] = max(st.MaxExecuting[cluster], total)
	for _, watch := range st.engineWatchers {
		watch(cluster, total)
	}
	if total <= st.caps[cluster] {
		st.limits[cluster] = st.caps[cluster] // under the cap now: a lowering's drain is over
	}
	if limit := st.limits[cluster]; total > limit {
		st.EngineViolations++
		st.violation(w, fmt.Sprintf("%d queries executing on cluster %s, cap %d", total, cluster, limit))
	}
}

// EnginesName is the node the clusters' simulated engines run on. No fault reaches it: what a
// worker's crash does to the queries it started there is the engine kind's rule
// (WorkloadCluster.Engine), as a real engine's backends are not the worker's.
const EnginesName = "engines"

// startEngines makes one simulated engine per cluster, shared by every worker.
func startEngines(w *World) {
	node := w.Sim.AddNode(EnginesName, nil)
	if w.Scenario.Workload == nil {
		return
	}
	st := WorkloadOf(w)
	for _, c := range w.Scenario.Workload.Clusters {
		dist, _ := c.Duration.Distribution()
		eng := simengine.New(node.Env(), c.Name, simengine.Params{Duration: dist, FailureRate: c.FailureRate, Rows: 1,
			ClientLoss: c.clientLoss()})
		eng.OnChange(func(cluster string, executing int) { st.engineChanged(w, cluster, executing) })
		w.durable["engine/"+c.Name] = eng
	}
}

// EngineOf is cluster's engine (nil if none).
func EngineOf(w *World, cluster string) *simengine.Engine {
	eng, _ := w.durable["engine/"+cluster].(*simengine.Engine)
	return eng
}

// engineFence is the control plane's fence on the simulated engines: it stops the queries
// tagged with the reclaimed leases, and the engine confirms at once.
type engineFence struct{ w *World }

var _ capacity.EngineFence = engineFence{}

func (f engineFence) Fence(ctx context.Context, cluster string, refs []capacity.LeaseRef) (bool, error) {
	eng := EngineOf(f.w, cluster)
	if eng == nil {
		return false, fmt.Errorf("no simulated engine for cluster %q", cluster)
	}
	tags := capacity.FenceTags(refs)
	n := eng.Fence(tags)
	f.w.Sim.Record("fence", fmt.Sprintf("%s %v stopped %d", cluster, tags, n))
	return true, nil
}

// checkedLeases is the lease store every control plane of the scenario shares (it stands for
// the one Postgres database, and survives restarts) with the control plane's-view oracle:
// after every grant, the cluster's leases must not exceed its cap.
type checkedLeases struct {
	*capacity.Memory
	w *World
}

func (c *checkedLeases) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	return c.AcquireNamed(ctx, cluster, holder, "", limit, ttl, now)
}

func (c *checkedLeases) AcquireNamed(ctx context.Context, cluster, holder, request string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	if !storeServed(ctx, capacity.PathAcquire) {
		return capacity.Lease{}, ctx.Err()
	}
	l, err := c.Memory.AcquireNamed(ctx, cluster, holder, request, limit, ttl, now)
	if err != nil {
		return l, err
	}
	held := c.Memory.Count(cluster)
	st := WorkloadOf(c.w)
	st.MaxLeases[cluster] = max(st.MaxLeases[cluster], held)
	if limit := st.caps[cluster]; held > limit {
		st.LeaseViolations++
		st.violation(c.w, fmt.Sprintf("%d leases held on cluster %s after granting %s to %s, cap %d", held, cluster, l.ID, holder, limit))
	}
	return l, nil
}

// Renew, Release and ReleaseBatch take their service time (storeServed) as Acquire does.
func (c *checkedLeases) Renew(ctx context.Context, ref capacity.LeaseRef, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	if !storeServed(ctx, capacity.PathRenew) {
		return capacity.Lease{}, ctx.Err()
	}
	return c.Memory.Renew(ctx, ref, ttl, now)
}

func (c *checkedLeases) Release(ctx context.Context, ref capacity.LeaseRef) error {
	if !storeServed(ctx, capacity.PathReleaseBatch) {
		return ctx.Err()
	}
	return c.Memory.Release(ctx, ref)
}

func (c *checkedLeases) ReleaseBatch(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	if len(refs) > 0 && !storeServed(ctx, capacity.PathReleaseBatch) {
		return 0, ctx.Err()
	}
	return c.Memory.ReleaseBatch(ctx, refs)
}

// Contention, MarkDenied and MarkGranted, the waiting record's calls, take the service time
// the calibration names for them (capacity.StoreContention, ...), each one a statement on the
// real store: an ordered grant reads the record and marks the wait over before it answers.
func (c *checkedLeases) Contention(ctx context.Context, cluster, holder string, now time.Time) (capacity.Contention, error) {
	if !storeServed(ctx, capacity.StoreContention) {
		return capacity.Contention{}, ctx.Err()
	}
	return c.Memory.Contention(ctx, cluster, holder, now)
}

func (c *checkedLeases) MarkDenied(ctx context.Context, cluster, holder string, now time.Time) error {
	if !storeServed(ctx, capacity.StoreMarkDenied) {
		return ctx.Err()
	}
	return c.Memory.MarkDenied(ctx, cluster, holder, now)
}

func (c *checkedLeases) MarkGranted(ctx context.Context, cluster, holder string) error {
	if !storeServed(ctx, capacity.StoreMarkGranted) {
		return ctx.Err()
	}
	return c.Memory.MarkGranted(ctx, cluster, holder)
}

// LeasesOf is the scenario's lease store.
func LeasesOf(w *World) *checkedLeases {
	return w.Durable("leases", func() any {
		if wl := w.Scenario.Workload; wl != nil && wl.LeaseTable == leaseTableMemory {
			// The control plane's own memory, on its process's clock (`queryflux serve`
			// without a database).
			cps, _ := w.Scenario.Resolve("controlPlanes")
			return &checkedLeases{Memory: capacity.NewMemory().Monotonic(w.Node(cps[0]).Env()), w: w}
		}
		// The database's clock (the simulator's, undrifted) stamps and sweeps the whole table,
		// whatever the control planes' clocks say, as Postgres's does.
		return &checkedLeases{Memory: capacity.NewMemory().WithClock(w.Sim.Now), w: w}
	}).(*checkedLeases)
}

// countingHandler counts the control plane's requests by path and, with a calibration, makes
// each take its service time in the pool.
type countingHandler struct {
	inner http.Handler
	st    *WorkloadStats
	pool  *servicePool
}

func (h countingHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	h.st.CPRequests[r.URL.Path]++
	if h.pool != nil {
		if storeCharged[r.URL.Path] {
			r = r.WithContext(withServicePool(r.Context(), h.pool))
		} else if !h.pool.serve(r.Context(), r.URL.Path) {
			http.Error(rw, "request went away while queued", http.StatusServiceUnavailable)
			return
		}
	}
	h.inner.ServeHTTP(rw, r)
}

// workloadControlPlane is control plane c's handler counting requests (and, with a
// calibration, taking each one's service time).
func workloadControlPlane(w *World, n *sim.Node, c *assembly.ControlPlane) http.Handler {
	h := countingHandler{inner: c.Handler(), st: WorkloadOf(w)}
	if cal := w.Scenario.Workload.ControlPlane; cal != nil {
		h.pool = &servicePool{e: n.Env(), cal: cal, freed: n.Env().NewSignal()}
	}
	return h
}

// observeWorkload makes the worker's statistics follow its admissions and finished queries, and
// sets its uplink to the workload's history settings (before the worker is built).
func observeWorkload(w *World, n *sim.Node, deps *assembly.WorkerDeps) {
	wl, name := w.Scenario.Workload, n.Name()
	st := WorkloadOf(w)
	load := st.worker(name)
	tracker := HistoryTrackerOf(w, name)
	start := w.Sim.Now().Add(-w.Sim.Elapsed())
	forwardPeers(w, n, deps)
	deps.Observe = assembly.Observers{
		HistoryDropped: func(id string) { tracker.Dropped[id]++ },
		Acquired: func(_ string, err error) {
			if w.Sim.Elapsed() < wl.Warmup {
				return
			}
			switch {
			case err == nil:
				load.Admitted++
			case errors.Is(err, capacity.ErrAtCapacity), errors.Is(err, capacity.ErrUnavailable):
				load.Denied++
			}
		},
		Finished: func(r proxy.Record) {
			if wl.History != nil {
				tracker.Finished = append(tracker.Finished, r.QueryID)
			}
			if r.Start.Sub(start) >= wl.Warmup {
				load.finished(r)
				st.group(r.Group).finished(r)
			}
		},
	}
}

// workloadWorker runs the workload's arrivals on worker wk.
func workloadWorker(w *World, n *sim.Node, wk *assembly.Worker) {
	wl := w.Scenario.Workload
	e, name := n.Env(), n.Name()
	st := WorkloadOf(w)
	load := st.worker(name)
	if u := wk.Query.Uplink; u != nil {
		tracker := HistoryTrackerOf(w, name)
		tracker.Uplinks = append(tracker.Uplinks, u)
	}
	core := wk.Query.Node.Core()
	clients, stop := e.WithCancel(n.Ctx())
	w.stopLoadWith(stop)
	leak := plantedLeak(w)
	counted := func(group string) bool {
		if w.Sim.Elapsed() < wl.Warmup {
			return false
		}
		load.Submitted++
		st.group(group).Submitted++
		return true
	}
	// run executes one query to its end and reports whether it succeeded; a counted query's
	// failure counts against its group.
	run := func(ctx context.Context, group, sql string, counted bool) bool {
		ok := drain(ctx, core, &query.Request{SQL: sql, User: group, Tags: []string{group}, Protocol: query.ProtocolPostgres}, leak())
		if !ok && counted && ctx.Err() == nil {
			st.group(group).ClientErrors++
		}
		return ok
	}
	submit := func(ctx context.Context, group, sql string) {
		c := counted(group)
		e.Go(ctx, "query", func(ctx context.Context) { run(ctx, group, sql, c) })
	}
	rates := arrivalRates(w)
	for i, a := range wl.Arrivals {
		rate, ok := rates[i][name]
		if !ok {
			continue
		}
		gen := generator{w: w, e: e, a: a, rate: rate, submit: submit}
		for c := range a.Clients {
			e.Go(clients, fmt.Sprintf("client-%d-%d", i, c), func(ctx context.Context) {
				gen.closedLoop(ctx, func(ctx context.Context) bool { return run(ctx, a.Group, gen.sql(), counted(a.Group)) })
			})
		}
		e.Go(clients, fmt.Sprintf("arrivals-%d", i), gen.poisson)
		if a.Burst != nil {
			e.Go(clients, fmt.Sprintf("bursts-%d", i), gen.bursts)
		}
	}
	if rp := wl.replayed; rp != nil {
		if qs, ok := replaySchedule(w, name); ok {
			gen := generator{w: w, e: e, submit: submit}
			e.Go(clients, "replay", func(ctx context.Context) { gen.replay(ctx, qs, rp.durations) })
		}
	}
}

// drain executes req on core to its end and reports whether it succeeded. A leaking drain (a
// planted bug) never closes the result stream.
func drain(ctx context.Context, core *proxy.Core, req *query.Request, leak bool) bool {
	rows, err := core.Execute(ctx, req)
	if err != nil {
		return false
	}
	if !leak {
		defer rows.Close()
	}
	for {
		if _, err := rows.Next(ctx); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}

// plantedLeak says, query by query, whether to leak it (RunOpts.PlantLeak: every Nth of the run).
func plantedLeak(w *World) func() bool {
	every := w.opts.PlantLeak
	return func() bool {
		if every <= 0 {
			return false
		}
		n := w.Durable("planted-leak", func() any { return new(int) }).(*int)
		*n++
		return *n%every == 0
	}
}

// arrivalRates is, for each arrival, the rate of each worker it reaches. It is computed once per
// run: every worker of a fleet of thousands looks its own up at boot.
func arrivalRates(w *World) []map[string]float64 {
	return w.Durable("workload/rates", func() any {
		arrivals := w.Scenario.Workload.Arrivals
		rates := make([]map[string]float64, len(arrivals))
		for i, a := range arrivals {
			members, _ := w.Scenario.Resolve(a.Workers)
			weights := WorkerWeights(len(members), a.Skew)
			rates[i] = make(map[string]float64, len(members))
			for j, m := range members {
				if _, dup := rates[i][m]; !dup { // a worker named twice takes its first share
					rates[i][m] = a.Rate * weights[j]
				}
			}
		}
		return rates
	}).([]map[string]float64)
}

func (l *WorkerLoad) finished(r proxy.Record) {
	l.Finished++
	switch r.Status {
	case proxy.StatusSucceeded:
		l.Succeeded++
	case proxy.StatusCancelled:
		l.Cancelled++
	default:
		l.Failed++
	}
	switch r.ErrorCode {
	case query.CodeQueueFull:
		l.QueueFull++
		return
	case query.CodeCapacityTimeout, query.CodeQueryTimeout:
		l.TimedOut++
	case query.CodeLeaseLost:
		l.LeaseLost++
	}
	l.QueueMs = append(l.QueueMs, r.QueueMs)
}

// generator starts an arrival's queries on one worker.
type generator struct {
	w      *World
	e      env.Env
	a      Arrival
	rate   float64
	submit func(ctx context.Context, group, sql string)
}

// waitActive sleeps until the arrival is active (inside [from, to) and an on phase); false
// when it is over or ctx ended.
func (g generator) waitActive(ctx context.Context) bool {
	for {
		now := g.w.Sim.Elapsed()
		switch {
		case now >= g.a.To:
			return false
		case now < g.a.From:
			if g.e.Sleep(ctx, g.a.From-now) != nil {
				return false
			}
			continue
		}
		if o := g.a.OnOff; o != nil && o.Off > 0 {
			phase := (now - g.a.From) % (o.On + o.Off)
			if phase >= o.On {
				if g.e.Sleep(ctx, o.On+o.Off-phase) != nil {
					return false
				}
				continue
			}
		}
		return true
	}
}

func (g generator) poisson(ctx context.Context) {
	if g.rate <= 0 {
		return
	}
	for g.waitActive(ctx) {
		gap := time.Duration(-math.Log(1-g.e.Rand().Float64()) / g.rate * float64(time.Second))
		if g.e.Sleep(ctx, gap) != nil {
			return
		}
		if g.w.Sim.Elapsed() < g.a.To {
			g.submit(ctx, g.a.Group, g.sql())
		}
	}
}

// sql is the arrival's next statement: one of its mix, or "select 1".
func (g generator) sql() string {
	if g.a.Keys <= 0 {
		return "select 1"
	}
	return mixSQL(g.e.Rand().Int64N(int64(g.a.Keys)))
}

// ClientRefusedPause is the least time between the start of a closed-loop client's failed
// query and its next one: a client refused at once (queue full, no route) does not spin.
const ClientRefusedPause = 100 * time.Millisecond

// closedLoop runs one closed-loop client: the next query as soon as the last one ended.
func (g generator) closedLoop(ctx context.Context, query func(ctx context.Context) bool) {
	for ctx.Err() == nil && g.waitActive(ctx) {
		sent := g.e.Now()
		if !query(ctx) {
			if rest := ClientRefusedPause - g.e.Now().Sub(sent); rest > 0 && g.e.Sleep(ctx, rest) != nil {
				return
			}
		}
	}
}

func (g generator) bursts(ctx context.Context) {
	for g.waitActive(ctx) {
		for range g.a.Burst.Size {
			g.submit(ctx, g.a.Group, g.sql())
		}
		if g.e.Sleep(ctx, g.a.Burst.Every) != nil {
			return
		}
	}
}

// ---- summary ----

// WorkloadSummary is a run's workload in numbers (qfsim --json, the planner).
type WorkloadSummary struct {
	Workers          int                `json:"workers"`
	Submitted        int                `json:"submitted"`
	Admitted         int                `json:"admitted"`
	Denied           int                `json:"denied"`
	Finished         int                `json:"finished"`
	Succeeded        int                `json:"succeeded"`
	TimedOut         int                `json:"timed_out"`
	QueueFull        int                `json:"queue_full"`
	QueueP50Ms       float64            `json:"queue_p50_ms"`
	QueueP99Ms       float64            `json:"queue_p99_ms"`
	Fairness         float64            `json:"fairness"` // Jain's index of per-worker admitted share (per submitted query, or per closed-loop client)
	AdmittedPerSec   float64            `json:"admitted_per_sec"`
	CPRequestsPerSec float64            `json:"cp_requests_per_sec"`
	CPRequests       map[string]int     `json:"cp_requests"`
	LeaseViolations  int                `json:"lease_violations"`
	EngineViolations int                `json:"engine_violations"`
	PerWorker        map[string][2]int  `json:"-"` // admitted, submitted
	Shares           map[string]float64 `json:"-"` // what Fairness is the index of, by worker
	QueueMs          []int64            `json:"-"` // what the queue quantiles are of (runs of several seeds pool it)
	MaxExecuting     map[string]int     `json:"max_executing"`
	Objective        map[string]float64 `json:"objective,omitempty"`
	// Groups are the per-group numbers (submitted after warmup, execution-time quantiles).
	Groups map[string]GroupSummary `json:"groups,omitempty"`
}

// GroupSummary is one cluster group's traffic in a run.
type GroupSummary struct {
	Submitted       int     `json:"submitted"`
	SubmittedPerSec float64 `json:"submitted_per_sec"`
	ExecP50Ms       float64 `json:"exec_p50_ms"`
	ExecP90Ms       float64 `json:"exec_p90_ms"`
	ExecP99Ms       float64 `json:"exec_p99_ms"`
	QueueP50Ms      float64 `json:"queue_p50_ms"`
	QueueP99Ms      float64 `json:"queue_p99_ms"`
	// CacheHitRate is the share of finished queries answered from a result cache.
	CacheHitRate float64 `json:"cache_hit_rate"`
	ClientErrors int     `json:"client_errors"`
}

// Summary computes the summary over measured seconds (the run's duration minus warmup).
func (st *WorkloadStats) Summary(sc *Scenario) *WorkloadSummary {
	s := &WorkloadSummary{CPRequests: st.CPRequests, MaxExecuting: st.MaxExecuting, PerWorker: map[string][2]int{}, Shares: map[string]float64{},
		LeaseViolations: st.LeaseViolations, EngineViolations: st.EngineViolations}
	var queue []int64
	var shares []float64
	names, _ := sc.Resolve("workers")
	clients := sc.clientsPerWorker()
	for _, name := range names {
		l := st.worker(name)
		s.Workers++
		s.Submitted += l.Submitted
		s.Admitted += l.Admitted
		s.Denied += l.Denied
		s.Finished += l.Finished
		s.Succeeded += l.Succeeded
		s.TimedOut += l.TimedOut
		s.QueueFull += l.QueueFull
		queue = append(queue, l.QueueMs...)
		s.PerWorker[name] = [2]int{l.Admitted, l.Submitted}
		switch clients := clients[name]; {
		case clients > 0: // a closed loop's demand is its clients: the share is admitted per client
			s.Shares[name] = float64(l.Admitted) / float64(clients)
		case l.Submitted > 0:
			s.Shares[name] = float64(l.Admitted) / float64(l.Submitted)
		default:
			continue
		}
		shares = append(shares, s.Shares[name])
	}
	s.QueueMs = queue
	s.QueueP50Ms, s.QueueP99Ms = Percentile(queue, 0.50), Percentile(queue, 0.99)
	s.Fairness = JainIndex(shares)
	secs := (sc.Duration - sc.Workload.Warmup).Seconds()
	s.Groups = map[string]GroupSummary{}
	for name, g := range st.Groups { //determinism:ok a map built from a map
		gs := GroupSummary{Submitted: g.Submitted, ExecP50Ms: Percentile(g.ExecMs, 0.5), ExecP90Ms: Percentile(g.ExecMs, 0.9),
			ExecP99Ms: Percentile(g.ExecMs, 0.99), QueueP50Ms: Percentile(g.QueueMs, 0.5), QueueP99Ms: Percentile(g.QueueMs, 0.99),
			CacheHitRate: g.hitRate(), ClientErrors: g.ClientErrors}
		if secs > 0 {
			gs.SubmittedPerSec = float64(g.Submitted) / secs
		}
		s.Groups[name] = gs
	}
	total := 0
	for _, c := range st.CPRequests {
		total += c
	}
	if secs > 0 {
		s.AdmittedPerSec = float64(s.Admitted) / secs
		s.CPRequestsPerSec = float64(total) / sc.Duration.Seconds()
	}
	return s
}

// Percentile is the nearest-rank percentile q in [0, 1] of xs (0 for none).
func Percentile(xs []int64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return float64(s[min(max(rank, 0), len(s)-1)])
}

// JainIndex is Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when all equal, 1/n when
// one takes everything. It is 1 for no values or all zeros.
func JainIndex(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

func (s *WorkloadSummary) String() string {
	var cps []string
	for p, c := range s.CPRequests {
		cps = append(cps, fmt.Sprintf("%s=%d", p, c))
	}
	sort.Strings(cps)
	return fmt.Sprintf("workers=%d submitted=%d admitted=%d denied=%d timedOut=%d queueFull=%d queue p50=%.0fms p99=%.0fms fairness=%.3f admitted/s=%.1f cp req/s=%.1f [%s]",
		s.Workers, s.Submitted, s.Admitted, s.Denied, s.TimedOut, s.QueueFull, s.QueueP50Ms, s.QueueP99Ms, s.Fairness,
		s.AdmittedPerSec, s.CPRequestsPerSec, strings.Join(cps, " "))
}

// workloadCapSet is configSet {cluster, cap} in a workload scenario: the cluster's cap in the
// fleet's config changes. Every running worker activates a runtime with the new cap (what its
// config sync does with the next snapshot), the control planes grant under it, and the engine
// oracle holds the cluster to it once the queries admitted before have drained under it.
func workloadCapSet(sc *Scenario, p Params, cluster string, c int) (Action, error) {
	if sc.Workload == nil || sc.Workload.Cap(cluster) == 0 {
		return nil, p.Errorf("cluster %q: configSet with a cluster edits a workload cluster's cap", cluster)
	}
	if c < 1 {
		return nil, p.Errorf("cap %d: must be >= 1", c)
	}
	return func(w *World) error {
		fleetConfigOf(w).bad = nil
		setCap(w, cluster, c)
		configChanged(w)
		return nil
	}, nil
}

// setCap makes c the cluster's cap in the desired config and the oracles' view.
func setCap(w *World, cluster string, c int) {
	st := WorkloadOf(w)
	st.caps[cluster] = c
	if c > st.limits[cluster] {
		st.limits[cluster] = c
	}
	if eng := EngineOf(w, cluster); eng != nil && eng.Executing() <= c {
		st.limits[cluster] = c
	}
	w.Sim.Record("cap", fmt.Sprintf("%s=%d", cluster, c))
}
