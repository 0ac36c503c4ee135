package proxy

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/internal/promreg"
)

// metrics are the core's Prometheus series. Labels: group and cluster ("" while a query has no
// cluster yet), status for finished queries, reason for rejections.
type metrics struct {
	queries       *prometheus.CounterVec   // group, cluster, status
	duration      *prometheus.HistogramVec // group, cluster
	running       *prometheus.GaugeVec     // group, cluster
	queued        *prometheus.GaugeVec     // group
	rejections    *prometheus.CounterVec   // group, reason
	queueDuration *prometheus.HistogramVec // group, cluster
	cacheHits     *prometheus.CounterVec   // group
	cacheMisses   *prometheus.CounterVec   // group
	cacheWrites   *prometheus.CounterVec   // group
	forwarded     *prometheus.CounterVec   // group
	paths         *prometheus.CounterVec   // path: passthrough, arrow, cache
	// the paths series, resolved once: counted on every query
	pathPassthrough, pathArrow, pathCache prometheus.Counter

	// bound caches the series of each (group, cluster): resolving label values hashes and
	// validates them under the vector's lock, five times per query otherwise.
	boundMu sync.RWMutex
	bound   map[seriesKey]*boundSeries
	// last is the series series returned last: a proxy whose queries mostly go to one cluster
	// finds them with two string comparisons, without hashing both names under the lock.
	last atomic.Pointer[boundSeries]
}

type seriesKey struct{ group, cluster string }

// boundSeries are one (group, cluster)'s series, resolved once.
type boundSeries struct {
	group, cluster string
	running        prometheus.Gauge
	queueDuration  prometheus.Observer
	duration       prometheus.Observer
	ok             prometheus.Counter // queries_total{status="ok"}, the common case
}

// series returns the bound series of (group, cluster), resolving them on first use.
func (m *metrics) series(group, cluster string) *boundSeries {
	if s := m.last.Load(); s != nil && s.group == group && s.cluster == cluster {
		return s
	}
	k := seriesKey{group, cluster}
	m.boundMu.RLock()
	s := m.bound[k]
	m.boundMu.RUnlock()
	if s != nil {
		m.last.Store(s)
		return s
	}
	m.boundMu.Lock()
	defer m.boundMu.Unlock()
	if s = m.bound[k]; s == nil {
		s = &boundSeries{
			group: group, cluster: cluster,
			running:       m.running.WithLabelValues(group, cluster),
			queueDuration: m.queueDuration.WithLabelValues(group, cluster),
			duration:      m.duration.WithLabelValues(group, cluster),
			ok:            m.queries.WithLabelValues(group, cluster, string(StatusSucceeded)),
		}
		m.bound[k] = s
	}
	m.last.Store(s)
	return s
}

// finished counts one finished query of s's group and cluster.
func (m *metrics) finished(s *boundSeries, status Status, seconds float64) {
	if status == StatusSucceeded {
		s.ok.Inc()
	} else {
		m.queries.WithLabelValues(s.group, s.cluster, string(status)).Inc()
	}
	s.duration.Observe(seconds)
}

// metricsKey keys the core's metric set on a shared registry (promreg.Once): the cores of a
// simulated fleet count on one set (its bound series are shared and locked).
type metricsKey struct{}

func newMetrics(reg prometheus.Registerer) *metrics {
	return promreg.Once(reg, metricsKey{}, func() *metrics { return buildMetrics(reg) })
}

func buildMetrics(reg prometheus.Registerer) *metrics {
	buckets := prometheus.ExponentialBuckets(0.001, 4, 10) // 1ms .. ~4.4min
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
	}
	m.queries = promreg.Register(reg, m.queries)
	m.duration = promreg.Register(reg, m.duration)
	m.running = promreg.Register(reg, m.running)
	m.queued = promreg.Register(reg, m.queued)
	m.rejections = promreg.Register(reg, m.rejections)
	m.queueDuration = promreg.Register(reg, m.queueDuration)
	m.cacheHits = promreg.Register(reg, m.cacheHits)
	m.cacheMisses = promreg.Register(reg, m.cacheMisses)
	m.cacheWrites = promreg.Register(reg, m.cacheWrites)
	m.forwarded = promreg.Register(reg, m.forwarded)
	m.paths = promreg.Register(reg, m.paths)
	m.bound = map[seriesKey]*boundSeries{}
	m.pathPassthrough = m.paths.WithLabelValues(PathPassthrough)
	m.pathArrow = m.paths.WithLabelValues(PathArrow)
	m.pathCache = m.paths.WithLabelValues(PathCache)
	return m
}
