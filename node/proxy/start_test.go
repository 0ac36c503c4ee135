package proxy_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/simengine"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/sim"
)

// TestAStartingNodeHoldsQueriesForItsFirstConfig, in the simulator: a query that reaches a node
// before its first configuration is active (a restarted worker, 1-4 ms before its control plane
// answers) waits for it and runs; one that arrives after the start wait of a node still
// unconfigured is refused at once with the retryable 57P03; one sent during the start to a node
// that never gets a configuration is refused when the start wait ends, not before.
func TestAStartingNodeHoldsQueriesForItsFirstConfig(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 3})
	node := s.AddNode("w1", nil)
	e := node.Env()
	eng := simengine.New(e, "c", simengine.Params{Duration: simengine.Exponential{Mean: time.Millisecond, Max: 5 * time.Millisecond}, Rows: 1})
	spec := proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "c", Enabled: true, MaxRunningQueries: 2, Engine: eng}},
		Groups:   []proxy.GroupSpec{{Name: "g", Members: []proxy.MemberSpec{{Cluster: "c"}}, MaxQueuedQueries: 4, CapacityWaitTimeout: time.Second}},
		Fallback: "g",
	}
	configured := proxy.New(proxy.Options{Env: e, StartWait: 2 * time.Second})
	never := proxy.New(proxy.Options{Env: e, StartWait: 2 * time.Second})
	run := func(ctx context.Context, core *proxy.Core) (time.Duration, error) {
		start := e.Now()
		rows, err := core.Execute(ctx, &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres})
		if err == nil {
			for _, err = rows.Next(ctx); err == nil; _, err = rows.Next(ctx) {
			}
			rows.Close()
			if errors.Is(err, io.EOF) {
				err = nil
			}
		}
		return e.Now().Sub(start), err
	}
	type outcome struct {
		took time.Duration
		err  error
	}
	var early, late, starved outcome
	s.Spawn(node, "driver", func() {
		ctx := node.Ctx()
		e.Go(ctx, "early", func(ctx context.Context) { early.took, early.err = run(ctx, configured) })
		e.Go(ctx, "starved", func(ctx context.Context) { starved.took, starved.err = run(ctx, never) })
		if e.Sleep(ctx, 3*time.Millisecond) != nil {
			return
		}
		rt, err := proxy.NewRuntime(spec)
		if err != nil {
			s.Fail(err)
			return
		}
		configured.Activate(rt)
		if e.Sleep(ctx, 3*time.Second) != nil {
			return
		}
		late.took, late.err = run(ctx, never)
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if early.err != nil || early.took < 3*time.Millisecond {
		t.Fatalf("a query sent 3 ms before the first configuration: %v after %v; want it run once the configuration is active", early.err, early.took)
	}
	var qe *query.Error
	if !errors.As(starved.err, &qe) || qe.Code != query.CodeNotConfigured || starved.took != 2*time.Second {
		t.Fatalf("a query on a node never configured: %v after %v; want 57P03 after the start wait (2s)", starved.err, starved.took)
	}
	if !errors.As(late.err, &qe) || qe.Code != query.CodeNotConfigured || late.took != 0 {
		t.Fatalf("a query after the start wait on a node still unconfigured: %v after %v; want 57P03 at once", late.err, late.took)
	}
}
