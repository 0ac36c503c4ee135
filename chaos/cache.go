package chaos

// Result caches on real daemons: a workload group with `cache:` gets the group's cache
// settings (clusterGroups[].cache, preferredWorker included: the workers forward a missed query
// to the owner of its key on the owner's ops listener, as `queryflux serve` does), an arrival
// with `keys: N` sends one of N fixed statements (the cache keys on the statement's text, so a
// key's duration and outcome are drawn once, from the seed, not per query), and cacheHitRate is
// read from the workers' /metrics: queryflux_cache_hits_total over queryflux_queries_total of
// the group, summed over the workers and their restarts, counted from the end of the warmup.

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/queryflux/queryflux/scenarios"
)

// cacheMaxBytes bounds each cached group's results (the simulator's bound).
const cacheMaxBytes = 64 << 20

// cacheYAML is a group's cache section ("" without a cache).
func cacheYAML(c *scenarios.WorkloadCache) string {
	if c == nil {
		return ""
	}
	ttl := c.TTL
	if ttl == 0 {
		ttl = 10 * time.Minute
	}
	s := fmt.Sprintf(", cache: {enabled: true, ttlSecs: %d, maxBytes: %d", int(ttl/time.Second), cacheMaxBytes)
	if c.PreferredWorker {
		s += ", preferredWorker: true"
		if c.PreferredWait > 0 {
			s += fmt.Sprintf(", preferredWorkerTimeoutMs: %d", c.PreferredWait.Milliseconds())
		}
	}
	return s + "}"
}

// keyDraws are the fixed durations and outcomes of an arrival's keys, drawn from the seed.
func (f *fleetWorkload) keyDraws(arrival int, a scenarios.Arrival) [][]drawn {
	rng := &lockedRand{r: rand.New(rand.NewPCG(f.r.opts.Seed, 1<<63|uint64(arrival)))}
	g := &arrivals{f: f, a: a, rng: rng}
	out := make([][]drawn, a.Keys)
	for k := range out {
		out[k] = g.draw()
	}
	return out
}

// groupCounters are a worker's cache hits and finished queries per group, from its /metrics,
// summed across its restarts.
type groupCounters struct{ hits, finished map[string]*counter }

func (g *groupCounters) see(metrics string) {
	hits, finished := map[string]int{}, map[string]int{}
	for line := range strings.Lines(metrics) {
		var into map[string]int
		switch {
		case strings.HasPrefix(line, "queryflux_cache_hits_total{"):
			into = hits
		case strings.HasPrefix(line, "queryflux_queries_total{"):
			into = finished
		default:
			continue
		}
		group, ok := labelValue(line, "group")
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); ok && err == nil {
			into[group] += int(v)
		}
	}
	seeAll(g.hits, hits)
	seeAll(g.finished, finished)
}

func seeAll(cs map[string]*counter, now map[string]int) {
	for k, v := range now {
		if cs[k] == nil {
			cs[k] = &counter{}
		}
		cs[k].see(v)
	}
	for k, c := range cs {
		if _, ok := now[k]; !ok {
			c.see(0) // the process restarted and has not counted this group yet
		}
	}
}

// labelValue is the value of label name in a /metrics line.
func labelValue(line, name string) (string, bool) {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return "", false
	}
	v, _, ok := strings.Cut(rest, `"`)
	return v, ok
}

// groupTotals are the fleet's cache hits and finished queries per group so far.
func (f *fleetWorkload) groupTotals() (hits, finished map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	hits, finished = map[string]int{}, map[string]int{}
	for _, g := range f.groupSeen {
		for k, c := range g.hits {
			hits[k] += c.total()
		}
		for k, c := range g.finished {
			finished[k] += c.total()
		}
	}
	return hits, finished
}

// groupLoads are the groups' numbers in the simulator's terms, counted after warmup.
func (f *fleetWorkload) groupLoads() map[string]*scenarios.GroupLoad {
	hits, finished := f.groupTotals()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]*scenarios.GroupLoad{}
	for _, g := range f.wl.Groups {
		out[g.Name] = &scenarios.GroupLoad{Submitted: f.groupSubmitted[g.Name], ClientErrors: f.groupErrors[g.Name],
			CacheHits: hits[g.Name] - f.groupBase[0][g.Name], Finished: finished[g.Name] - f.groupBase[1][g.Name]}
	}
	return out
}

// cacheHitRateCheck mirrors the simulator's cacheHitRate over the workers' /metrics.
type cacheHitRateCheck struct {
	group           string
	atLeast, atMost float64
	maxClientErrors int
}

func planCacheHitRate(c *scenarios.CheckSpec) (realCheck, string) {
	var a struct {
		Group           string   `yaml:"group"`
		AtLeast         float64  `yaml:"atLeast"`
		AtMost          *float64 `yaml:"atMost"`
		MaxClientErrors *int     `yaml:"maxClientErrors"`
	}
	if err := c.Params.Decode(&a); err != nil {
		return nil, err.Error()
	}
	ch := &cacheHitRateCheck{group: a.Group, atLeast: a.AtLeast, atMost: 1, maxClientErrors: -1}
	if a.AtMost != nil {
		ch.atMost = *a.AtMost
	}
	if a.MaxClientErrors != nil {
		ch.maxClientErrors = *a.MaxClientErrors
	}
	return ch, ""
}

func (c *cacheHitRateCheck) look(*scenarios.Scenario, *snapshot) {}

func (c *cacheHitRateCheck) result(r *runner) (bool, string) {
	g := r.wl.groupLoads()[c.group]
	rate := 0.0
	if g.Finished > 0 {
		rate = float64(g.CacheHits) / float64(g.Finished)
	}
	pass := g.Finished > 0 && rate >= c.atLeast && rate <= c.atMost && (c.maxClientErrors < 0 || g.ClientErrors <= c.maxClientErrors)
	detail := fmt.Sprintf("group %s: hit rate %.3f (%d of %d finished, the workers' /metrics; want [%.3f, %.3f]), %d of %d submitted failed at their clients",
		c.group, rate, g.CacheHits, g.Finished, c.atLeast, c.atMost, g.ClientErrors, g.Submitted)
	if c.maxClientErrors >= 0 {
		detail += fmt.Sprintf(" (at most %d)", c.maxClientErrors)
	}
	return pass, detail
}
