package pgregistry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/migrations/migratedtest"
	"github.com/queryflux/queryflux/node/workerapi"
	"pgregory.net/rapid"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	url := migratedtest.NewDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestPutGetRoundTrip(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)
	rec := registry.Record{Name: "w1", Version: "1.2", Labels: map[string]string{"zone": "eu"}, Frontends: []string{"postgres"},
		Endpoints: map[string]string{"trino": "https://w1:8443"}, TokenHash: workerapi.TokenHash("t"), RegisteredAt: at, State: workerapi.StateStale, StateSince: at, LastSeen: at,
		LastHeartbeat: at.Add(time.Second),
		Heartbeat: &workerapi.Heartbeat{Seq: 4, SentAt: at, History: workerapi.HistoryCounters{Sent: 9},
			Health: workerapi.HealthStatus{State: workerapi.HealthHealthy}}}
	if err := s.Put(ctx, []registry.Record{rec}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if want := registry.Normalize(rec); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if _, err := s.Get(ctx, "nobody"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

// TestMatchesMemoryModel runs random operation sequences against Postgres and the in-memory
// store and requires identical answers, so the simulator's store means what Postgres means.
func TestMatchesMemoryModel(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"a", "b", "B", "w-1", "w.2"}
	genRecord := rapid.Custom(func(t *rapid.T) registry.Record {
		r := registry.Record{
			Name:       rapid.SampledFrom(names).Draw(t, "name"),
			Version:    rapid.StringMatching(`[0-9.]{0,5}`).Draw(t, "version"),
			State:      rapid.SampledFrom([]string{workerapi.StateHealthy, workerapi.StateStale, workerapi.StateEvicted}).Draw(t, "state"),
			TokenHash:  rapid.SampledFrom([]string{"", workerapi.TokenHash("x")}).Draw(t, "token"),
			LastSeen:   base.Add(time.Duration(rapid.Int64Range(0, 1e12).Draw(t, "seen"))),
			StateSince: base.Add(time.Duration(rapid.Int64Range(-1, 1e12).Draw(t, "since"))),
		}
		if rapid.Bool().Draw(t, "labels") {
			r.Labels = map[string]string{"zone": rapid.StringMatching(`[a-z]{0,3}`).Draw(t, "zone")}
		}
		if rapid.Bool().Draw(t, "endpoints") {
			r.Endpoints = map[string]string{"trino": "http://" + rapid.StringMatching(`[a-z]{1,3}`).Draw(t, "host")}
		}
		if rapid.Bool().Draw(t, "hb") {
			r.Heartbeat = &workerapi.Heartbeat{Seq: rapid.Uint64Range(1, 99).Draw(t, "seq"), SentAt: r.LastSeen,
				Health: workerapi.HealthStatus{State: workerapi.HealthHealthy}}
		}
		return r
	})
	round := 0
	rapid.Check(t, func(rt *rapid.T) {
		round++
		if _, err := s.pool.Exec(ctx, "TRUNCATE worker_registry"); err != nil {
			rt.Fatal(err)
		}
		model := registry.NewMemory()
		steps := rapid.IntRange(1, 12).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			switch op := rapid.IntRange(0, 3).Draw(rt, "op"); op {
			case 0:
				batch := rapid.SliceOfN(genRecord, 0, 4).Draw(rt, "batch")
				same(rt, "put", s.Put(ctx, batch), model.Put(ctx, batch))
			case 1:
				name := rapid.SampledFrom(names).Draw(rt, "get")
				g1, e1 := s.Get(ctx, name)
				g2, e2 := model.Get(ctx, name)
				same(rt, "get err", e1, e2)
				if !reflect.DeepEqual(g1, g2) {
					rt.Fatalf("get %s:\npg  %+v\nmem %+v", name, g1, g2)
				}
			case 2:
				l1, e1 := s.List(ctx)
				l2, e2 := model.List(ctx)
				same(rt, "list err", e1, e2)
				if !reflect.DeepEqual(l1, l2) {
					rt.Fatalf("list:\npg  %+v\nmem %+v", l1, l2)
				}
			case 3:
				name := rapid.SampledFrom(names).Draw(rt, "delete")
				same(rt, "delete", s.Delete(ctx, name), model.Delete(ctx, name))
			}
		}
	})
}

func same(t *rapid.T, what string, a, b error) {
	if fmt.Sprint(a == nil) != fmt.Sprint(b == nil) || (a != nil && !errors.Is(a, registry.ErrNotFound) != !errors.Is(b, registry.ErrNotFound)) {
		t.Fatalf("%s: pg %v, memory %v", what, a, b)
	}
}

// BenchmarkPut1000 measures one reaper batch of 1000 heartbeat records to Postgres.
func BenchmarkPut1000(b *testing.B) {
	url := migratedtest.NewDatabase(b)
	ctx := context.Background()
	s, err := Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]registry.Record, 1000)
	for i := range batch {
		batch[i] = registry.Record{Name: fmt.Sprintf("w%04d", i), State: workerapi.StateHealthy, LastSeen: at,
			Labels: map[string]string{"zone": "eu"}, Heartbeat: &workerapi.Heartbeat{Seq: 1, SentAt: at,
				Health: workerapi.HealthStatus{State: workerapi.HealthHealthy}}}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Put(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}
