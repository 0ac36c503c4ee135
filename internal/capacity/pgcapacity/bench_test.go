package pgcapacity_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/env"
)

// benchHTTPRoundTrip measures acquire + release-batch of one lease through the capacity API on
// a real loopback net/http server, one call at a time, and reports the pair's p50 and p99.
func benchHTTPRoundTrip(b *testing.B, store capacity.CapacityStore, locks capacity.SweepCoordinator) {
	e := env.Real(nil)
	srv := httptest.NewServer(capacity.NewAPIHandler(store, locks, e, nil))
	defer srv.Close()
	client := capacity.NewRemote(srv.URL, srv.Client(), nil)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		l, err := client.Acquire(ctx, "bench", "w1", 10, time.Minute, start)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := client.ReleaseBatch(ctx, []capacity.LeaseRef{l.Ref()}); err != nil || n != 1 {
			b.Fatalf("release: %d %v", n, err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkHTTPAcquireReleaseMemory: goal p50 <= 150 µs.
func BenchmarkHTTPAcquireReleaseMemory(b *testing.B) {
	m := capacity.NewMemory()
	benchHTTPRoundTrip(b, m, m)
}

// BenchmarkHTTPAcquireReleasePostgres: goal p50 <= 1 ms.
func BenchmarkHTTPAcquireReleasePostgres(b *testing.B) {
	s, _ := newStore(b, 4)
	benchHTTPRoundTrip(b, s, s)
}

// BenchmarkPostgresPairsParallel: acquire + release pairs per second on the Postgres store
// from concurrent clients (goal >= 20,000/s on 2 cores), each client waiting for its release
// before its next acquire; one hot cluster or eight.
func BenchmarkPostgresPairsParallel(b *testing.B) {
	for _, bc := range []struct{ clients, clusters int }{{64, 1}, {64, 8}, {256, 1}, {256, 8}} {
		clusters := bc.clusters
		b.Run(fmt.Sprintf("clients=%d/clusters=%d", bc.clients, bc.clusters), func(b *testing.B) {
			s, _ := newStore(b, 8)
			ctx := context.Background()
			var next, denied atomic.Int64
			now := time.Now()
			b.SetParallelism(bc.clients / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c := fmt.Sprintf("c%d", next.Add(1)%int64(clusters))
					l, err := s.Acquire(ctx, c, "w", 1000, time.Minute, now)
					if errors.Is(err, capacity.ErrAtCapacity) {
						denied.Add(1)
						continue
					}
					if err != nil {
						b.Fatal(err)
					}
					if err := s.Release(ctx, l.Ref()); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairs/s")
			st := s.Stats()
			b.ReportMetric(float64(st.Ops)/float64(max(st.Batches, 1)), "ops/batch")
			b.ReportMetric(float64(st.BatchTotal.Microseconds())/float64(max(st.Batches, 1)), "µs/batch")
			if denied.Load() > 0 {
				b.Fatalf("%d denials at cap 1000", denied.Load())
			}
		})
	}
}
