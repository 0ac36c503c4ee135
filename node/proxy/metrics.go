package proxy

import (
	"github.com/prometheus/client_golang/prometheus"
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
	paths         *prometheus.CounterVec   // path: passthrough, arrow, cache
	pathCounters  map[string]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
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
		paths: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_query_path_total", Help: "Queries by how their results went through the proxy: passthrough (engine wire messages relayed), arrow (decoded and encoded), cache.",
		}, []string{"path"}),
	}
	m.pathCounters = map[string]prometheus.Counter{}
	for _, p := range []string{PathPassthrough, PathArrow, PathCache} {
		m.pathCounters[p] = m.paths.WithLabelValues(p) // resolved once: counted on every query
	}
	if reg != nil {
		reg.MustRegister(m.queries, m.duration, m.running, m.queued, m.rejections, m.queueDuration,
			m.cacheHits, m.cacheMisses, m.cacheWrites, m.paths)
	}
	return m
}
