package pgcapacity_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
	"github.com/queryflux/queryflux/node/env"
)

// countingStore counts the reads of the waiting record (Contention) of one replica's store.
type countingStore struct {
	*pgcapacity.Store
	reads atomic.Int64
}

func (s *countingStore) Contention(ctx context.Context, cluster, holder string, now time.Time) (capacity.Contention, error) {
	s.reads.Add(1)
	return s.Store.Contention(ctx, cluster, holder, now)
}

// listeningStore reports each time its denial watch is in place.
type listeningStore struct {
	*countingStore
	listening chan struct{}
}

func (s *listeningStore) WatchDenied(ctx context.Context, listening func(), denied func(string)) error {
	return s.countingStore.WatchDenied(ctx, func() {
		listening()
		s.listening <- struct{}{}
	}, denied)
}

// replicaPair is two control-plane replicas (retry mode) on one lease table: A counts its
// reads of the waiting record and, when listening, hears B's denials through LISTEN/NOTIFY.
type replicaPair struct {
	a, b      *capacity.Remote
	storeA    *countingStore
	listening chan struct{} // a value each time A's denial watch is in place
	pool      *pgxpool.Pool
}

func newReplicaPair(t testing.TB, listen bool) *replicaPair {
	storeA, storeB, pool := twoReplicas(t)
	p := &replicaPair{storeA: &countingStore{Store: storeA}, listening: make(chan struct{}, 16), pool: pool}
	e := env.Real(nil)
	apiA := capacity.NewAPI(p.storeA, storeA, e, nil)
	if listen {
		storeA.NotifyDenied()
		storeB.NotifyDenied()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); apiA.WatchDenied(ctx, &listeningStore{p.storeA, p.listening}) }()
		t.Cleanup(func() { cancel(); <-done })
		select {
		case <-p.listening:
		case <-time.After(10 * time.Second):
			t.Fatal("A's denial watch never listened")
		}
	}
	p.a = serve(t, apiA)
	p.b = serve(t, capacity.NewAPI(storeB, storeB, e, nil))
	return p
}

// watchAnswer is a watch's answer and how long it took.
type watchAnswer struct {
	uncontended []string
	err         error
	after       time.Duration
}

// watch holds a watch of c for holder at A, asked to wait wait, and reports its answer.
func (p *replicaPair) watch(holder string, wait time.Duration) <-chan watchAnswer {
	answered := make(chan watchAnswer, 1)
	start := time.Now()
	go func() {
		unc, err := p.a.WatchContention(context.Background(), holder, []string{"c"}, wait)
		answered <- watchAnswer{unc, err, time.Since(start)}
	}()
	return answered
}

// keepAsking asks B for c as holder every RetryAskEvery, as a denied worker's core does (which
// keeps its denial in the record: it is forgotten ContendedFor after the last), until stop.
func (p *replicaPair) keepAsking(holder string) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(capacity.RetryAskEvery):
				_, _ = p.b.Acquire(context.Background(), "c", holder, 1, time.Minute, time.Now())
			}
		}
	}()
	return func() { close(done); <-finished }
}

// TestWatchHearsADenialAtAnotherReplica: two control-plane replicas (retry mode) on one lease
// table. Worker w1 holds cluster c's only slot and watches it at replica A; worker w2 is denied
// c at replica B, and asks again every 50 ms as a denied worker does (a denial is forgotten a
// second after the last: one that A's rereads miss, as at load, would pass). A's watch, asked
// to wait 20 s, answers c contended: B's denial reached it
// through the shared store, whether A hears B's denials (LISTEN/NOTIFY: at once) or not (its
// rereads of the waiting record, every 50 ms), and also when A's listener's connection was
// terminated just before (the rereads cover for it until it listens again).
func TestWatchHearsADenialAtAnotherReplica(t *testing.T) {
	for _, tc := range []struct {
		name         string
		listen, kill bool
	}{{"rereading", false, false}, {"listening", true, false}, {"listener terminated", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newReplicaPair(t, tc.listen)
			ctx := context.Background()
			if _, err := p.a.Acquire(ctx, "c", "w1", 1, time.Minute, time.Now()); err != nil {
				t.Fatal(err)
			}
			answered := p.watch("w1", 20*time.Second)
			time.Sleep(300 * time.Millisecond) // the watch is held at A
			if tc.kill {
				var n int
				if err := p.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
					WHERE datname = current_database() AND query = 'LISTEN `+pgcapacity.DeniedChannel+`'`).Scan(&n); err != nil || n != 1 {
					t.Fatalf("terminating A's listener: %d terminated, %v", n, err)
				}
			}
			denied := time.Now()
			if _, err := p.b.Acquire(ctx, "c", "w2", 1, time.Minute, time.Now()); !errors.Is(err, capacity.ErrAtCapacity) {
				t.Fatalf("w2's acquire at B: %v, want denied", err)
			}
			stop := p.keepAsking("w2")
			defer stop()
			select {
			case r := <-answered:
				t.Logf("answered %v after %v, %v after the denial at B", r.uncontended, r.after, time.Since(denied))
				if r.err != nil || slices.Contains(r.uncontended, "c") || r.after < 300*time.Millisecond {
					t.Fatalf("watch at A: uncontended %v, err %v after %v: want c contended, after the denial", r.uncontended, r.err, r.after)
				}
				if r.after >= capacity.WatchWaitMax/2 {
					t.Fatalf("watch at A answered after %v: at its wait's end (%v), not when it heard of the denial", r.after, capacity.WatchWaitMax)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the watch at A did not hear of the denial at B within 10 s")
			}
			if tc.kill {
				select {
				case <-p.listening:
				case <-time.After(10 * time.Second):
					t.Fatal("A's denial watch did not listen again after its connection was terminated")
				}
			}
		})
	}
}

// TestHeldWatchReadsTheRecordOnlyWhenWoken: a watch of an uncontended cluster held for its
// whole wait (1 s) at a replica that hears the other replicas' denials reads the waiting record
// when it comes and not again (it answers with that read); at one that does not, it rereads it
// every 50 ms. Both answer c uncontended.
func TestHeldWatchReadsTheRecordOnlyWhenWoken(t *testing.T) {
	for _, listen := range []bool{true, false} {
		p := newReplicaPair(t, listen)
		if _, err := p.a.Acquire(context.Background(), "c", "w1", 1, time.Minute, time.Now()); err != nil {
			t.Fatal(err)
		}
		before := p.storeA.reads.Load()
		r := <-p.watch("w1", time.Second)
		reads := p.storeA.reads.Load() - before
		t.Logf("listening %v: answered %v after %v, %d reads of the waiting record", listen, r.uncontended, r.after, reads)
		if r.err != nil || !slices.Equal(r.uncontended, []string{"c"}) {
			t.Fatalf("listening %v: uncontended %v, err %v; want c uncontended", listen, r.uncontended, r.err)
		}
		if listen && reads != 1 {
			t.Errorf("listening: %d reads of the waiting record in a watch nothing woke, want 1", reads)
		}
		if !listen && reads < 5 {
			t.Errorf("not listening: %d reads of the waiting record in 1 s, want its rereads every 50 ms", reads)
		}
	}
}

// BenchmarkHeldWatchReads: the reads of the waiting record a replica makes for the contention
// watches held at it, per second, with 8 workers each reusing a lease of a cluster of its own
// and holding a watch of it (1 s each, one after the other) and nobody denied: rereading (no
// denial watch: every 50 ms) or listening (the other replicas' denials through LISTEN/NOTIFY).
// One op is one second of 8 watches. Beside the store's own count, waiter-scans/s is what
// PostgreSQL counted (pg_stat_user_tables: scans of capacity_waiters, which every read makes);
// a backend reports its counts once idle, so each is read after 11 s without calls.
func BenchmarkHeldWatchReads(b *testing.B) {
	for _, listen := range []bool{false, true} {
		b.Run(map[bool]string{false: "rereading", true: "listening"}[listen], func(b *testing.B) {
			p := newReplicaPair(b, listen)
			const workers = 8
			for i := range workers {
				if _, err := p.a.Acquire(context.Background(), fmt.Sprint("c", i), fmt.Sprint("w", i), 1, time.Hour, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
			scans := func() int64 {
				time.Sleep(11 * time.Second) // the pool's backends report their counts
				var n int64
				if err := p.pool.QueryRow(context.Background(), `SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0)
					FROM pg_stat_user_tables WHERE relname = 'capacity_waiters'`).Scan(&n); err != nil {
					b.Fatal(err)
				}
				return n
			}
			scansBefore := scans()
			b.ResetTimer()
			start, before := time.Now(), p.storeA.reads.Load()
			for range b.N {
				var wg sync.WaitGroup
				for i := range workers {
					wg.Go(func() {
						if _, err := p.a.WatchContention(context.Background(), fmt.Sprint("w", i), []string{fmt.Sprint("c", i)}, time.Second); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			took, reads := time.Since(start).Seconds(), p.storeA.reads.Load()-before
			b.StopTimer()
			b.ReportMetric(float64(reads)/took, "reads/s")
			b.ReportMetric(float64(scans()-scansBefore)/took, "waiter-scans/s")
		})
	}
}
