package assembly

import (
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/enginefence"
	"github.com/queryflux/queryflux/internal/config"
)

// leaseAuthority is what makes a control plane the authority on every capacity lease: each
// cluster's cap and the lease TTL from its own current configuration (not the worker's word),
// and the engine fence that stops a reclaimed lease's work. Every configuration the control
// plane applies replaces them.
type leaseAuthority struct {
	terms atomic.Pointer[leaseTerms]
	fence capacity.EngineFence
	// follow is the fence when it must learn each configuration's clusters (the engine fence).
	follow *enginefence.Fence
}

type leaseTerms struct {
	caps map[string]int // by cluster, variants expanded
	ttl  time.Duration
}

// newLeaseAuthority holds cfg's terms; fence nil means the engine fence on cfg's clusters.
func newLeaseAuthority(cfg *config.Config, fence capacity.EngineFence) *leaseAuthority {
	a := &leaseAuthority{fence: fence}
	if fence == nil {
		//determinism:ok the production fence (the engines' own sessions), used when the caller gives none; the simulator gives one
		a.follow = enginefence.New(cfg)
		a.fence = a.follow
	}
	a.set(cfg)
	return a
}

func (a *leaseAuthority) set(cfg *config.Config) {
	t := &leaseTerms{caps: map[string]int{}, ttl: secs(cfg.QueryFlux.Coordination.LeaseTTLSecs)}
	for _, c := range cfg.ExpandClusters() {
		t.caps[c.Name] = c.MaxRunningQueries
	}
	a.terms.Store(t)
	if a.follow != nil {
		a.follow.SetConfig(cfg)
	}
}

// limits is the capacity.Limits of the control plane's API.
func (a *leaseAuthority) limits(cluster string) (int, time.Duration, bool) {
	t := a.terms.Load()
	limit, ok := t.caps[cluster]
	return limit, t.ttl, ok && limit > 0
}

// capacityFence is the fence the capacity API runs (nil for NoFence: none at all).
func (a *leaseAuthority) capacityFence() capacity.EngineFence {
	if a.fence == NoFence {
		return nil
	}
	return a.fence
}
