package scenarios

// Result-cache locality in a workload: groups with a cache (workload.groups[].cache), arrivals
// whose queries repeat a mix of cacheable statements (arrivals[].keys), and, for groups with
// preferredWorker, the shipped forwarding path: each worker's forward.Forwarder (built by
// node/assembly as the daemon builds it) sends a query it missed to the worker owning its key
// over the simulated network, on that worker's ops listener (POST /v1/queryflux/query), where
// forward.QueryHandler runs it on the owner's proxy core. The check cacheHitRate reads the
// fleet's hit rate and what clients saw.
//
// Model limits: simnet carries an answer as one message when the handler returns, so the owner's
// acceptance (its flushed headers) reaches the forwarder with the whole result, and
// cache.preferredWorkerTimeoutMs bounds the owner's whole answer here, not just its acceptance:
// an owner slower than that (queued for capacity) sees its query also run on the worker that
// forwarded it.

import (
	"fmt"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/sim"
)

// WorkloadCache is a group's result cache (clusterGroups[].cache).
type WorkloadCache struct {
	TTL time.Duration `yaml:"ttl"` // how long a result is served, whole seconds (default 10m)
	// PreferredWorker sends a query a worker missed to the worker owning its key.
	PreferredWorker bool `yaml:"preferredWorker"`
	// PreferredWait is cache.preferredWorkerTimeoutMs (default 1s; see the model limits above).
	PreferredWait time.Duration `yaml:"preferredWait"`
}

// cacheMaxBytes bounds each cached group's results: the mixes of a scenario fit.
const cacheMaxBytes = 64 << 20

func (c *WorkloadCache) validate(where string) error {
	switch {
	case c.TTL < 0 || c.TTL%time.Second != 0:
		return fmt.Errorf("%s.ttl %v: whole seconds, >= 0", where, c.TTL)
	case c.PreferredWait < 0 || c.PreferredWait > time.Minute || c.PreferredWait%time.Millisecond != 0:
		return fmt.Errorf("%s.preferredWait %v: whole milliseconds, at most 1m", where, c.PreferredWait)
	case c.PreferredWait > 0 && !c.PreferredWorker:
		return fmt.Errorf("%s.preferredWait needs preferredWorker: true", where)
	}
	return nil
}

// config is the group's cache section.
func (c *WorkloadCache) config() config.GroupCache {
	if c == nil {
		return config.GroupCache{}
	}
	ttl := c.TTL
	if ttl == 0 {
		ttl = 10 * time.Minute
	}
	return config.GroupCache{Enabled: true, TTLSecs: int(ttl / time.Second), MaxBytes: cacheMaxBytes,
		PreferredWorker: c.PreferredWorker, PreferredWorkerTimeoutMs: int(c.PreferredWait / time.Millisecond)}
}

// prefersWorkers reports whether any group sends queries to their keys' owners.
func (wl *Workload) prefersWorkers() bool {
	for _, g := range wl.Groups {
		if g.Cache != nil && g.Cache.PreferredWorker {
			return true
		}
	}
	return false
}

// forwardPeers gives a worker of a fleet whose groups prefer workers the shipped forwarder: the
// simulated network carries its requests, and it registers its ops listener (the node's
// handler) as where it takes whole queries.
func forwardPeers(w *World, n *sim.Node, deps *assembly.WorkerDeps) {
	if !w.Scenario.Workload.prefersWorkers() {
		return
	}
	deps.ForwardClient = n.Client()
	self := map[string]string{forward.Query: "http://" + n.Name()}
	deps.Endpoints = func(map[string]string) (map[string]string, error) { return self, nil }
}

// mixSQL is statement k of an arrival's repeated mix.
func mixSQL(k int64) string { return fmt.Sprintf("select %d as q", k) }

// cacheHitRate: the fleet's result-cache hit rate in a group (finished queries answered from a
// cache, over finished queries, after warmup) is within [atLeast, atMost], and at most
// maxClientErrors queries of the group failed as their clients saw them.
type cacheHitRate struct {
	group           string
	atLeast, atMost float64
	maxClientErrors int
}

func parseCacheHitRate(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Group           string   `yaml:"group"`
		AtLeast         float64  `yaml:"atLeast"`
		AtMost          *float64 `yaml:"atMost"`
		MaxClientErrors *int     `yaml:"maxClientErrors"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if sc.Workload == nil {
		return nil, p.Errorf("cacheHitRate needs a workload: section")
	}
	found := false
	for _, g := range sc.Workload.Groups {
		found = found || (g.Name == c.Group && g.Cache != nil)
	}
	if !found {
		return nil, p.Errorf("group %q: no workload group of that name with a cache", c.Group)
	}
	chk := &cacheHitRate{group: c.Group, atLeast: c.AtLeast, atMost: 1, maxClientErrors: -1}
	if c.AtMost != nil {
		chk.atMost = *c.AtMost
	}
	if c.MaxClientErrors != nil {
		chk.maxClientErrors = *c.MaxClientErrors
	}
	if chk.atLeast < 0 || chk.atMost > 1 || chk.atLeast > chk.atMost {
		return nil, p.Errorf("atLeast %v, atMost %v: want 0 <= atLeast <= atMost <= 1", chk.atLeast, chk.atMost)
	}
	return chk, nil
}

func (c *cacheHitRate) Start(w *World) {}

func (c *cacheHitRate) Result(w *World) (bool, string) {
	g := WorkloadOf(w).group(c.group)
	rate := g.hitRate()
	pass := g.Finished > 0 && rate >= c.atLeast && rate <= c.atMost && (c.maxClientErrors < 0 || g.ClientErrors <= c.maxClientErrors)
	detail := fmt.Sprintf("group %s: hit rate %.3f (%d of %d finished; want [%.3f, %.3f]), %d of %d submitted failed at their clients",
		c.group, rate, g.CacheHits, g.Finished, c.atLeast, c.atMost, g.ClientErrors, g.Submitted)
	if c.maxClientErrors >= 0 {
		detail += fmt.Sprintf(" (at most %d)", c.maxClientErrors)
	}
	return pass, detail
}

func (l *GroupLoad) hitRate() float64 {
	if l.Finished == 0 {
		return 0
	}
	return float64(l.CacheHits) / float64(l.Finished)
}
