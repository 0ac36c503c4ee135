package proxy_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/simengine"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/sim"
)

// simWorld runs one node's proxy core inside the deterministic simulator: Poisson arrivals over
// two groups, SimEngines with random durations and failures, small caps and queues, a config
// activation halfway. It returns the trace hash and a digest of every finished-query record.
func simWorld(t *testing.T, seed uint64) (hash string, digest string, recs []proxy.Record) {
	t.Helper()
	s := sim.New(sim.Opts{Seed: seed})
	node := s.AddNode("w1", nil)
	e := node.Env()
	caps := map[string]int{"a": 2, "b": 1, "c": 3}
	engines := map[string]*simengine.Engine{}
	for _, name := range []string{"a", "b", "c"} {
		eng := simengine.New(e, name, simengine.Params{
			Duration: simengine.Exponential{Mean: 300 * time.Millisecond, Max: 5 * time.Second}, FailureRate: 0.05, Rows: 3,
		})
		eng.OnChange(func(cluster string, executing int) {
			if executing > caps[cluster] {
				s.Fail(fmt.Errorf("oracle: %d queries executing on %s, cap %d", executing, cluster, caps[cluster]))
			}
		})
		engines[name] = eng
	}
	spec := func(capC int) proxy.RuntimeSpec {
		var clusters []proxy.ClusterSpec
		for _, name := range []string{"a", "b", "c"} {
			clusters = append(clusters, proxy.ClusterSpec{Name: name, Enabled: true, MaxRunningQueries: caps[name], Engine: engines[name]})
		}
		clusters[2].MaxRunningQueries = capC
		return proxy.RuntimeSpec{
			Clusters: clusters,
			Groups: []proxy.GroupSpec{
				{Name: "etl", Members: []proxy.MemberSpec{{Cluster: "a"}, {Cluster: "b"}}, Strategy: proxy.LeastLoaded,
					MaxQueuedQueries: 4, CapacityWaitTimeout: 2 * time.Second},
				{Name: "bi", Members: []proxy.MemberSpec{{Cluster: "c", Weight: 2}, {Cluster: "b"}}, Strategy: proxy.Weighted,
					MaxQueuedQueries: 8, CapacityWaitTimeout: 5 * time.Second,
					Cache: proxy.CacheSpec{TTL: time.Second, MaxBytes: 1 << 16}},
			},
			Routers:  []proxy.Router{&proxy.ProtocolRouter{ByProtocol: map[string]string{query.ProtocolTrino: "bi"}}},
			Fallback: "etl",
		}
	}
	core := proxy.New(proxy.Options{Env: e, OnFinish: func(r *proxy.Record) { recs = append(recs, *r) }})
	started := 0
	s.Spawn(node, "driver", func() {
		ctx := node.Ctx()
		rt, err := proxy.NewRuntime(spec(3))
		if err != nil {
			s.Fail(err)
			return
		}
		core.Activate(rt)
		for i := 0; i < 300; i++ {
			gap := time.Duration(float64(100*time.Millisecond) * -math.Log(1-e.Rand().Float64())) // Poisson arrivals
			if e.Sleep(ctx, gap) != nil {
				return
			}
			if i == 150 {
				rt2, err := proxy.NewRuntime(spec(2)) // edit c: bi's cache entries stop serving
				if err != nil {
					s.Fail(err)
					return
				}
				core.Activate(rt2)
			}
			req := &query.Request{SQL: fmt.Sprintf("select %d", e.Rand().Int64N(5)), User: "u", Protocol: query.ProtocolPostgres}
			if e.Rand().Float64() < 0.5 {
				req.Protocol = query.ProtocolTrino
			}
			started++
			e.Go(ctx, "query", func(ctx context.Context) {
				rows, err := core.Execute(ctx, req)
				if err != nil {
					return
				}
				defer rows.Close()
				for {
					if _, err := rows.Next(ctx); err != nil { // io.EOF or the query's error
						return
					}
				}
			})
		}
	})
	if err := s.Run(5 * time.Minute); err != nil {
		t.Fatalf("seed %d: %v\n%s", seed, err, strings.Join(s.Logs(), "\n"))
	}
	if len(recs) != started || started != 300 {
		t.Fatalf("seed %d: %d queries started, %d records", seed, started, len(recs))
	}
	for _, name := range []string{"a", "b", "c"} {
		if st := engines[name].Stats(); st.Executing != 0 {
			t.Fatalf("engine %s still executing %d", name, st.Executing)
		}
	}
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "%s %s %s %s %s %d %d %v|", r.QueryID, r.Group, r.Cluster, r.Status, r.ErrorCode, r.QueueMs, r.ExecMs, r.CacheHit)
	}
	return s.TraceHash(), b.String(), recs
}

func TestCoreInSimulatorIsDeterministic(t *testing.T) {
	h1, d1, recs := simWorld(t, 11)
	h2, d2, _ := simWorld(t, 11)
	if h1 != h2 || d1 != d2 {
		t.Fatalf("same seed, different runs: %s vs %s", h1, h2)
	}
	_, d3, _ := simWorld(t, 12)
	if d3 == d1 {
		t.Fatal("different seeds gave identical runs")
	}
	count := map[string]int{}
	for _, r := range recs {
		key := string(r.Status)
		if r.ErrorCode != "" {
			key += ":" + r.ErrorCode
		}
		if r.CacheHit {
			key += ":cache"
		}
		count[key]++
	}
	t.Logf("seed 11 outcomes: %v", count)
	if count["succeeded"] == 0 || count["succeeded:cache"] == 0 || count["failed:"+query.CodeEngine] == 0 {
		t.Fatalf("workload too tame to mean anything: %v", count)
	}
}
