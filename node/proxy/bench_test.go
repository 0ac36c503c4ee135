package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
)

// instantEngine returns an empty result at once: what is left is the core's own overhead.
type instantEngine struct{}

func (instantEngine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	return &emptyRows{}, nil
}
func (instantEngine) Ping(context.Context) error { return nil }
func (instantEngine) Close() error               { return nil }

type emptyRows struct{}

func (*emptyRows) Schema() *arrow.Schema                           { return fakeSchema }
func (*emptyRows) Next(context.Context) (arrow.RecordBatch, error) { return nil, io.EOF }
func (*emptyRows) Tag() string                                     { return "SELECT 0" }
func (*emptyRows) Close() error                                    { return nil }

// BenchmarkCoreOverhead: route (three routers, then fallback) + slot + run on an instant engine
// + stream end + record.
func BenchmarkCoreOverhead(b *testing.B) {
	core := New(Options{Env: env.Real(slog.New(slog.DiscardHandler)), OnFinish: func(*Record) {}})
	spec := oneGroup(RoundRobin, 10, 0, cl("a", 100, instantEngine{}), cl("b", 100, instantEngine{}))
	spec.Routers = []Router{
		&ProtocolRouter{ByProtocol: map[string]string{query.ProtocolTrino: "g"}},
		&HeaderRouter{Header: "X-Source", ByValue: map[string]string{"etl": "g"}},
		&TagsRouter{Rules: []TagRule{{Tags: []string{"vip"}, Group: "g"}}},
	}
	rt, err := NewRuntime(spec)
	if err != nil {
		b.Fatal(err)
	}
	core.Activate(rt)
	req := &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows, err := core.Execute(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rows.Next(ctx); err != io.EOF {
			b.Fatal(err)
		}
		_ = rows.Close()
	}
}

// BenchmarkCacheHit: route + cache lookup + Arrow IPC decode of a 100-row result + record.
func BenchmarkCacheHit(b *testing.B) {
	core := New(Options{Env: env.Real(slog.New(slog.DiscardHandler)), OnFinish: func(*Record) {}})
	spec := oneGroup(RoundRobin, 10, 0, cl("a", 100, &fakeEngine{rows: 100}))
	spec.Groups[0].Cache = CacheSpec{TTL: time.Hour}
	rt, err := NewRuntime(spec)
	if err != nil {
		b.Fatal(err)
	}
	core.Activate(rt)
	req := &query.Request{SQL: "select v from t", User: "u", Protocol: query.ProtocolPostgres}
	ctx := context.Background()
	drain := func() {
		rows, err := core.Execute(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := rows.Next(ctx); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		_ = rows.Close()
	}
	drain() // fill
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		drain()
	}
}

// BenchmarkWireTransaction: a one-statement transaction in transaction pool mode, as the
// PostgreSQL wire's event loop runs it: the wire opened (route, slot, engine connection) in the
// last one's memory under NoWait, its statement begun and finished (metrics, the record to
// OnFinish), the wire closed. Hot caches: the core's own instructions per transaction. local is
// a standalone daemon's slot (a local count); leased is a worker's (a capacity lease kept idle
// between transactions, as while the worker has its cluster to itself): the worker's share.
func BenchmarkWireTransaction(b *testing.B) {
	b.Run("local", func(b *testing.B) { wireTransactions(b, nil) })
	// A client routed by its session's header (a header router and a tags router before the
	// fallback), as a pgbench whose application_name names its group.
	b.Run("local-header", func(b *testing.B) {
		wireTransactions(b, nil, &TagsRouter{Rules: []TagRule{{Tags: []string{"batch"}, Group: "g"}}},
			&HeaderRouter{Header: "application_name", ByValue: map[string]string{"pgbench": "g"}})
	})
	b.Run("leased", func(b *testing.B) {
		e := env.Real(slog.New(slog.DiscardHandler))
		g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: e, Client: uncontended{capacity.NewMemory()}, Holder: "w"})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g.Start(ctx)
		wireTransactions(b, g)
	})
}

func wireTransactions(b *testing.B, guard capacity.Guard, routers ...Router) {
	core := New(Options{Env: env.Real(slog.New(slog.DiscardHandler)), OnFinish: func(*Record) {}, Guard: guard})
	spec := oneGroup(RoundRobin, 10, 0, cl("a", 100, &wireEngine{}))
	spec.Routers = routers
	rt, err := NewRuntime(spec)
	if err != nil {
		b.Fatal(err)
	}
	core.Activate(rt)
	req := &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres,
		Headers: map[string]string{"application_name": "pgbench", "client_encoding": "UTF8"}}
	ctx := NoWait(query.WithAffinity(context.Background(), 1))
	var last *Wire
	transaction := func(ctx context.Context) {
		w, ok, err := core.OpenWireInto(ctx, req, 1, "", last)
		if errors.Is(err, engine.ErrWouldWait) {
			// As the event loop does: asked again where it may wait (a leased slot's lease
			// went past its reuse, and is asked of its client again).
			w, ok, err = core.OpenWire(query.WithAffinity(context.Background(), 1), req, 1, "")
		}
		if err != nil || !ok {
			b.Fatalf("OpenWireInto: %v %v", ok, err)
		}
		r, ok, err := w.Session.(relayer).BeginRelay(ctx, req)
		if err != nil || !ok {
			b.Fatalf("BeginRelay: %v %v", ok, err)
		}
		if err := r.Finish(1, 10, nil); err != nil {
			b.Fatal(err)
		}
		_ = w.Session.Close()
		last = w
	}
	b.ReportAllocs()
	for b.Loop() {
		transaction(ctx)
	}
}

// uncontended is a lease client that always says nobody else wants the cluster, at an acquire
// and to a contention watch (a worker's control plane answers one), so a LeaseGuard over it
// keeps its leases idle between acquires.
type uncontended struct{ *capacity.Memory }

func (s uncontended) AcquireContended(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []capacity.LeaseRef) (capacity.Lease, bool, error) {
	if _, err := s.ReleaseBatch(ctx, release); err != nil {
		return capacity.Lease{}, true, err
	}
	l, err := s.Acquire(ctx, cluster, holder, limit, ttl, now)
	return l, false, err
}

func (uncontended) WatchContention(ctx context.Context, _ string, clusters []string, wait time.Duration) ([]string, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(wait):
		return clusters, nil
	}
}
