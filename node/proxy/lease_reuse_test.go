package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/enginetest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/simengine"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/sim"
)

// notReadyEngine hands out engine connections that relay nothing; under NoWait it answers
// ErrWouldWait while notReady is above zero, as pgengine does when the owner's connection is
// not ready (to reset, or to retag for another lease).
type notReadyEngine struct {
	*simengine.Engine
	notReady int
}

func (e *notReadyEngine) OpenPGWire(_ context.Context, o engine.PGWireOptions) (engine.PGWire, error) {
	if o.NoWait && e.notReady > 0 {
		e.notReady--
		return nil, engine.ErrWouldWait
	}
	return enginetest.NopWire{}, nil
}

// simWorker is a simulation of a control plane "cp" (leases in memory) and a worker's node
// "w1", closed when t ends.
func simWorker(t *testing.T) (*sim.Sim, *sim.Node) {
	s := sim.New(sim.Opts{Seed: 1})
	t.Cleanup(s.Close)
	store := capacity.NewMemory()
	s.AddNode("cp", func(n *sim.Node) http.Handler { return capacity.NewAPIHandler(store, store, n.Env(), nil) })
	return s, s.AddNode("w1", nil)
}

// workerCore is worker w1's core on node, with one cluster "a" of eng in group "g", its slots
// leases of the control plane "cp" (o's other options kept). Call it from a task of node.
func workerCore(node *sim.Node, eng query.Engine, o capacity.GuardOptions) *proxy.Core {
	o.Env, o.Holder, o.Client = node.Env(), "w1", capacity.NewRemote("http://cp", node.Client(), nil)
	guard, err := capacity.NewLeaseGuard(o)
	if err != nil {
		panic(err)
	}
	guard.Start(node.Ctx())
	core := proxy.New(proxy.Options{Env: node.Env(), Guard: guard})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "a", Enabled: true, MaxRunningQueries: 2, Engine: eng}},
		Groups:   []proxy.GroupSpec{{Name: "g", Members: []proxy.MemberSpec{{Cluster: "a"}}, MaxQueuedQueries: 4, CapacityWaitTimeout: time.Minute}},
		Fallback: "g",
	})
	if err != nil {
		panic(err)
	}
	core.Activate(rt)
	return core
}

// TestReusedLeasesCountTheStatementsTheyServed: a worker's statement that an event loop admits
// with an idle lease but cannot start (the engine connection is not ready) is handed to its
// goroutine, which takes the idle lease again and runs it. queryflux_capacity_lease_reused_total
// counts that statement once: bench-proxy read more reuses than passthrough statements
// (384,911 of 383,876) when the loop's give-back counted too.
func TestReusedLeasesCountTheStatementsTheyServed(t *testing.T) {
	s, node := simWorker(t)
	e := node.Env()
	metrics := capacity.NewMetrics(nil)
	eng := &notReadyEngine{Engine: simengine.New(e, "a", simengine.Params{})}
	var core *proxy.Core
	var wouldWait error
	statement := func(ctx context.Context) error {
		req := &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres}
		w, ok, err := core.OpenWire(ctx, req, 1, "")
		if err != nil || !ok {
			return err
		}
		r, ok, err := w.Session.(interface {
			BeginRelay(context.Context, *query.Request) (*proxy.Relay, bool, error)
		}).BeginRelay(ctx, req)
		if err != nil || !ok {
			panic(err)
		}
		if err := r.Finish(1, 1, nil); err != nil {
			panic(err)
		}
		return w.Session.Close()
	}
	s.Spawn(node, "driver", func() {
		core = workerCore(node, eng, capacity.GuardOptions{Metrics: metrics})
		ctx := node.Ctx()
		if err := statement(ctx); err != nil { // granted by the control plane; its lease goes idle
			panic(err)
		}
		eng.notReady = 1
		wouldWait = statement(proxy.NoWait(ctx)) // the loop: takes the idle lease, cannot start
		if err := statement(ctx); err != nil {   // its goroutine: the idle lease again
			panic(err)
		}
	})
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(wouldWait, engine.ErrWouldWait) {
		t.Fatalf("the loop's statement: %v, want ErrWouldWait", wouldWait)
	}
	reused := testutil.ToFloat64(metrics.LeaseReused.WithLabelValues("a"))
	if paths := core.Paths(); paths.Passthrough != 2 || reused != 1 {
		t.Fatalf("%d passthrough statements, %v counted as served by an idle lease: want 2 and 1 (the second)", paths.Passthrough, reused)
	}
}

// TestWireSessionReusedUnderASettledLease: a worker's client in transaction pool mode hands its
// last transaction's wire back (OpenWireInto). Its memory holds the next transaction when the
// last one's lease was released before it was lost (capacity.Settled: its lost-lease hook can
// no longer run), and never when the lease was lost while the wire was open: that hook ran, and
// a wire it reached is not made over.
func TestWireSessionReusedUnderASettledLease(t *testing.T) {
	s, node := simWorker(t)
	e := node.Env()
	eng := &notReadyEngine{Engine: simengine.New(e, "a", simengine.Params{})}
	req := &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres}
	var core *proxy.Core
	open := func(ctx context.Context, spare *proxy.Wire) *proxy.Wire {
		w, ok, err := core.OpenWireInto(ctx, req, 1, "", spare)
		if err != nil || !ok {
			panic(fmt.Sprintf("OpenWireInto: %v %v", ok, err))
		}
		return w
	}
	transaction := func(w *proxy.Wire) error {
		defer w.Session.Close()
		r, ok, err := w.Session.(interface {
			BeginRelay(context.Context, *query.Request) (*proxy.Relay, bool, error)
		}).BeginRelay(node.Ctx(), req)
		if err != nil || !ok {
			return fmt.Errorf("BeginRelay: %v %v", ok, err)
		}
		return r.Finish(1, 1, nil)
	}
	var reusedIdle, reusedLost bool
	var lostErr error
	s.Spawn(node, "driver", func() {
		core = workerCore(node, eng, capacity.GuardOptions{LeaseTTL: 6 * time.Second})
		ctx := query.WithAffinity(node.Ctx(), 1)
		first := open(ctx, nil) // granted by the control plane; its lease goes idle
		if err := transaction(first); err != nil {
			panic(err)
		}
		second := open(proxy.NoWait(ctx), first) // the idle lease, in the first's memory
		reusedIdle = second == first
		// The control plane goes silent while the wire is open: its lease is fenced, and the
		// lost-lease hook cancels the relayed statement.
		s.Net().PartitionBoth("w1", "cp")
		_ = e.Sleep(ctx, 10*time.Second)
		lostErr = transaction(second)
		s.Net().HealBoth("w1", "cp")
		third := open(ctx, second)
		reusedLost = third == second
		_ = transaction(third)
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if !reusedIdle {
		t.Error("a transaction under an idle lease released before it was lost was made in new memory")
	}
	if lostErr == nil {
		t.Error("the transaction whose lease was lost while its wire was open finished without an error")
	}
	if reusedLost {
		t.Error("a wire whose lease was lost while it was open was made over")
	}
}

// tagEngine hands out engine connections that relay nothing and notes the lease tag of each.
type tagEngine struct {
	*simengine.Engine
	tags []string
}

func (e *tagEngine) OpenPGWire(_ context.Context, o engine.PGWireOptions) (engine.PGWire, error) {
	e.tags = append(e.tags, o.Tag)
	return enginetest.NopWire{}, nil
}

// TestIdleTakeUnderNoWaitPrefersTheOwnersLease: an event loop's admission (NoWait) takes the
// idle lease its owner ran under last, named by OpenWireInto's owner though the context carries
// no affinity: its engine connection carries that lease's tag, and another's would be retagged.
func TestIdleTakeUnderNoWaitPrefersTheOwnersLease(t *testing.T) {
	s, node := simWorker(t)
	eng := &tagEngine{Engine: simengine.New(node.Env(), "a", simengine.Params{})}
	req := &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres}
	var got []string
	s.Spawn(node, "driver", func() {
		core := workerCore(node, eng, capacity.GuardOptions{})
		open := func(ctx context.Context, owner uint64) *proxy.Wire {
			w, ok, err := core.OpenWireInto(ctx, req, owner, "", nil)
			if err != nil || !ok {
				panic(fmt.Sprintf("OpenWireInto: %v %v", ok, err))
			}
			return w
		}
		one, two := open(node.Ctx(), 1), open(node.Ctx(), 2) // two leases of the control plane
		_ = one.Session.Close()
		_ = two.Session.Close() // the last idle: taken first by an owner without its own
		for _, owner := range []uint64{1, 2, 1} {
			w := open(proxy.NoWait(node.Ctx()), owner)
			_ = w.Session.Close()
		}
		got = eng.tags
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0] == got[1] || got[2] != got[0] || got[3] != got[1] || got[4] != got[0] {
		t.Errorf("lease tags of owners 1, 2, then 1, 2, 1 under NoWait: %q; want each owner's own lease again", got)
	}
}
