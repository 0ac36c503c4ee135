package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/enginetest"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/worker"
)

// BenchmarkWireStatement is the proxy's own work for one relayed PostgreSQL statement in
// transaction pool mode, as pgwire's event loop drives it for pgbench -S: OpenWire under NoWait
// (and, when that would wait, again where waiting is fine: the goroutine's hand-off), the
// statement's BeginRelay and the AfterFunc that cancels it, Finish, and Close at the
// transaction's end; the engine is a stub, so no bytes move. The history is the real one of
// each role: a standalone node's uplink into its memory store, and a worker's uplink to a real
// control plane over loopback HTTP, whose leases the worker takes.
//
// Run it with -cpu 1: the uplink's sender, the keeper and the control plane's handlers then
// share the benchmark's one P, so ns/op is all the CPU one statement costs, not only the
// caller's part of it.
func BenchmarkWireStatement(b *testing.B) {
	b.Run("standalone", func(b *testing.B) {
		e := env.Real(slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		store := fullStore(b)
		u := history.NewUplink(e, history.UplinkConfig{Destination: "the history store"}, history.NewLocalSender(store))
		u.Start(ctx)
		runStatements(b, e, nil, u, store)
	})
	b.Run("worker", func(b *testing.B) {
		e := env.Real(slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		cp := controlplane.New(e, controlplane.Config{WorkerSecret: "s3cret", HeartbeatInterval: 10 * time.Second,
			StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second}, registry.NewMemory())
		if err := cp.Start(ctx); err != nil {
			b.Fatal(err)
		}
		leases := capacity.NewMemory()
		controlplane.MountCapacity(e, cp, controlplane.CapacityConfig{Store: leases, Locks: leases, Owner: "cp"})
		store := fullStore(b)
		cp.MountHistory(store)
		srv := httptest.NewServer(cp.Handler())
		b.Cleanup(srv.Close)
		w := worker.New(e, worker.Config{ControlPlaneURL: srv.URL, Secret: "s3cret", Name: "w1", Metrics: prometheus.NewRegistry()},
			worker.NewControlPlaneClient(nil))
		g, err := worker.NewCapacityGuard(e, w, config.Coordination{Mode: config.CoordinationControlPlane,
			OnUnavailable: config.OnUnavailableFailClosed, OnLeaseLost: config.OnLeaseLostCancel, LeaseTTLSecs: 30, DriftMarginSecs: 2}, nil)
		if err != nil {
			b.Fatal(err)
		}
		u, err := w.NewHistoryUplink(e, history.UplinkConfig{})
		if err != nil {
			b.Fatal(err)
		}
		w.Start(ctx)
		g.Start(ctx)
		u.Start(ctx)
		runStatements(b, e, g.Guard(), u, store)
	})
}

// fullStore is a memory history store of a daemon's size (assembly.HistoryMemoryRecordsMax)
// filled up, as a daemon's is after a few seconds of load: each insert then replaces the oldest.
func fullStore(b *testing.B) *history.Memory {
	const n = 100_000
	store := history.NewMemory(n)
	recs := make([]history.Record, n)
	start := time.Now()
	for i := range recs {
		recs[i] = history.Record{QueryID: "fill-" + strconv.Itoa(i), User: "u", Protocol: query.ProtocolPostgres,
			SQL: "select 1", Status: history.StatusSucceeded, StartedAt: start, EndedAt: start}
	}
	if _, err := store.Insert(context.Background(), recs); err != nil {
		b.Fatal(err)
	}
	return store
}

// runStatements builds a core on guard (nil: a standalone node's local guard) whose finished
// queries go to u, and relays b.N statements through it; store is where u's records land.
func runStatements(b *testing.B, e env.Env, guard proxy.Guard, u *history.Uplink, store history.Store) {
	core := proxy.New(proxy.Options{Env: e, Guard: guard, Registerer: prometheus.NewRegistry(),
		OnFinish: func(r *proxy.Record) { hr := worker.HistoryRecordOf(r); u.AddRecord(&hr) }})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "pg", Enabled: true, MaxRunningQueries: 16, Engine: stubWireEngine{}}},
		Groups: []proxy.GroupSpec{{Name: "pg", Members: []proxy.MemberSpec{{Cluster: "pg"}}, MaxQueuedQueries: 1000,
			CapacityWaitTimeout: 30 * time.Second, PoolMode: proxy.PoolModeTransaction}},
		Routers:  []proxy.Router{&proxy.ProtocolRouter{ByProtocol: map[string]string{query.ProtocolPostgres: "pg"}}},
		Fallback: "pg",
	})
	if err != nil {
		b.Fatal(err)
	}
	core.Activate(rt)
	ctx := context.Background()
	noWait := proxy.NoWait(ctx)
	headers := map[string]string{"application_name": "pgbench"}
	sqls := make([]string, 4096)
	for i := range sqls {
		sqls[i] = "SELECT abalance FROM pgbench_accounts WHERE aid = " + strconv.Itoa(1+i*7919%100_000) + ";"
	}
	request := func(sql string) *query.Request {
		return &query.Request{SQL: sql, User: "postgres", Protocol: query.ProtocolPostgres, Database: "qf_bench",
			Headers: headers, ClientAddr: "127.0.0.1:40000"}
	}
	statement := func(i int) {
		sql := sqls[i%len(sqls)]
		w, ok, err := core.OpenWire(noWait, request(sql), 1, "")
		if errors.Is(err, engine.ErrWouldWait) {
			w, ok, err = core.OpenWire(ctx, request(sql), 1, "")
		}
		if err != nil || !ok {
			b.Fatalf("OpenWire: ok %v, err %v", ok, err)
		}
		r, ok, err := w.Session.(relayer).BeginRelay(ctx, request(sql))
		if err != nil || !ok {
			b.Fatalf("BeginRelay: ok %v, err %v", ok, err)
		}
		conn := w.Conn // pgwire's cancel hook, made once per engine connection
		r.OnCancel(func() { conn.Cancel() })
		if err := r.Finish(1, 20, nil); err != nil {
			b.Fatal(err)
		}
		if err := w.Session.Close(); err != nil {
			b.Fatal(err)
		}
		// A daemon's statement ends in a socket wait, where the history sender gets its turn;
		// without one, on one P it would fall behind and drop records (which then cost nothing).
		runtime.Gosched()
		// Nor can it fall behind in a daemon, whose threads sleep in epoll between statements,
		// where Go's network poller runs. On one P that never sleeps the poller runs only when
		// the scheduler has nothing else, or sysmon's 10 ms poll: the uplink's HTTP answers
		// (worker) came late enough that 10,000 records piled up and the oldest were dropped.
		// So the statements wait (no CPU) while a full buffer's worth is pending.
		for u.Counters().Pending >= history.UplinkBufferMaxDefault/2 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	for i := range 1000 {
		statement(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := 0; b.Loop(); i++ {
		statement(i)
	}
	// Every statement reached the history: the uplink sends what it holds within its interval.
	// The CPU per statement counts the sending of the last ones too.
	want := int64(b.N + 1000)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c := u.Counters()
		if int64(c.Sent) == want {
			break
		}
		if c.Dropped > 0 || time.Now().After(deadline) {
			b.Fatalf("history: %+v of %d statements", c, want)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	page, err := store.Query(ctx, history.Filter{Limit: 1})
	if err != nil || len(page.Records) != 1 || page.Records[0].SQL != "select abalance from pgbench_accounts where aid = ?;" {
		b.Fatalf("history store: %+v, %v (want the last statement, its literal masked)", page, err)
	}
}

// cpuTime is the CPU time the process has used (user and system): on a machine shared with
// other work, wall time per op says more about the neighbours than about the code.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type relayer interface {
	BeginRelay(ctx context.Context, q *query.Request) (*proxy.Relay, bool, error)
}

// stubWireEngine hands out engine connections that relay nothing, at once: the benchmark
// measures the proxy's bookkeeping around the bytes.
type stubWireEngine struct{}

func (stubWireEngine) Execute(context.Context, *query.Request) (query.Rows, error) {
	return nil, errors.New("stubWireEngine: wire sessions only")
}
func (stubWireEngine) Ping(context.Context) error { return nil }
func (stubWireEngine) Close() error               { return nil }
func (stubWireEngine) OpenPGWire(context.Context, engine.PGWireOptions) (engine.PGWire, error) {
	return enginetest.NopWire{}, nil
}
