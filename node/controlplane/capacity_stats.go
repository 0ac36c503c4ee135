package controlplane

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// PathAdminCapacityStats is GET ?cluster=NAME: CapacityStats, what Studio's Capacity page and
// `queryflux leases stats` show.
const PathAdminCapacityStats = "/admin/capacity/stats"

const (
	// statsSamplesMax bounds each cluster's ring of samples (an hour at 5 s).
	statsSamplesMax = 720
	// statsWindow is how many sample intervals the per-worker counts, the p99 wait and the
	// fairness cover (a minute at 5 s).
	statsWindow = 12
	// statsWaitsMax bounds the acquire waits kept per cluster and interval: past it the newest
	// replace the oldest, so an interval counts with its last statsWaitsMax acquires.
	statsWaitsMax = 256
	// statsClustersMax bounds the clusters followed (a misbehaving worker may name any).
	statsClustersMax = 1024
	// statsLeasesMax bounds the grant times kept (one per lease held).
	statsLeasesMax = 100_000
	// acquireBodyMax is what the stats read of an acquire request to learn its cluster; a
	// bigger body is left to the acquire handler's own limit and is not counted.
	acquireBodyMax = 1 << 20
)

// CapacityStats is what the control plane measured of capacity leases, per cluster. Held and
// Revoked come from the lease store (every replica's leases); acquires, waits and grants are
// those this replica answered.
type CapacityStats struct {
	At time.Time `json:"at"`
	// EveryMillis is the sampling period; 0: no sampler runs, a sample is taken on each call.
	EveryMillis int64          `json:"everyMillis"`
	Clusters    []ClusterStats `json:"clusters"`
}

// ClusterStats is one cluster: now, the recent past, each worker's share, each held lease.
type ClusterStats struct {
	Cluster string `json:"cluster"`
	// Cap is the configured maxRunningQueries (0: not known to this control plane).
	Cap     int              `json:"cap,omitempty"`
	Now     CapacitySample   `json:"now"`
	Samples []CapacitySample `json:"samples"` // oldest first
	// Workers are those that held a lease or asked for one within the window.
	Workers []WorkerShare `json:"workers"`
	Leases  []HeldLease   `json:"leases"`
}

// CapacitySample is one cluster at one moment. Granted, Denied and the reclaims count since
// the control plane started.
type CapacitySample struct {
	At      time.Time `json:"at"`
	Held    int       `json:"held"`    // leases counted against the cap (revoked ones included)
	Revoked int       `json:"revoked"` // of those, revoked: to be fenced and freed
	Waiting int       `json:"waiting"` // acquires in flight at this replica (queued, ordered mode)
	// WaitP99Millis is the p99 time acquires answered over the window ending here took
	// (queueing included); nil: none answered.
	WaitP99Millis *float64 `json:"waitP99Millis,omitempty"`
	Granted       uint64   `json:"granted"`
	Denied        uint64   `json:"denied"`
	// Reclaimed are revoked leases (expired, evicted, revoked by an operator) the sweeper
	// freed: Fenced once the engine fence confirmed their work stopped, FreedAfterGrace when
	// it could not and the fence grace was over, the rest when no fence was configured.
	Reclaimed       uint64 `json:"reclaimed"`
	Fenced          uint64 `json:"fenced"`
	FreedAfterGrace uint64 `json:"freedAfterGrace"`
	// Fairness is Jain's index of the workers' grants over the window, each divided by the
	// worker's weight: 1 when every asking worker got its share; nil: no worker was granted any.
	Fairness *float64 `json:"fairness,omitempty"`
}

// WorkerShare is one worker's use of a cluster over the window.
type WorkerShare struct {
	Worker  string `json:"worker"`
	Weight  int    `json:"weight"`
	Held    int    `json:"held"`
	Granted uint64 `json:"granted"`
	Denied  uint64 `json:"denied"`
}

// HeldLease is a lease in the store and when it was granted: by this replica, or else when the
// stats first saw it.
type HeldLease struct {
	capacity.Lease
	Since time.Time `json:"since"`
}

// capacityStats follows acquires as they are answered and samples the lease store.
type capacityStats struct {
	e       env.Env
	store   capacity.CapacityStore
	limits  capacity.Limits
	weights map[string]int
	every   time.Duration
	fences  *prometheus.Registry // the sweeper's reclaim counter, read back

	mu       sync.Mutex
	clusters map[string]*clusterStats
	since    map[string]time.Time // lease id -> granted or first seen
}

type clusterStats struct {
	waiting         int
	granted, denied uint64
	waits           []float64 // this interval's, milliseconds
	waitsNext       int
	interval        map[string]*workerCount
	past            []map[string]*workerCount // the window's earlier intervals, oldest first
	pastWaits       [][]float64               // and their waits
	samples         []CapacitySample
}

type workerCount struct{ granted, denied uint64 }

func newCapacityStats(e env.Env, cfg CapacityConfig) *capacityStats {
	st := &capacityStats{e: e, store: cfg.Store, limits: cfg.Limits, every: cfg.StatsEvery,
		fences: prometheus.NewRegistry(), clusters: map[string]*clusterStats{}, since: map[string]time.Time{}}
	if cfg.Ordered {
		st.weights = cfg.Weights // weights order only the queue
	}
	if err := st.fences.Register(cfg.Metrics.Reclaimed); err != nil {
		panic("controlplane: reading the reclaim counter: " + err.Error()) // a fresh registry
	}
	return st
}

// cluster is name's stats, created on first use; nil for a cluster the control plane does not
// know (when it knows its clusters) or past statsClustersMax.
func (st *capacityStats) cluster(name string) *clusterStats {
	c := st.clusters[name]
	if c != nil {
		return c
	}
	if st.limits != nil {
		if _, _, ok := st.limits(name); !ok {
			return nil
		}
	}
	if len(st.clusters) < statsClustersMax {
		c = newClusterStats()
		st.clusters[name] = c
	}
	return c
}

// rereadBody gives a request body read ahead (read) back, then what is left of the body (rest):
// io.NopCloser(io.MultiReader(bytes.NewReader(read), rest)) in one allocation instead of four,
// for every acquire a control plane serves. Close does nothing, as NopCloser's.
type rereadBody struct {
	read bytes.Reader
	rest io.Reader
}

func (b *rereadBody) Read(p []byte) (int, error) {
	if b.read.Len() > 0 {
		return b.read.Read(p)
	}
	if b.rest == nil {
		return 0, io.EOF
	}
	n, err := b.rest.Read(p)
	if err == io.EOF {
		b.rest = nil
	}
	return n, err
}

func (*rereadBody) Close() error { return nil }

func newClusterStats() *clusterStats { return &clusterStats{interval: map[string]*workerCount{}} }

// acquire wraps the acquire endpoint: it counts the acquire waiting while it is served, then
// its wait and its answer.
func (st *capacityStats) acquire(serve func(http.ResponseWriter, *http.Request, string)) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, caller string) {
		body, err := workerapi.ReadAtMost(r.Body, r.ContentLength, acquireBodyMax+1)
		rb := &rereadBody{rest: r.Body}
		rb.read.Reset(body)
		r.Body = rb
		var req capacity.AcquireRequest
		if err == nil && len(body) <= acquireBodyMax {
			req, err = capacity.DecodeAcquireRequest(body, false)
		}
		if err != nil || len(body) > acquireBodyMax || capacity.CheckName("cluster", req.Cluster) != nil {
			serve(w, r, caller)
			return
		}
		start := st.e.Now()
		st.mu.Lock()
		if c := st.cluster(req.Cluster); c != nil {
			c.waiting++
		}
		st.mu.Unlock()
		rec := &answerRecorder{ResponseWriter: w}
		serve(rec, r, caller)
		var resp capacity.AcquireResponse
		answered := rec.status == http.StatusOK
		if answered {
			resp, err = capacity.DecodeAcquireResponse(rec.body.Bytes())
			answered = err == nil
		}
		now := st.e.Now()
		st.mu.Lock()
		defer st.mu.Unlock()
		c := st.cluster(req.Cluster)
		if c == nil {
			return
		}
		c.waiting--
		if !answered {
			return
		}
		c.addWait(float64(now.Sub(start)) / float64(time.Millisecond))
		worker := capacity.HolderWorker(caller)
		wc := c.interval[worker]
		if wc == nil {
			wc = &workerCount{}
			c.interval[worker] = wc
		}
		if resp.Granted {
			c.granted++
			wc.granted++
			if resp.Lease != nil && len(st.since) < statsLeasesMax {
				st.since[resp.Lease.ID] = now
			}
		} else {
			c.denied++
			wc.denied++
		}
	}
}

func (c *clusterStats) addWait(ms float64) {
	if len(c.waits) < statsWaitsMax {
		c.waits = append(c.waits, ms)
		return
	}
	c.waits[c.waitsNext] = ms
	c.waitsNext = (c.waitsNext + 1) % statsWaitsMax
}

// answerRecorder keeps the status and (the start of) the body an acquire was answered with.
type answerRecorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (a *answerRecorder) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerRecorder) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.body.Len() < 64<<10 {
		a.body.Write(p)
	}
	return a.ResponseWriter.Write(p)
}

// run samples every st.every until ctx ends.
func (st *capacityStats) run(ctx context.Context) {
	_ = env.Every(ctx, st.e, st.every, func(ctx context.Context) {
		if _, err := st.sample(ctx, true); err != nil {
			st.e.Logger().Warn("capacity stats: listing the leases failed; this sample is skipped", "err", redact.Error(err))
		}
	})
}

// fenceCounts reads the sweeper's reclaim counter: cluster -> fence outcome -> leases.
func (st *capacityStats) fenceCounts() map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	families, err := st.fences.Gather()
	if err != nil {
		st.e.Logger().Warn("capacity stats: reading the reclaim counter failed", "err", redact.Error(err))
		return out
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var cluster, fence string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "cluster":
					cluster = lp.GetValue()
				case "fence":
					fence = lp.GetValue()
				}
			}
			if out[cluster] == nil {
				out[cluster] = map[string]uint64{}
			}
			out[cluster][fence] += uint64(m.GetCounter().GetValue())
		}
	}
	return out
}

// sample lists the leases and answers every cluster's stats now. keep ends the interval: the
// sample joins the ring and the interval's counts move into the window.
func (st *capacityStats) sample(ctx context.Context, keep bool) (CapacityStats, error) {
	leases, err := st.store.List(ctx, "")
	if err != nil {
		return CapacityStats{}, err
	}
	fences := st.fenceCounts()
	now := st.e.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	byCluster := map[string][]capacity.Lease{}
	live := map[string]bool{}
	for _, l := range leases {
		byCluster[l.Cluster] = append(byCluster[l.Cluster], l)
		live[l.ID] = true
		if _, ok := st.since[l.ID]; !ok && len(st.since) < statsLeasesMax {
			st.since[l.ID] = now
		}
	}
	for id := range st.since { //determinism:ok deletes only
		if !live[id] {
			delete(st.since, id)
		}
	}
	for name := range byCluster { //determinism:ok creates entries only
		if st.clusters[name] == nil && len(st.clusters) < statsClustersMax {
			st.clusters[name] = newClusterStats() // held, though no longer configured
		}
	}
	out := CapacityStats{At: now, EveryMillis: st.every.Milliseconds()}
	for _, name := range sortedNames(st.clusters) {
		c := st.clusters[name]
		cs := ClusterStats{Cluster: name, Leases: []HeldLease{}}
		if st.limits != nil {
			if limit, _, ok := st.limits(name); ok {
				cs.Cap = limit
			}
		}
		held := map[string]int{}
		s := CapacitySample{At: now, Waiting: c.waiting, Granted: c.granted, Denied: c.denied,
			Fenced: fences[name]["fenced"], FreedAfterGrace: fences[name]["grace"]}
		for _, n := range fences[name] { //determinism:ok a sum
			s.Reclaimed += n
		}
		for _, l := range byCluster[name] {
			s.Held++
			if l.Revoked {
				s.Revoked++
			}
			held[capacity.HolderWorker(l.Holder)]++
			cs.Leases = append(cs.Leases, HeldLease{Lease: l, Since: st.since[l.ID]})
		}
		waits := append(slices.Clone(c.pastWaits), c.waits)
		if all := slices.Concat(waits...); len(all) > 0 {
			p := percentile(all, 0.99)
			s.WaitP99Millis = &p
		}
		window := append(slices.Clone(c.past), c.interval)
		cs.Workers = st.shares(window, held)
		s.Fairness = jain(cs.Workers)
		cs.Now = s
		if keep {
			c.samples = append(c.samples, s)
			if len(c.samples) > statsSamplesMax {
				c.samples = slices.Delete(c.samples, 0, len(c.samples)-statsSamplesMax)
			}
			c.past, c.pastWaits = window, waits
			if len(c.past) >= statsWindow {
				c.past = slices.Delete(c.past, 0, len(c.past)-statsWindow+1)
				c.pastWaits = slices.Delete(c.pastWaits, 0, len(c.pastWaits)-statsWindow+1)
			}
			c.interval, c.waits, c.waitsNext = map[string]*workerCount{}, nil, 0
		}
		cs.Samples = slices.Clone(c.samples)
		if cs.Samples == nil {
			cs.Samples = []CapacitySample{}
		}
		out.Clusters = append(out.Clusters, cs)
	}
	if out.Clusters == nil {
		out.Clusters = []ClusterStats{}
	}
	return out, nil
}

// shares sums each worker's counts over window and joins the leases it holds now.
func (st *capacityStats) shares(window []map[string]*workerCount, held map[string]int) []WorkerShare {
	sum := map[string]*WorkerShare{}
	get := func(name string) *WorkerShare {
		if sum[name] == nil {
			weight := 1
			if w, ok := st.weights[name]; ok {
				weight = w
			}
			sum[name] = &WorkerShare{Worker: name, Weight: weight}
		}
		return sum[name]
	}
	for _, interval := range window {
		for name, wc := range interval { //determinism:ok sums
			ws := get(name)
			ws.Granted += wc.granted
			ws.Denied += wc.denied
		}
	}
	for name, n := range held { //determinism:ok sets
		get(name).Held = n
	}
	out := make([]WorkerShare, 0, len(sum))
	for _, name := range sortedNames(sum) {
		out = append(out, *sum[name])
	}
	return out
}

// jain is Jain's fairness index of the workers' weighted grants, among workers that asked.
func jain(ws []WorkerShare) *float64 {
	var sum, squares float64
	n := 0
	for _, w := range ws {
		if w.Granted+w.Denied == 0 {
			continue // held leases from before the window, asked nothing since
		}
		x := float64(w.Granted) / float64(w.Weight)
		sum, squares, n = sum+x, squares+x*x, n+1
	}
	if n == 0 || squares == 0 {
		return nil
	}
	j := sum * sum / (float64(n) * squares)
	return &j
}

// percentile is the nearest-rank q-quantile of xs (which it sorts).
func percentile(xs []float64, q float64) float64 {
	sort.Float64s(xs)
	k := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(k, 0)]
}

func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m { //determinism:ok sorted below
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// serve answers GET PathAdminCapacityStats. Without a sampler each call is a sample.
func (st *capacityStats) serve(w http.ResponseWriter, r *http.Request) {
	out, err := st.sample(r.Context(), st.every <= 0)
	if err != nil {
		st.e.Logger().Warn("capacity stats: listing the leases failed", "err", redact.Error(err))
		workerapi.WriteError(w, http.StatusServiceUnavailable, "capacity store unavailable", "")
		return
	}
	if name := r.URL.Query().Get("cluster"); name != "" {
		out.Clusters = slices.DeleteFunc(out.Clusters, func(c ClusterStats) bool { return c.Cluster != name })
	}
	workerapi.WriteJSON(w, http.StatusOK, capacity.MediaJSON, out)
}

// StartCapacityStats samples the capacity leases every CapacityConfig.StatsEvery until ctx ends
// (nothing without MountCapacity or a period).
func (cp *ControlPlane) StartCapacityStats(ctx context.Context) {
	if st := cp.capStats; st != nil && st.every > 0 {
		cp.e.Go(ctx, "capacity-stats", st.run)
	}
}
