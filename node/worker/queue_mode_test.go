package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/internal/simengine"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/sim"
)

// capOneRun is what one contended run measured: queries finished by the clients, the most that
// ever executed on the engine at once, and the simulated time the clients ran.
type capOneRun struct {
	done, failed int
	maxExecuting int
	window       time.Duration
}

func (r capOneRun) perSecond() float64 { return float64(r.done) / r.window.Seconds() }

// runCapOne drives `clients` closed-loop clients through one worker's proxy core against a
// cluster of cap 1 (queries take 5 ms, links 1 ms ± 0.5 ms each way) for `window` of simulated
// time, with the control plane's queue in mode queue (config.QueueRetry or QueueOrdered).
func runCapOne(t testing.TB, queue string, seed uint64, clients int, window time.Duration) capOneRun {
	t.Helper()
	s := sim.New(sim.Opts{Seed: seed})
	defer s.Close()
	leases := capacity.NewMemory()
	s.AddNode("cp", func(n *sim.Node) http.Handler {
		cp := controlplane.New(n.Env(), controlplane.Config{WorkerSecret: "s3cret", HeartbeatInterval: 10 * time.Second,
			StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second}, registry.NewMemory())
		if err := cp.Start(n.Ctx()); err != nil {
			t.Errorf("control plane start: %v", err)
		}
		sw := controlplane.MountCapacity(n.Env(), cp, controlplane.CapacityConfig{Store: leases, Locks: leases, Owner: "cp",
			Ordered: queue == config.QueueOrdered})
		n.Env().Go(n.Ctx(), "capacity-sweeper", sw.Run)
		return cp.Handler()
	})
	coord := config.Coordination{Mode: config.CoordinationControlPlane, Queue: queue, OnUnavailable: config.OnUnavailableFailClosed,
		OnLeaseLost: config.OnLeaseLostCancel, LeaseTTLSecs: 30, DriftMarginSecs: 2}
	var run capOneRun
	var eng *simengine.Engine
	s.AddNode("w1", func(n *sim.Node) http.Handler {
		e := n.Env()
		w := worker.New(e, worker.Config{ControlPlaneURL: "http://cp", Secret: "s3cret", Name: n.Name()}, n.Client())
		g, err := worker.NewCapacityGuard(e, w, coord, nil)
		if err != nil {
			t.Errorf("guard: %v", err)
			return nil
		}
		w.Start(n.Ctx())
		g.Start(n.Ctx())
		eng = simengine.New(e, "c", simengine.Params{Duration: simengine.Constant{D: 5 * time.Millisecond}})
		core := proxy.New(proxy.Options{Env: e, Guard: g.Guard()})
		rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
			Clusters: []proxy.ClusterSpec{{Name: "c", Enabled: true, MaxRunningQueries: 1, Engine: eng}},
			Groups: []proxy.GroupSpec{{Name: "g", Members: []proxy.MemberSpec{{Cluster: "c"}},
				MaxQueuedQueries: 4 * clients, CapacityWaitTimeout: 30 * time.Second}},
			Fallback: "g",
		})
		if err != nil {
			t.Errorf("runtime: %v", err)
			return nil
		}
		core.Activate(rt)
		start := time.Second // registered by then
		for i := range clients {
			e.Go(n.Ctx(), fmt.Sprintf("client-%d", i), func(ctx context.Context) {
				if e.Sleep(ctx, start) != nil {
					return
				}
				end := e.Now().Add(window)
				for e.Now().Before(end) {
					if err := runOne(ctx, core); err != nil {
						run.failed++
						continue
					}
					run.done++
				}
			})
		}
		return w.OpsHandler()
	})
	if err := s.Run(time.Second + window + time.Second); err != nil {
		t.Fatal(err)
	}
	run.window = window
	run.maxExecuting = eng.Stats().MaxExecuting
	return run
}

func runOne(ctx context.Context, core *proxy.Core) error {
	rows, err := core.Execute(ctx, &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres})
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		if _, err := rows.Next(ctx); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestRetryQueueKeepsUpWithOrdered: cap 1, four clients through one worker. In retry mode a
// denied head must be woken when the worker's release lands at the control plane (not sleep a
// 500 ms poll), so throughput stays within a small factor of the ordered queue's; the cap holds
// in both modes.
func TestRetryQueueKeepsUpWithOrdered(t *testing.T) {
	const window = 5 * time.Second
	retry := runCapOne(t, config.QueueRetry, 3, 4, window)
	ordered := runCapOne(t, config.QueueOrdered, 3, 4, window)
	t.Logf("cap 1, 4 clients, 5 ms queries, %v: retry %.0f q/s (%d failed), ordered %.0f q/s (%d failed)",
		window, retry.perSecond(), retry.failed, ordered.perSecond(), ordered.failed)
	for name, r := range map[string]capOneRun{"retry": retry, "ordered": ordered} {
		if r.maxExecuting != 1 {
			t.Errorf("%s: %d queries executed at once on a cluster of cap 1", name, r.maxExecuting)
		}
		if r.failed != 0 {
			t.Errorf("%s: %d queries failed", name, r.failed)
		}
	}
	// A 500 ms poll gives ~2-10 q/s here; woken heads give well over 50.
	if retry.perSecond() < ordered.perSecond()/3 {
		t.Fatalf("retry mode %.1f q/s is starved next to ordered mode %.1f q/s", retry.perSecond(), ordered.perSecond())
	}
}

// BenchmarkCapOneQueueModes reports the simulated throughput (queries per simulated second) of
// cap 1 with four clients through one worker, for each coordination.queue mode.
func BenchmarkCapOneQueueModes(b *testing.B) {
	for _, queue := range []string{config.QueueRetry, config.QueueOrdered} {
		b.Run(queue, func(b *testing.B) {
			var total float64
			for i := 0; i < b.N; i++ {
				total += runCapOne(b, queue, uint64(i+1), 4, 5*time.Second).perSecond()
			}
			b.ReportMetric(total/float64(b.N), "sim-q/s")
		})
	}
}
