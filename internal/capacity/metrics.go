package capacity

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/promreg"
)

// Metrics are the capacity counters of one node. Create one per node and hand it to both the
// API handler and the guard.
type Metrics struct {
	// LeaseDenied counts acquires answered "at capacity", by cluster.
	LeaseDenied *prometheus.CounterVec
	// LeaseYielded counts retry-mode acquires denied although a slot was free: it was kept for
	// a worker that holds fewer leases of the cluster and is waiting for one, by cluster.
	LeaseYielded *prometheus.CounterVec
	// CoordinationFailures counts calls to the coordination service that failed (network,
	// timeout, 5xx, store error), by operation.
	CoordinationFailures *prometheus.CounterVec
	// Overrun counts leases lost by self-fencing whose query was kept running (onLeaseLost:
	// overrun), by cluster.
	Overrun *prometheus.CounterVec
	// LeasesLost counts leases dropped by self-fencing, by cluster and the action taken.
	LeasesLost *prometheus.CounterVec
	// LeaseReused counts slots served by an idle lease of this node, without a round trip to
	// the coordination service, by cluster; counted when the slot is released, and not for a
	// slot given back unused (Unused).
	LeaseReused *prometheus.CounterVec
	// Refused counts lease requests the control plane refused, by operation and reason
	// (not-holder: a renew or release of another worker's lease; unknown-cluster).
	Refused *prometheus.CounterVec
	// Reclaimed counts leases the control plane freed after revoking them, by cluster and how
	// the engine fence ended (fenced: confirmed; grace: not confirmed, freed after the grace).
	Reclaimed *prometheus.CounterVec
	// ReleasesDropped counts lease releases this node gave up sending, by cluster and reason
	// (queue-full: the release queue was at its bound; expired: the lease's term passed while
	// the control plane did not answer, so it frees the lease itself).
	ReleasesDropped *prometheus.CounterVec
	// LostAnswers counts acquires whose answer a worker lost and then named again, by cluster
	// and what the control plane did (regranted: a retry answered with the lease the first
	// sending was granted; settled: the lease of a given-up acquire freed).
	LostAnswers *prometheus.CounterVec
	// MisbehavingAnswers counts answers of the control plane's that a worker did not use, by
	// cluster and kind: a grant of a lease it holds already (duplicate), gave up (ended), marked
	// revoked (revoked) or not of the cluster asked (malformed); a renewal answered revoked or
	// with another lease (revoked, other), after which the lease is fenced.
	MisbehavingAnswers *prometheus.CounterVec
	// OverCap counts leases the control plane's sweeper found granted over their cluster's cap
	// (more leases held than maxRunningQueries, the newest granted after the cap was known), by
	// cluster: whoever granted them, the fleet ran over its cap.
	OverCap *prometheus.CounterVec
}

// NewMetrics creates the counters and registers them on reg (nil: kept but not registered).
// A counter already registered on reg by an earlier NewMetrics is reused.
// On a shared registry (promreg.Share) every call returns the first call's counters.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return promreg.Once(reg, metricsKey{}, func() *Metrics { return buildMetrics(reg) })
}

// metricsKey keys the capacity metric set on a shared registry (promreg.Once).
type metricsKey struct{}

func buildMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		LeaseDenied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_lease_denied_total",
			Help: "Capacity lease acquires denied because the cluster was at its cap.",
		}, []string{"cluster"}),
		LeaseYielded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_lease_yielded_total",
			Help: "Capacity lease acquires denied with a slot free, kept for a waiting worker that holds fewer leases (retry-mode fairness).",
		}, []string{"cluster"}),
		CoordinationFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_coordination_failures_total",
			Help: "Calls to the capacity coordination service that failed.",
		}, []string{"op"}),
		Overrun: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_overrun_total",
			Help: "Queries kept running after self-fencing dropped their lease (onLeaseLost: overrun).",
		}, []string{"cluster"}),
		LeasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_leases_lost_total",
			Help: "Leases dropped by self-fencing because they could not be renewed in time.",
		}, []string{"cluster", "action"}),
		LeaseReused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_lease_reused_total",
			Help: "Capacity slots served by an idle lease of this node, without asking the coordination service (counted when released; not for a slot given back unused).",
		}, []string{"cluster"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_refused_total",
			Help: "Capacity lease requests refused by the control plane, by operation and reason: not-holder (another worker's lease), unknown-cluster, not-served (a cluster not sent to the worker), stale (a lease no longer held under its generation: swept, revoked or released), invalid (a malformed lease id, a negative term, a batch past its bound), bad-request (a body that is not the request).",
		}, []string{"op", "reason"}),
		Reclaimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_reclaimed_total",
			Help: "Revoked capacity leases freed by the control plane, by whether the engine fence confirmed their work stopped.",
		}, []string{"cluster", "fence"}),
		ReleasesDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_releases_dropped_total",
			Help: "Capacity lease releases never delivered to the control plane (queue-full: the release queue was at its bound; expired: the lease's term passed first).",
		}, []string{"cluster", "reason"}),
		LostAnswers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_lost_answers_total",
			Help: "Capacity lease acquires whose answer a worker lost, named again: regranted (a retry answered with the lease already granted) or settled (that lease freed).",
		}, []string{"cluster", "outcome"}),
		MisbehavingAnswers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_misbehaving_answers_total",
			Help: "Control-plane lease answers a worker did not use: grants of a lease it holds (duplicate), gave up (ended), revoked, malformed, or held by another worker (holder); renewals answered revoked or with another lease (the lease fenced).",
		}, []string{"cluster", "kind"}),
		OverCap: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queryflux_capacity_over_cap_total",
			Help: "Capacity leases the control plane's audit found granted over their cluster's cap (more leases held than maxRunningQueries): the fleet ran over the cap.",
		}, []string{"cluster"}),
	}
	m.LeaseDenied = promreg.Register(reg, m.LeaseDenied)
	m.LeaseYielded = promreg.Register(reg, m.LeaseYielded)
	m.CoordinationFailures = promreg.Register(reg, m.CoordinationFailures)
	m.Overrun = promreg.Register(reg, m.Overrun)
	m.LeasesLost = promreg.Register(reg, m.LeasesLost)
	m.LeaseReused = promreg.Register(reg, m.LeaseReused)
	m.Refused = promreg.Register(reg, m.Refused)
	m.Reclaimed = promreg.Register(reg, m.Reclaimed)
	m.ReleasesDropped = promreg.Register(reg, m.ReleasesDropped)
	m.LostAnswers = promreg.Register(reg, m.LostAnswers)
	m.MisbehavingAnswers = promreg.Register(reg, m.MisbehavingAnswers)
	m.OverCap = promreg.Register(reg, m.OverCap)
	return m
}

// metricsOrNew returns m, or unregistered metrics when m is nil.
func metricsOrNew(m *Metrics) *Metrics {
	if m == nil {
		return NewMetrics(nil)
	}
	return m
}
