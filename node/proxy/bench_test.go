package proxy

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

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
	core := New(Options{Env: env.Real(slog.New(slog.DiscardHandler)), OnFinish: func(Record) {}})
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
	core := New(Options{Env: env.Real(slog.New(slog.DiscardHandler)), OnFinish: func(Record) {}})
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
// PostgreSQL wire's event loop runs it: the wire opened (route, local slot, engine connection)
// in the last one's memory under NoWait, its statement begun and finished (metrics, the record
// to OnFinish), the wire closed. Hot caches: the core's own instructions per transaction.
func BenchmarkWireTransaction(b *testing.B) {
	core := New(Options{Env: env.Real(slog.New(slog.DiscardHandler)), OnFinish: func(Record) {}})
	rt, err := NewRuntime(oneGroup(RoundRobin, 10, 0, cl("a", 100, &wireEngine{})))
	if err != nil {
		b.Fatal(err)
	}
	core.Activate(rt)
	req := &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres}
	ctx := NoWait(query.WithAffinity(context.Background(), 1))
	var last *Wire
	b.ReportAllocs()
	for b.Loop() {
		w, ok, err := core.OpenWireInto(ctx, req, 1, "", last)
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
}
