package capacity

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/redact"
)

// capAudit is what the sweeper's audit of one cluster remembers between rounds.
type capAudit struct {
	cap int
	// since is the newest generation held when the audit began, or when the cap was lowered:
	// leases up to it may have been granted under a cap it does not know.
	since int64
	// flagged is the newest generation already counted over the cap.
	flagged int64
}

// auditCaps checks the store's invariant on every cluster's leases, all of them as List
// answers them (every replica's grants): a lease granted while cap or more leases of its
// cluster were held is an over-grant, whoever granted it (a store whose count drifted from its
// leases, a replica or an older release with a bug, another writer of the table). The newest
// lease held was granted while every older lease held now was held too: more leases than the
// cap now, the newest granted after the audit learnt the cap, is an over-grant seen. Each
// one is counted once (Metrics.OverCap) and logged with the holders. A cap lowered starts the
// count anew: the leases granted under the higher one are not over it; a cluster first seen
// starts it too (the cap its leases were granted under is not known). Nothing is revoked: the
// leases' work is already running, and which of them is the extra one no audit can tell.
func (s *Sweeper) auditCaps(all []Lease) {
	if s.Limits == nil {
		return
	}
	byCluster := map[string][]Lease{}
	for _, l := range all {
		byCluster[l.Cluster] = append(byCluster[l.Cluster], l)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.audits == nil {
		s.audits = map[string]*capAudit{}
	}
	clusters := slices.Concat(slices.Sorted(maps.Keys(byCluster)), slices.Sorted(maps.Keys(s.audits)))
	slices.Sort(clusters)
	for _, c := range slices.Compact(clusters) {
		limit, _, ok := s.Limits(c)
		if !ok || limit <= 0 {
			delete(s.audits, c) // no longer configured: its leases drain
			continue
		}
		ls := byCluster[c]
		var newest int64
		for _, l := range ls {
			newest = max(newest, l.Generation)
		}
		a := s.audits[c]
		switch {
		case a == nil:
			// First seen: its leases may have been granted under a cap the audit does not know.
			s.audits[c] = &capAudit{cap: limit, since: newest, flagged: newest}
			continue
		case limit < a.cap:
			a.since = max(a.since, newest)
		}
		a.cap = limit
		if len(ls) <= limit || newest <= a.since || newest <= a.flagged {
			continue
		}
		a.flagged = newest
		s.Metrics.OverCap.WithLabelValues(c).Inc()
		s.Env.Logger().Error("capacity: more leases held than the cluster's cap; a lease was granted over it",
			"cluster", c, "held", len(ls), "cap", limit, "newest", LeaseID(c, newest), "holders", holderCounts(ls))
	}
}

// auditOnly lists every lease and audits them (auditCaps): a round of a replica that does not
// hold the sweep lock. Replicas may be configured with different caps (a rollout, a mistake):
// each audits the caps it grants under, whichever sweeps.
func (s *Sweeper) auditOnly(ctx context.Context) {
	if s.Limits == nil {
		return
	}
	all, err := s.Store.List(ctx, "")
	if err != nil {
		s.Env.Logger().Warn("capacity audit: listing leases failed", "err", redact.Error(err))
		return
	}
	s.auditCaps(all)
}

// holderCounts names the workers holding ls and how many each: "w1=3,w2=2".
func holderCounts(ls []Lease) string {
	n := map[string]int{}
	for _, l := range ls {
		n[HolderWorker(l.Holder)]++
	}
	var b strings.Builder
	for _, w := range slices.Sorted(maps.Keys(n)) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(w + "=" + strconv.Itoa(n[w]))
	}
	return b.String()
}
