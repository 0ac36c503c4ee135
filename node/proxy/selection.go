package proxy

import (
	"sort"

	"github.com/queryflux/queryflux/node/env"
)

// candidates returns the members a query may run on now: enabled, healthy, and below their cap
// by this node's own count (the guard has the final word). The order is the strategy's
// preference; the core tries them in turn until the guard grants a slot.
func (g *group) candidates(running func(*cluster) int, rnd env.Rand) []member {
	available := func(c *cluster) bool { return c.enabled && c.healthy.Load() && running(c) < c.cap }
	if len(g.members) == 1 { // the common group: its own slice, no copy per query
		if available(g.members[0].cluster) {
			return g.members
		}
		return nil
	}
	var ok []member
	for _, m := range g.members {
		if available(m.cluster) {
			ok = append(ok, m)
		}
	}
	if len(ok) < 2 {
		return ok
	}
	switch g.strategy {
	case Failover:
		// config order is the preference order
	case RoundRobin:
		n := len(ok)
		start := int(g.cursor.Add(1)-1) % n
		rotated := make([]member, 0, n)
		rotated = append(rotated, ok[start:]...)
		ok = append(rotated, ok[:start]...)
	case LeastLoaded:
		// Fewest running relative to cap first; ties keep config order.
		sort.SliceStable(ok, func(i, j int) bool {
			a, b := ok[i].cluster, ok[j].cluster
			return running(a)*b.cap < running(b)*a.cap
		})
	case Weighted:
		ok = weightedOrder(ok, rnd)
	default:
		panic("proxy: group " + g.name + " has unknown strategy " + g.strategy)
	}
	return ok
}

// describer is the member a statement is described on: the first enabled, healthy one, full
// or not (describing takes no slot).
func (g *group) describer() *cluster {
	for _, m := range g.members {
		if m.cluster.enabled && m.cluster.healthy.Load() {
			return m.cluster
		}
	}
	return nil
}

// usable reports whether any member is enabled and healthy, however loaded: if none is, waiting
// for a slot is pointless.
func (g *group) usable() bool { return g.describer() != nil }

// weightedOrder draws members without replacement, each draw proportional to weight.
func weightedOrder(ms []member, rnd env.Rand) []member {
	rest := append([]member(nil), ms...)
	out := make([]member, 0, len(ms))
	for len(rest) > 0 {
		total := 0
		for _, m := range rest {
			total += m.weight
		}
		pick := int(rnd.Int64N(int64(total)))
		i := 0
		for ; pick >= rest[i].weight; i++ {
			pick -= rest[i].weight
		}
		out = append(out, rest[i])
		rest = append(rest[:i], rest[i+1:]...)
	}
	return out
}
