package proxy

import (
	"fmt"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/query"
)

func churnConfig(limit, edit int) *config.Config {
	cfg := &config.Config{
		Clusters: config.NamedList[config.Cluster]{{Name: "pg", Engine: config.EngineSim, MaxRunningQueries: limit}},
		ClusterGroups: config.NamedList[config.ClusterGroup]{
			{Name: "main", Members: []string{"pg"}, MaxQueuedQueries: 100 + edit, CapacityWaitTimeoutSecs: 600},
		},
		RoutingFallback: "main",
	}
	config.ApplyDefaults(cfg)
	return cfg
}

// TestConfigChurnNeverStrandsAWaiter: 9 clients queue on a cluster of cap 1 (their queries
// hold the engine until released), then 300 configuration edits land, each a runtime of its
// own, the cap going round from 1 to 4 and ending at 4. Every queued query
// follows the newest runtime at once: 4 run together under the last configuration, none
// stays behind on the cap of the runtime it arrived on, and all 9 finish.
func TestConfigChurnNeverStrandsAWaiter(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	eng := &fakeEngine{rows: 1, gate: g}
	factory := func(config.Cluster) (query.Engine, error) { return eng, nil }
	build := func(limit, edit int) {
		rt, err := Build(churnConfig(limit, edit), factory, Reuse(h.core.Runtime()))
		if err != nil {
			t.Fatal(err)
		}
		h.core.Activate(rt)
	}
	build(1, 0)
	const clients, edits = 9, 300
	var outs []*outcome
	for c := range clients {
		outs = append(outs, h.async(t.Context(), sel(fmt.Sprintf("select %d", c))))
		eventually(t, "the client running or queued", func() bool { return int(eng.executing.Load())+h.core.Queued("main") == c+1 })
	}
	for e := range edits {
		build(1+e%4, e+1)
	}
	eventually(t, "4 queries running under the last configuration's cap", func() bool {
		return eng.executing.Load() == 4 && h.core.Queued("main") == clients-4
	})
	if p := eng.peak.Load(); p > 4 {
		t.Fatalf("the engine ran %d queries at once, cap at most 4", p)
	}
	g.release()
	for i, o := range outs {
		if n, err := o.result(t); err != nil || n != 1 {
			t.Fatalf("client %d: %d rows, %v", i, n, err)
		}
	}
}

// TestQueuedQueryIsReroutedByANewConfig: a query queued for a full cluster is routed again when
// a new configuration moves its group's traffic to another group with room: it runs there at
// once instead of waiting for the old cluster.
func TestQueuedQueryIsReroutedByANewConfig(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	busy, spare := &fakeEngine{rows: 1, gate: g}, &fakeEngine{rows: 2}
	factory := func(c config.Cluster) (query.Engine, error) {
		if c.Name == "spare" {
			return spare, nil
		}
		return busy, nil
	}
	cfg := churnConfig(1, 0)
	rt, err := Build(cfg, factory)
	if err != nil {
		t.Fatal(err)
	}
	h.core.Activate(rt)
	first := h.async(t.Context(), sel("select 1"))
	eventually(t, "the first query running", func() bool { return busy.executing.Load() == 1 })
	queued := h.async(t.Context(), sel("select 2"))
	eventually(t, "the second query queued", func() bool { return h.core.Queued("main") == 1 })

	moved := churnConfig(1, 1)
	moved.Clusters = append(moved.Clusters, config.Cluster{Name: "spare", Engine: config.EngineSim, MaxRunningQueries: 1})
	moved.ClusterGroups = append(moved.ClusterGroups, config.ClusterGroup{Name: "other", Members: []string{"spare"}})
	moved.RoutingFallback = "other"
	config.ApplyDefaults(moved)
	rt, err = Build(moved, factory, Reuse(h.core.Runtime()))
	if err != nil {
		t.Fatal(err)
	}
	h.core.Activate(rt)
	if n, err := queued.result(t); err != nil || n != 2 {
		t.Fatalf("the queued query, routed again: %d rows, %v; want it run on spare", n, err)
	}
	g.release()
	if n, err := first.result(t); err != nil || n != 1 {
		t.Fatalf("the first query: %d %v", n, err)
	}
}
