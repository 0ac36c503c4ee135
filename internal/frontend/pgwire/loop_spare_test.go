//go:build linux

package pgwire_test

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// spareRecorder is the core, recording whether each wire was offered the last one's memory.
type spareRecorder struct {
	*proxy.Core
	mu     sync.Mutex
	spares []bool
}

func (b *spareRecorder) OpenWireInto(ctx context.Context, q *query.Request, owner uint64, setup string, spare *proxy.Wire) (*proxy.Wire, bool, error) {
	b.mu.Lock()
	b.spares = append(b.spares, spare != nil)
	b.mu.Unlock()
	return b.Core.OpenWireInto(ctx, q, owner, setup, spare)
}

func (b *spareRecorder) last() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spares[len(b.spares)-1]
}

// lateCancelEngine is PostgreSQL whose wires' Cancel only counts: a query timeout's cancel
// that fires while its statement ends anyway, as one that comes late would.
type lateCancelEngine struct {
	*pgengine.Engine
	cancels atomic.Int64
}

type socketWire interface {
	engine.PGWire
	engine.PGWireSocket
}

type countedCancel struct {
	socketWire
	n *atomic.Int64
}

func (w countedCancel) Cancel() { w.n.Add(1) }

func (e *lateCancelEngine) OpenPGWire(ctx context.Context, o engine.PGWireOptions) (engine.PGWire, error) {
	o.Spare = nil // the engine's wires are wrapped: never its own
	w, err := e.Engine.OpenPGWire(ctx, o)
	if err != nil {
		return nil, err
	}
	return countedCancel{w.(socketWire), &e.cancels}, nil
}

// A transaction on the loop offers its wire's memory to the next one (proxy.Core.OpenWireInto's
// spare, whose engine connection's wire pgengine then reuses too), except a wire whose query
// timeout fired: its cancel may still reach the engine connection's wire, which must not be
// the next transaction's by then.
func TestLoopOffersTheLastWireUnlessItsCancelMayCome(t *testing.T) {
	pe, _ := pgEngine(t)
	e := &lateCancelEngine{Engine: pe}
	h := &frontendtest.Records{}
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry(), OnFinish: h.Add})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "pg", Enabled: true, MaxRunningQueries: 4, Engine: e}},
		Groups: []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "pg"}},
			MaxQueuedQueries: 100, QueryTimeout: 100 * time.Millisecond, PoolMode: proxy.PoolModeTransaction}},
		Fallback: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	b := &spareRecorder{Core: core}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := pgwire.NewServer(b, pgwire.Options{TrustUsers: []string{"*"}})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	c := connect(t, "postgres://alice@"+l.Addr().String()+"/bench?sslmode=disable&default_query_exec_mode=simple_protocol")
	ctx := context.Background()
	run := func(sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// afterAnEndedOne runs select 1 until one ends before its timeout (at load one may not), and
	// then one more: whether that one was offered the last wire's memory.
	afterAnEndedOne := func() bool {
		t.Helper()
		for range 20 {
			cancels := e.cancels.Load()
			run("select 1")
			if e.cancels.Load() == cancels {
				run("select 1")
				return b.last()
			}
		}
		t.Skip("no select 1 ended within its 100 ms timeout in 20 tries: the machine is too busy to tell")
		return false
	}
	before := srv.LoopStatements()
	run("select 1") // the session's first transaction: no wire before it
	if !afterAnEndedOne() {
		t.Fatal("a transaction on the loop after another was not offered the last wire's memory")
	}
	if srv.LoopStatements()-before < 2 {
		t.Fatalf("the loop relayed %d statements: nothing to check", srv.LoopStatements()-before)
	}
	// The timeout fires after 100 ms; the statement ends anyway, on the loop.
	run("select pg_sleep(0.4)")
	if e.cancels.Load() == 0 {
		t.Fatal("the query timeout never cancelled: nothing to check")
	}
	run("select 1")
	if b.last() {
		t.Fatal("the wire whose query timeout fired was offered to the next transaction")
	}
	if !afterAnEndedOne() {
		t.Fatal("the wire after it was not offered to the next transaction")
	}
}
