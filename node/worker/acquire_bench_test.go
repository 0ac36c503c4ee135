package worker_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/worker"
)

// loopbackGuard starts a real control plane (memory lease store) on a loopback listener and a
// worker's capacity guard against it, over client; it returns the guard, started.
func loopbackGuard(b *testing.B, client *http.Client) *worker.CapacityGuard {
	b.Helper()
	e := env.Real(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	cp := controlplane.New(e, controlplane.Config{WorkerSecret: "s3cret", HeartbeatInterval: 10 * time.Second,
		StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second}, registry.NewMemory())
	if err := cp.Start(ctx); err != nil {
		b.Fatal(err)
	}
	leases := capacity.NewMemory()
	controlplane.MountCapacity(e, cp, controlplane.CapacityConfig{Store: leases, Locks: leases, Owner: "cp"})
	srv := httptest.NewServer(cp.Handler())
	b.Cleanup(srv.Close)
	w := worker.New(e, worker.Config{ControlPlaneURL: srv.URL, Secret: "s3cret", Name: "w1"}, client)
	g, err := worker.NewCapacityGuard(e, w, config.Coordination{Mode: config.CoordinationControlPlane,
		OnUnavailable: config.OnUnavailableFailClosed, OnLeaseLost: config.OnLeaseLostCancel, LeaseTTLSecs: 30, DriftMarginSecs: 2}, nil)
	if err != nil {
		b.Fatal(err)
	}
	w.Start(ctx)
	g.Start(ctx)
	return g
}

// BenchmarkLoopbackAcquire is the worker path's per-query cost: one lease acquire from a real
// control plane over loopback HTTP (the release goes out in the background), serially and
// from 8 concurrent queries, with Go's default transport (2 idle connections per host) and the
// worker's own (worker.NewControlPlaneClient).
func BenchmarkLoopbackAcquire(b *testing.B) {
	clients := map[string]func() *http.Client{
		"default-transport": func() *http.Client {
			return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		},
		"worker-client": func() *http.Client { return worker.NewControlPlaneClient(nil) },
	}
	for _, name := range []string{"default-transport", "worker-client"} {
		b.Run(name+"/serial", func(b *testing.B) {
			g := loopbackGuard(b, clients[name]()).Guard()
			ctx := context.Background()
			acquireRelease(b, ctx, g)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				acquireRelease(b, ctx, g)
			}
		})
		b.Run(name+"/8-concurrent", func(b *testing.B) {
			g := loopbackGuard(b, clients[name]()).Guard()
			ctx := context.Background()
			acquireRelease(b, ctx, g)
			b.ReportAllocs()
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					acquireRelease(b, ctx, g)
				}
			})
		})
	}
}

func acquireRelease(b *testing.B, ctx context.Context, g capacity.Guard) {
	s, err := g.Acquire(ctx, "c", 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	s.Release()
}

// BenchmarkLoopbackRoundTrip is the yardstick for BenchmarkLoopbackAcquire/*/serial: one bare
// keep-alive HTTP POST round trip over loopback to a handler that answers "{}".
func BenchmarkLoopbackRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	client := worker.NewControlPlaneClient(nil)
	body := []byte(`{"cluster":"c","cap":1048576,"ttlMillis":30000}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		resp, err := client.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
