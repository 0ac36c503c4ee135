package pgcapacity_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
	"github.com/queryflux/queryflux/node/env"
)

// watch runs s.WatchFreed until the test ends, sending each notice's clusters to the channel,
// and returns once its LISTEN is in place.
func watch(t *testing.T, s *pgcapacity.Store, pool *pgxpool.Pool) <-chan []string {
	t.Helper()
	got := make(chan []string, 16)
	listen(t, pool, func(ctx context.Context) { _ = s.WatchFreed(ctx, func(clusters []string) { got <- clusters }) })
	return got
}

// listen runs watch until the test ends and returns once one more session of pool's database
// LISTENs on FreedChannel than before it started: its LISTEN is in place, so no notice sent
// from now on is missed.
func listen(tb testing.TB, pool *pgxpool.Pool, watch func(ctx context.Context)) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	before := listeners(tb, pool)
	go watch(ctx)
	for deadline := time.Now().Add(10 * time.Second); listeners(tb, pool) == before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatal("the watch's LISTEN never showed in pg_stat_activity")
		}
	}
}

// listeners counts the sessions of pool's database whose last statement was the LISTEN.
func listeners(tb testing.TB, pool *pgxpool.Pool) int {
	tb.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN `+pgcapacity.FreedChannel+`'`).Scan(&n)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// orderedReplicas are two control-plane replicas in ordered mode on one lease table, each
// serving the capacity API over HTTP; storeA is A's store. With notices, every release through
// either is announced and B watches A's announcements (its LISTEN in place on return); without,
// B finds a slot A freed at its waiting head's next look at the store. pollB is how often that
// is (0: the default).
func orderedReplicas(tb testing.TB, notices bool, pollB time.Duration) (a, b *capacity.Remote, storeA *pgcapacity.Store) {
	tb.Helper()
	storeA, storeB, pool := twoReplicas(tb)
	e := env.Real(nil)
	apiA := capacity.NewAPI(storeA, storeA, e, nil).Ordered()
	apiB := capacity.NewAPI(storeB, storeB, e, nil).Ordered()
	if pollB > 0 {
		apiB.PollEvery(pollB)
	}
	if notices {
		storeA.NotifyFreed()
		storeB.NotifyFreed()
		listen(tb, pool, func(ctx context.Context) { apiB.WatchFreed(ctx, storeB) })
	}
	return serve(tb, apiA), serve(tb, apiB), storeA
}

func next(t *testing.T, ch <-chan []string, who string) []string {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("%s heard of no freed lease", who)
		return nil
	}
}

// TestFreedLeasesAreAnnouncedToTheOtherReplicas: with NotifyFreed, a release through one store
// reaches the other stores' watches with its cluster, never the releasing store's own; a store
// without NotifyFreed announces nothing. Each watch's first notice shows it: notices arrive in
// commit order.
func TestFreedLeasesAreAnnouncedToTheOtherReplicas(t *testing.T) {
	a, b, pool := twoReplicas(t)
	silent, _ := openStore(t, pool.Config().ConnString(), 4)
	a.NotifyFreed()
	b.NotifyFreed()
	heardByA, heardByB := watch(t, a, pool), watch(t, b, pool)
	ctx := context.Background()
	release := func(s *pgcapacity.Store, cluster string) {
		t.Helper()
		l, err := s.Acquire(ctx, cluster, "w1", 1, time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.ReleaseBatch(ctx, []capacity.LeaseRef{l.Ref()}); n != 1 || err != nil {
			t.Fatalf("release of %s: %d, %v", cluster, n, err)
		}
	}
	release(silent, "unannounced")
	release(a, "freed-by-a")
	release(b, "freed-by-b")
	if got := next(t, heardByB, "b"); strings.Join(got, ",") != "freed-by-a" {
		t.Errorf("b's first notice: %q, want a's release only (the silent store announces nothing)", got)
	}
	if got := next(t, heardByA, "a"); strings.Join(got, ",") != "freed-by-b" {
		t.Errorf("a's first notice: %q, want b's release (a's own is not reported back to it)", got)
	}
}

// TestWaitingAcquireIsGrantedWhenAnotherReplicaFrees: two control-plane replicas in ordered
// mode on one lease table; an acquire waits at replica B, whose head would look at the store
// again only after an hour; the slot is freed through replica A. B's watch of A's notices wakes
// the head, which is granted long before its poll. Without the notice the client gives up (10 s)
// before the wait's last look at the store (20 s), and the test fails.
func TestWaitingAcquireIsGrantedWhenAnotherReplicaFrees(t *testing.T) {
	replicaA, replicaB, storeA := orderedReplicas(t, true, time.Hour)
	ctx := context.Background()

	held, err := replicaA.Acquire(ctx, "c1", "w1", 1, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   capacity.Lease
		err error
	}
	granted := make(chan result, 1)
	go func() {
		// The client gives up at 10 s, before the wait's last look at the store (20 s).
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		l, err := replicaB.WithAcquireWait(20*time.Second).Acquire(actx, "c1", "w2", 1, time.Minute, time.Now())
		granted <- result{l, err}
	}()
	capacitytest.AwaitWaiter(t, storeA, "c1", "w1")
	if n, err := replicaA.ReleaseBatch(ctx, []capacity.LeaseRef{held.Ref()}); n != 1 || err != nil {
		t.Fatalf("release through A: %d, %v", n, err)
	}
	r := <-granted
	if r.err != nil || r.l.Generation != held.Generation+1 {
		t.Fatalf("B's waiting acquire: %+v, %v; want granted the slot A freed", r.l, r.err)
	}
}

// serve serves api's endpoints, unauthenticated, and returns a client of them.
func serve(t testing.TB, api *capacity.API) *capacity.Remote {
	mux := http.NewServeMux()
	for _, ep := range api.Endpoints() {
		mux.HandleFunc("POST "+ep.Path, func(w http.ResponseWriter, r *http.Request) { ep.Serve(w, r, "") })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return capacity.NewRemote(srv.URL, srv.Client(), nil)
}

// TestFreedNoticeFitsPostgres: a notice naming more clusters than fit in PostgreSQL's 8000-byte
// payload names every cluster instead (pg_notify would refuse it, and the release with it).
func TestFreedNoticeFitsPostgres(t *testing.T) {
	if got := pgcapacity.FreedNotice("o", []string{"a", "b"}); got != "o\na\nb" {
		t.Errorf("notice of two clusters: %q", got)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = strings.Repeat("c", 80)
	}
	if got := pgcapacity.FreedNotice("o", many); got != "o\n"+capacity.AllClusters {
		t.Errorf("notice of 100 clusters of 80 bytes: %d bytes, want every cluster named by %q", len(got), capacity.AllClusters)
	}
}

// BenchmarkCrossReplicaHandOff times a slot's hand-off from a worker at replica A to an acquire
// waiting at replica B (ordered mode, cap 1): from A's release to B's grant. QF_BENCH_NO_NOTICE=1
// runs it without the announcement, as before it (B finds the slot at its 250 ms poll).
func BenchmarkCrossReplicaHandOff(b *testing.B) {
	replicaA, replicaB, _ := orderedReplicas(b, os.Getenv("QF_BENCH_NO_NOTICE") != "1", 0)
	replicaB = replicaB.WithAcquireWait(10 * time.Second)
	ctx := context.Background()
	var handOff time.Duration
	for i := 0; i < b.N; i++ {
		held, err := replicaA.Acquire(ctx, "c1", "w1", 1, time.Minute, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		granted := make(chan capacity.Lease, 1)
		go func() {
			l, err := replicaB.Acquire(ctx, "c1", "w2", 1, time.Minute, time.Now())
			if err != nil {
				b.Error(err)
			}
			granted <- l
		}()
		time.Sleep(20 * time.Millisecond) // B's acquire waits
		start := time.Now()
		if _, err := replicaA.ReleaseBatch(ctx, []capacity.LeaseRef{held.Ref()}); err != nil {
			b.Fatal(err)
		}
		l := <-granted
		handOff += time.Since(start)
		if _, err := replicaB.ReleaseBatch(ctx, []capacity.LeaseRef{l.Ref()}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(handOff.Microseconds())/float64(b.N), "handoff-us")
}
