package pgcapacity_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
	"github.com/queryflux/queryflux/migrations/migratedtest"
	"github.com/queryflux/queryflux/node/env"
)

// newStore returns a Postgres store on a fresh, migrated database.
func newStore(t testing.TB, maxConns int32) (*pgcapacity.Store, *pgxpool.Pool) {
	t.Helper()
	return openStore(t, migratedtest.NewDatabase(t), maxConns)
}

// twoReplicas returns two stores (two control-plane replicas) on one fresh, migrated database,
// and the first one's pool.
func twoReplicas(t testing.TB) (a, b *pgcapacity.Store, pool *pgxpool.Pool) {
	t.Helper()
	url := migratedtest.NewDatabase(t)
	a, pool = openStore(t, url, 4)
	b, _ = openStore(t, url, 4)
	return a, b, pool
}

// openStore opens another store (another control-plane replica) on the database at url.
func openStore(t testing.TB, url string, maxConns int32) (*pgcapacity.Store, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pgcapacity.New(pool), pool
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestAcquireRenewReleaseBasics(t *testing.T) {
	s, _ := newStore(t, 4)
	s.UseCallerClock()
	ctx := context.Background()
	a, err := s.Acquire(ctx, "c1", "w1", 1, time.Second, t0)
	if err != nil || a.Generation != 1 || a.ID != "c1#1" || !a.ExpiresAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("first acquire: %+v, %v", a, err)
	}
	if _, err := s.Acquire(ctx, "c1", "w2", 1, time.Second, t0); !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("second acquire at cap 1: %v, want ErrAtCapacity", err)
	}
	if _, err := s.Renew(ctx, capacity.LeaseRef{ID: "c1#7", Generation: 7}, time.Second, t0); !errors.Is(err, capacity.ErrStaleGeneration) {
		t.Fatalf("renew with wrong generation: %v", err)
	}
	if err := s.Release(ctx, a.Ref()); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, a.Ref()); !errors.Is(err, capacity.ErrStaleGeneration) {
		t.Fatalf("double release: %v", err)
	}
	b, err := s.Acquire(ctx, "c1", "w2", 1, time.Second, t0)
	if err != nil || b.Generation != 2 {
		t.Fatalf("acquire after release: %+v %v (generation must grow)", b, err)
	}
	if _, err := s.Renew(ctx, b.Ref().As("w1"), time.Second, t0); !errors.Is(err, capacity.ErrNotHolder) {
		t.Fatalf("renew of w2's lease claimed by w1: %v, want ErrNotHolder", err)
	}
	if n, err := s.ReleaseBatch(ctx, []capacity.LeaseRef{b.Ref().As("w1")}); n != 0 || !errors.Is(err, capacity.ErrNotHolder) {
		t.Fatalf("release of w2's lease claimed by w1: %d %v, want 0 and ErrNotHolder", n, err)
	}
	swept, err := s.Revoke(ctx, capacity.Selection{Expired: true}, t0.Add(time.Second))
	if err != nil || len(swept) != 1 || swept[0].ID != b.ID || !swept[0].Revoked {
		t.Fatalf("sweep: %+v %v", swept, err)
	}
	if _, err := s.Renew(ctx, b.Ref().As("w2"), time.Second, t0); !errors.Is(err, capacity.ErrStaleGeneration) {
		t.Fatalf("renew of a revoked lease: %v, want ErrStaleGeneration", err)
	}
	if _, err := s.AcquireSweepLock(ctx, "sweep", "cp1", time.Second, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireSweepLock(ctx, "sweep", "cp2", time.Second, t0); !errors.Is(err, capacity.ErrLockHeld) {
		t.Fatalf("second owner: %v", err)
	}
}

// TestConcurrentAcquiresNeverExceedCap: 64 goroutines take 3,200 leases of one cluster with
// cap 10 through two stores (replicas), holding each briefly; an independent atomic counter of leases held never passes 10, and
// the store's own count agrees at the end.
func TestConcurrentAcquiresNeverExceedCap(t *testing.T) {
	const workers, limit, grantsEach = 64, 10, 50
	url := migratedtest.NewDatabase(t)
	// Two stores on one database: two control-plane replicas, each batching on its own.
	replicas := [2]*pgcapacity.Store{}
	var pool *pgxpool.Pool
	replicas[0], pool = openStore(t, url, 4)
	replicas[1], _ = openStore(t, url, 4)
	s := replicas[0]
	ctx := context.Background()
	var held, maxHeld, granted, denied atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := fmt.Sprintf("w%d", w)
			s := replicas[w%2]
			for grants := 0; grants < grantsEach; {
				l, err := s.Acquire(ctx, "hot", holder, limit, time.Minute, t0)
				if errors.Is(err, capacity.ErrAtCapacity) {
					denied.Add(1)
					time.Sleep(time.Duration(w%5) * 50 * time.Microsecond)
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				grants++
				granted.Add(1)
				n := held.Add(1)
				for m := maxHeld.Load(); n > m && !maxHeld.CompareAndSwap(m, n); m = maxHeld.Load() {
				}
				if n > limit {
					errs <- fmt.Errorf("%d leases held at once, cap %d", n, limit)
					return
				}
				time.Sleep(time.Duration(w%4) * 100 * time.Microsecond) // run the "query"
				held.Add(-1)                                            // before the release: the store may grant again once released
				if err := s.Release(ctx, l.Ref()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ls, err := s.List(ctx, "hot")
	if err != nil || len(ls) != 0 {
		t.Fatalf("leases left: %d, %v", len(ls), err)
	}
	var running, generation int64
	if err := pool.QueryRow(ctx, "SELECT running, generation FROM capacity_clusters WHERE cluster = 'hot'").Scan(&running, &generation); err != nil {
		t.Fatal(err)
	}
	if running != 0 || generation != granted.Load() {
		t.Fatalf("counter row: running %d, generation %d; want 0 and %d (one generation per grant)", running, generation, granted.Load())
	}
	t.Logf("granted %d, denied %d, max held %d", granted.Load(), denied.Load(), maxHeld.Load())
	if maxHeld.Load() < limit || denied.Load() == 0 {
		t.Fatalf("test did not contend: granted %d denied %d", granted.Load(), denied.Load())
	}
}

// TestConcurrentMixedOpsKeepCountersExact: acquires, renewals, releases, sweeps and evictions
// race on four clusters from two stores; no call fails (deadlocks would surface here) and at
// the end every counter row equals its cluster's lease rows.
func TestConcurrentMixedOpsKeepCountersExact(t *testing.T) {
	a, b, pool := twoReplicas(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	deadline := time.Now().Add(2 * time.Second)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*pgcapacity.Store{a, b}[w%2]
			var mine []capacity.Lease
			for i := 0; time.Now().Before(deadline); i++ {
				now := time.Now()
				cluster := fmt.Sprintf("c%d", (w+i)%4)
				switch {
				case w == 0 && i%20 == 0:
					swept, err := s.Revoke(ctx, capacity.Selection{Expired: true}, now)
					report(errs, err)
					_, err = s.ReleaseBatch(ctx, refsOf(swept))
					report(errs, err)
				case w == 1 && i%50 == 0:
					evicted, err := s.Revoke(ctx, capacity.Selection{Holder: fmt.Sprintf("w%d", (i/50)%16)}, now)
					report(errs, err)
					_, err = s.ReleaseBatch(ctx, refsOf(evicted))
					report(errs, err)
				case len(mine) > 0 && i%3 == 0:
					_, err := s.ReleaseBatch(ctx, []capacity.LeaseRef{mine[0].Ref()})
					report(errs, err)
					mine = mine[1:]
				case len(mine) > 0 && i%5 == 0:
					_, err := s.Renew(ctx, mine[0].Ref(), 50*time.Millisecond, now)
					if !errors.Is(err, capacity.ErrStaleGeneration) {
						report(errs, err)
					}
				default:
					l, err := s.Acquire(ctx, cluster, fmt.Sprintf("w%d", w), 3, 50*time.Millisecond, now)
					if err == nil {
						mine = append(mine, l)
					} else if !errors.Is(err, capacity.ErrAtCapacity) {
						report(errs, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT c.cluster, c.running, (SELECT count(*) FROM capacity_leases l WHERE l.cluster = c.cluster)
		FROM capacity_clusters c ORDER BY c.cluster`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var cluster string
		var running, leases int64
		if err := rows.Scan(&cluster, &running, &leases); err != nil {
			t.Fatal(err)
		}
		if running != leases || running > 3 {
			t.Fatalf("cluster %s: counter %d, lease rows %d, cap 3", cluster, running, leases)
		}
	}
}

func refsOf(ls []capacity.Lease) []capacity.LeaseRef {
	refs := make([]capacity.LeaseRef, len(ls))
	for i, l := range ls {
		refs[i] = l.Ref()
	}
	return refs
}

func report(errs chan<- error, err error) {
	if err != nil {
		select {
		case errs <- err:
		default:
		}
	}
}

// TestWaitingRecordIsSharedByReplicas: two stores on one database (two control-plane replicas)
// share the retry-mode waiting record, so a worker waiting at one replica gets the slot freed
// by a worker asking the other.
func TestWaitingRecordIsSharedByReplicas(t *testing.T) {
	a, b, _ := twoReplicas(t)
	capacitytest.FreedSlotGoesToWaiterAcrossReplicas(t, a.UseCallerClock(), b.UseCallerClock())
}

func TestWaitingRecordIsBounded(t *testing.T) {
	s, _ := newStore(t, 4)
	capacitytest.WaitingRecordIsBounded(t, s.UseCallerClock())
}

// TestStoreMeasuresEachCall: with WithMetrics every call is counted once in
// queryflux_capacity_store_seconds under its operation, with the time it took (a replay
// calibrates the simulator's lease store from these).
func TestStoreMeasuresEachCall(t *testing.T) {
	s, _ := newStore(t, 4)
	reg := prometheus.NewRegistry()
	s.WithMetrics(reg)
	ctx, now := context.Background(), time.Now()
	l, err := s.Acquire(ctx, "c1", "w1", 1, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "c1", "w2", 1, time.Minute, now); !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("second acquire of cap 1: %v, want at capacity", err)
	}
	if _, err := s.Renew(ctx, l.Ref(), time.Minute, now); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDenied(ctx, "c1", "w2", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Contention(ctx, "c1", "w2", now); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkGranted(ctx, "c1", "w2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReleaseBatch(ctx, []capacity.LeaseRef{l.Ref()}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetName() != "queryflux_capacity_store_seconds" {
		t.Fatalf("gathered %v, %v: want queryflux_capacity_store_seconds alone", families, err)
	}
	got := map[string]uint64{}
	for _, m := range families[0].GetMetric() {
		if m.GetHistogram().GetSampleSum() <= 0 {
			t.Errorf("%v: no time measured", m.GetLabel())
		}
		got[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
	}
	want := map[string]uint64{capacity.StoreAcquire: 2, capacity.StoreRenew: 1, capacity.StoreMarkDenied: 1,
		capacity.StoreContention: 1, capacity.StoreMarkGranted: 1, capacity.StoreRelease: 1}
	if !maps.Equal(got, want) {
		t.Fatalf("calls counted %v, want %v", got, want)
	}
}

// TestNamedAcquiresOnPostgres: the lease row keeps the name of the acquire it was granted to
// (migration 0014), so the control plane answers a retried acquire with that lease (renewed,
// no other slot taken) and frees it for a settled one; a name is its holder's only, and a
// batch of acquires keeps each one's name.
func TestNamedAcquiresOnPostgres(t *testing.T) {
	s, _ := newStore(t, 4)
	ctx := context.Background()
	l, err := s.AcquireNamed(ctx, "c", "w1", "n1", 3, time.Minute, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.Named(ctx, "c", "w1", "n1"); err != nil || !ok || got.ID != l.ID {
		t.Fatalf("named lease: %+v %v %v, want %s", got, ok, err, l.ID)
	}
	for _, c := range [][3]string{{"c", "w2", "n1"}, {"c", "w1", "n2"}, {"d", "w1", "n1"}} {
		if got, ok, err := s.Named(ctx, c[0], c[1], c[2]); err != nil || ok {
			t.Fatalf("named lease of %v: %+v %v %v, want none", c, got, ok, err)
		}
	}
	if _, err := s.AcquireNamed(ctx, "c", "w1", "not a name", 3, time.Minute, time.Time{}); !errors.Is(err, capacity.ErrInvalid) {
		t.Fatalf("a name with spaces: %v, want ErrInvalid", err)
	}

	srv := httptest.NewServer(capacity.NewAPIHandler(s, s, env.Real(nil), nil))
	defer srv.Close()
	r := capacity.NewRemote(srv.URL, srv.Client(), nil)
	first, _, err := r.AcquireContendedNamed(ctx, "c", "w3", 3, time.Minute, time.Time{}, nil, capacity.Naming{Request: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := r.AcquireContendedNamed(ctx, "c", "w3", 3, time.Minute, time.Time{}, nil, capacity.Naming{Request: "a1", Retry: true})
	if err != nil || again.ID != first.ID {
		t.Fatalf("retried acquire: %+v %v, want %s", again, err, first.ID)
	}
	if ls, _ := s.List(ctx, "c"); len(ls) != 2 {
		t.Fatalf("leases after a retry: %+v, want 2 (w1's and w3's)", ls)
	}
	if err := r.Settle(ctx, "c", "w3", "a1"); err != nil {
		t.Fatal(err)
	}
	if ls, _ := s.List(ctx, "c"); len(ls) != 1 || ls[0].ID != l.ID {
		t.Fatalf("leases after the settle: %+v, want w1's only", ls)
	}

	// Concurrent acquires share one batch: each keeps its own name.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.AcquireNamed(ctx, "b", fmt.Sprintf("h%d", i), fmt.Sprintf("r%d", i), 8, time.Minute, time.Time{})
		}()
	}
	wg.Wait()
	for i := range 8 {
		if _, ok, err := s.Named(ctx, "b", fmt.Sprintf("h%d", i), fmt.Sprintf("r%d", i)); err != nil || !ok {
			t.Fatalf("acquire %d of a batch: named %v %v", i, ok, err)
		}
	}
}
