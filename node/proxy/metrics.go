package proxy

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/promreg"
	"github.com/queryflux/queryflux/internal/query"
)

// metrics are the core's Prometheus series. Labels: group and cluster ("" while a query has no
// cluster yet), status for finished queries, reason for rejections.
type metrics struct {
	queries       *prometheus.CounterVec   // group, cluster, status: all but "succeeded" (boundSeries.ok); "lease_lost" too
	duration      *prometheus.HistogramVec // group, cluster: only the family (boundSeries counts)
	running       *prometheus.GaugeVec     // group, cluster: only the family
	queued        *prometheus.GaugeVec     // group
	rejections    *prometheus.CounterVec   // group, reason
	queueDuration *prometheus.HistogramVec // group, cluster: only the family
	cacheHits     *prometheus.CounterVec   // group
	cacheMisses   *prometheus.CounterVec   // group
	cacheWrites   *prometheus.CounterVec   // group
	forwarded     *prometheus.CounterVec   // group
	paths         *prometheus.CounterVec   // path: passthrough, arrow, cache
	healthy       *prometheus.GaugeVec     // cluster: 1 while its health check answers
	healthFails   *prometheus.CounterVec   // cluster: health checks that failed
	// the paths series, resolved once: counted on every query
	pathPassthrough, pathArrow, pathCache prometheus.Counter

	// bound holds the series every query counts on, one (group, cluster)'s each: counted in
	// plain atomics, folded into the vectors' families when they are scraped (boundCollector).
	bound *boundCollector
	// last is the series series returned last: a proxy whose queries mostly go to one cluster
	// finds them with two string comparisons, without hashing both names under the lock.
	last atomic.Pointer[boundSeries]
}

type seriesKey struct{ group, cluster string }

// boundSeries are one (group, cluster)'s series of the queries it ran: how many run, their
// queue waits and durations, how many succeeded. Each is one or two atomic adds per query,
// where the client library's gauge, histograms and counter cost ~200 instructions a query
// (a histogram's observation keeps its count, buckets and sum in step for a scrape under way:
// a hot and a cold copy, a count of writers); a scrape reads them as they are (a sum can be an
// observation ahead of its count, or behind).
type boundSeries struct {
	group, cluster string
	running        atomic.Int64
	queueDuration  foldedHistogram
	duration       foldedHistogram
	ok             atomic.Uint64 // queries_total{status="ok"}, the common case; other statuses go to the vector
}

// foldedHistogram is a histogram over durationBuckets: counts[i] observations in bucket i
// (the last: above every bound), not cumulative; sum their sum's float64 bits.
type foldedHistogram struct {
	counts [durationBucketsN + 1]atomic.Uint64
	sum    atomic.Uint64
}

// durationBuckets are the upper bounds of the duration histograms: 1ms .. ~4.4min.
var durationBuckets = prometheus.ExponentialBuckets(0.001, 4, durationBucketsN)

const durationBucketsN = 10

func (h *foldedHistogram) observe(v float64) {
	i := 0
	for i < len(durationBuckets) && v > durationBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	if v == 0 {
		return // a wait under NoWait: nothing to add
	}
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// metric is h as the client library's histogram would write it.
func (h *foldedHistogram) metric(d *prometheus.Desc, labels ...string) prometheus.Metric {
	cumulative := make(map[float64]uint64, len(durationBuckets))
	var n uint64
	for i, b := range durationBuckets {
		n += h.counts[i].Load()
		cumulative[b] = n
	}
	n += h.counts[len(durationBuckets)].Load()
	return prometheus.MustNewConstHistogram(d, n, math.Float64frombits(h.sum.Load()), cumulative, labels...)
}

// boundCollector collects four of the core's vectors (running, queue and query durations,
// finished queries), each followed by the bound series' own counts under the vector's name.
// Only queries_total's other statuses are counted on a vector (a series of a bound (group,
// cluster) in both would be collected twice). Registered once per registry: a second core's
// metrics find it registered and count on its series.
type boundCollector struct {
	queries, running                  prometheus.Collector
	duration, queueDuration           prometheus.Collector
	queriesD, runningD, durationD, qD *prometheus.Desc

	mu     sync.RWMutex
	series map[seriesKey]*boundSeries
}

func (b *boundCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range []prometheus.Collector{b.queries, b.running, b.duration, b.queueDuration} {
		c.Describe(ch)
	}
}

func (b *boundCollector) Collect(ch chan<- prometheus.Metric) {
	for _, c := range []prometheus.Collector{b.queries, b.running, b.duration, b.queueDuration} {
		c.Collect(ch)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, s := range b.series { //determinism:ok a scrape sorts what it gathers
		ch <- prometheus.MustNewConstMetric(b.queriesD, prometheus.CounterValue, float64(s.ok.Load()), s.group, s.cluster, string(StatusSucceeded))
		ch <- prometheus.MustNewConstMetric(b.runningD, prometheus.GaugeValue, float64(s.running.Load()), s.group, s.cluster)
		ch <- s.duration.metric(b.durationD, s.group, s.cluster)
		ch <- s.queueDuration.metric(b.qD, s.group, s.cluster)
	}
}

// series returns the bound series of (group, cluster), made on first use.
func (m *metrics) series(group, cluster string) *boundSeries {
	if s := m.last.Load(); s != nil && s.group == group && s.cluster == cluster {
		return s
	}
	b, k := m.bound, seriesKey{group, cluster}
	b.mu.RLock()
	s := b.series[k]
	b.mu.RUnlock()
	if s == nil {
		b.mu.Lock()
		if s = b.series[k]; s == nil {
			s = &boundSeries{group: group, cluster: cluster}
			b.series[k] = s
		}
		b.mu.Unlock()
	}
	m.last.Store(s)
	return s
}

// finished counts one finished query of s's group and cluster that ended with status and the
// SQLSTATE code ("" for none).
func (m *metrics) finished(s *boundSeries, status Status, code string, seconds float64) {
	switch {
	case status == StatusSucceeded:
		s.ok.Add(1)
	case code == query.CodeLeaseLost:
		m.queries.WithLabelValues(s.group, s.cluster, statusLeaseLost).Inc()
	default:
		m.queries.WithLabelValues(s.group, s.cluster, string(status)).Inc()
	}
	s.duration.observe(seconds)
}

// statusLeaseLost is queries_total's status of a query stopped because its capacity lease was
// lost (failed in its record and the history, with query.CodeLeaseLost): an operator tells a
// worker's lost leases from the engines' failures and the queue's refusals by it.
const statusLeaseLost = "lease_lost"

// metricsKey keys the core's metric set on a shared registry (promreg.Once): the cores of a
// simulated fleet count on one set (its bound series are shared and locked).
type metricsKey struct{}

func newMetrics(reg prometheus.Registerer) *metrics {
	return promreg.Once(reg, metricsKey{}, func() *metrics { return buildMetrics(reg) })
}

func buildMetrics(reg prometheus.Registerer) *metrics {
	buckets := durationBuckets
	m := &metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_queries_total", Help: "Queries finished, by group, cluster and status.",
		}, []string{"group", "cluster", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queryflux_query_duration_seconds", Help: "Query time from arrival to the end of its stream.", Buckets: buckets,
		}, []string{"group", "cluster"}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "queryflux_running_queries", Help: "Queries holding a capacity slot on this node.",
		}, []string{"group", "cluster"}),
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "queryflux_queued_queries", Help: "Queries waiting for a capacity slot on this node.",
		}, []string{"group"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_queue_rejections_total", Help: "Queries refused for capacity: queue full or wait timed out.",
		}, []string{"group", "reason"}),
		queueDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queryflux_queue_duration_seconds", Help: "Time a query waited for a capacity slot.", Buckets: buckets,
		}, []string{"group", "cluster"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_cache_hits_total", Help: "Queries answered from the result cache.",
		}, []string{"group"}),
		cacheMisses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_cache_misses_total", Help: "Cacheable queries not found in the result cache.",
		}, []string{"group"}),
		cacheWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_cache_writes_total", Help: "Results stored in the result cache.",
		}, []string{"group"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_cache_forwarded_total", Help: "Cacheable queries this node missed and sent to the worker owning their cache key (cache.preferredWorker); the owner counts its hit or miss.",
		}, []string{"group"}),
		paths: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_query_path_total", Help: "Queries by how their results went through the proxy: passthrough (engine wire messages relayed), arrow (decoded and encoded), cache.",
		}, []string{"path"}),
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "queryflux_cluster_healthy", Help: "1 while the cluster's last health check answered, 0 while it failed (its groups skip it); enabled clusters of the active configuration only.",
		}, []string{"cluster"}),
		healthFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_cluster_health_check_failures_total", Help: "Cluster health checks that failed (queryflux.healthCheck: every 10 s, 5 s timeout by default).",
		}, []string{"cluster"}),
	}
	m.bound = promreg.Register(reg, &boundCollector{
		queries: m.queries, running: m.running, duration: m.duration, queueDuration: m.queueDuration,
		queriesD: descOf(m.queries), runningD: descOf(m.running), durationD: descOf(m.duration), qD: descOf(m.queueDuration),
		series: map[seriesKey]*boundSeries{},
	})
	m.queries, m.running = m.bound.queries.(*prometheus.CounterVec), m.bound.running.(*prometheus.GaugeVec)
	m.duration, m.queueDuration = m.bound.duration.(*prometheus.HistogramVec), m.bound.queueDuration.(*prometheus.HistogramVec)
	m.queued = promreg.Register(reg, m.queued)
	m.rejections = promreg.Register(reg, m.rejections)
	m.cacheHits = promreg.Register(reg, m.cacheHits)
	m.cacheMisses = promreg.Register(reg, m.cacheMisses)
	m.cacheWrites = promreg.Register(reg, m.cacheWrites)
	m.forwarded = promreg.Register(reg, m.forwarded)
	m.paths = promreg.Register(reg, m.paths)
	m.healthy = promreg.Register(reg, m.healthy)
	m.healthFails = promreg.Register(reg, m.healthFails)
	m.pathPassthrough = m.paths.WithLabelValues(PathPassthrough)
	m.pathArrow = m.paths.WithLabelValues(PathArrow)
	m.pathCache = m.paths.WithLabelValues(PathCache)
	return m
}

// descOf is the one Desc of a vector.
func descOf(c prometheus.Collector) *prometheus.Desc {
	ch := make(chan *prometheus.Desc, 1)
	c.Describe(ch)
	return <-ch //determinism:ok Describe has sent the vector's one Desc: the receive never waits
}
