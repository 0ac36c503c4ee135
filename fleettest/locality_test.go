package fleettest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// localityFleet is a control plane and n workers with Trino and PostgreSQL frontends over one
// PostgreSQL cluster, with two cached groups: "shared" (cache.preferredWorker) and "plain" (each
// worker its own cache), which the SQL picks: a query naming the column plain_q goes to "plain".
type localityFleet struct {
	*peerFleet
	dbs map[string]*sql.DB // Trino clients by worker
}

// localityGroups are the shared and plain groups.
const localityGroups = `clusterGroups:
  - {name: shared, members: [pg], cache: {enabled: true, ttlSecs: 600, maxBytes: 10000000, preferredWorker: true}}
  - {name: plain, members: [pg], cache: {enabled: true, ttlSecs: 600, maxBytes: 10000000}}
routers:
  - {type: queryRegex, regex: "plain_q", group: plain}
routingFallback: shared`

func newLocalityFleet(t *testing.T, n int) *localityFleet {
	lf := &localityFleet{peerFleet: newPeerFleet(t, peerFleetOptions{cap: 8, groups: localityGroups, workers: withFrontends(n, "trino", "postgres")}),
		dbs: map[string]*sql.DB{}}
	for _, name := range lf.names {
		lf.dbs[name] = frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + lf.addr[name]["trino"]})
		daemontest.EventuallyNil(t, 60*time.Second, func() error { return lf.dbs[name].QueryRow("SELECT 1 AS plain_q").Scan(new(int)) })
	}
	return lf
}

// query runs sql through worker's Trino frontend and checks its one row.
func (lf *localityFleet) query(worker, sql string, want int) {
	lf.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var q, n int
	if err := lf.dbs[worker].QueryRowContext(ctx, sql).Scan(&q, &n); err != nil || q != want || n != 1000 {
		lf.t.Fatalf("%s on %s: (%d, %d) %v", sql, worker, q, n, err)
	}
}

// mixSQL is query k of the repeated mix, in the shared group or (plain) the plain one.
func mixSQL(k int, plain bool) string {
	col := "q"
	if plain {
		col = "plain_q"
	}
	return fmt.Sprintf("SELECT %d AS %s, count(*) AS n FROM generate_series(1, 1000)", k, col)
}

// runMix sends each of keys distinct queries rounds times, each through the worker pick names
// (nil: the next worker each round), and returns the fleet's cache hits in the group.
func (lf *localityFleet) runMix(keys, rounds int, plain bool, pick func() int) (hits, queries int) {
	group := `group="shared"`
	if plain {
		group = `group="plain"`
	}
	before := lf.fleetMetric("queryflux_cache_hits_total", group)
	for r := range rounds {
		for k := range keys {
			w := (k + r) % len(lf.names)
			if pick != nil {
				w = pick()
			}
			lf.query(lf.names[w], mixSQL(k, plain), k)
		}
	}
	return int(lf.fleetMetric("queryflux_cache_hits_total", group) - before), keys * rounds
}

// A fleet whose group prefers the worker owning each cache key answers a repeated mix from one
// warm cache; the same mix in a group without it misses once per worker and key.
func TestPreferredWorkerRaisesTheFleetHitRate(t *testing.T) {
	lf := newLocalityFleet(t, 3)
	const keys, rounds = 12, 3
	shared, total := lf.runMix(keys, rounds, false, nil)
	plain, _ := lf.runMix(keys, rounds, true, nil)
	t.Logf("fleet hit rate over %d queries: %d with preferredWorker, %d without", total, shared, plain)
	if shared != keys*(rounds-1) {
		t.Fatalf("preferredWorker: %d hits of %d, want %d (one miss per key)", shared, total, keys*(rounds-1))
	}
	if plain >= shared {
		t.Fatalf("without preferredWorker %d hits, with it %d: locality did not raise the hit rate", plain, shared)
	}
	if lf.fleetMetric("queryflux_forwards_total", `protocol="query"`, `outcome="ok"`) == 0 {
		t.Fatal("no query was forwarded to its owner")
	}

	t.Run("leaseTakenOnce", lf.leaseTakenOnce)
	t.Run("postgresWire", lf.postgresWire)
	t.Run("ownerDown", lf.ownerDown)
}

// fresh finds a query of the shared group that the worker from does not own (so it is
// forwarded), running it once; it returns the query's key and the owner.
func (lf *localityFleet) fresh(from string, start int) (int, string) {
	lf.t.Helper()
	for k := start; k < start+100; k++ {
		fwd := lf.metric(from, "queryflux_forwards_total", `protocol="query"`, `outcome="ok"`)
		admitted := map[string]float64{}
		for _, w := range lf.names {
			if lf.procs[w] != nil {
				admitted[w] = lf.metric(w, "queryflux_queries_total", `group="shared"`, `cluster="pg"`)
			}
		}
		lf.query(from, mixSQL(k, false), k)
		if lf.metric(from, "queryflux_forwards_total", `protocol="query"`, `outcome="ok"`) == fwd {
			continue // from owns k
		}
		// The slot (capacity lease) was taken once in the fleet, by the owner; none by from.
		var took []string
		for w, n := range admitted { //determinism:ok a test's own map; sorted below
			if got := lf.metric(w, "queryflux_queries_total", `group="shared"`, `cluster="pg"`); got != n {
				took = append(took, fmt.Sprintf("%s+%g", w, got-n))
			}
		}
		slices.Sort(took)
		if len(took) != 1 || strings.HasPrefix(took[0], from+"+") || !strings.HasSuffix(took[0], "+1") {
			lf.t.Fatalf("query %d from %s: slots taken %v, want one on its owner", k, from, took)
		}
		return k, strings.SplitN(took[0], "+", 2)[0]
	}
	lf.t.Fatalf("%s owns 100 keys in a row", from)
	return 0, ""
}

func (lf *localityFleet) leaseTakenOnce(t *testing.T) {
	k, owner := lf.fresh("w1", 1000)
	before := lf.metric(owner, "queryflux_cache_hits_total", `group="shared"`)
	lf.query("w1", mixSQL(k, false), k)
	if lf.metric(owner, "queryflux_cache_hits_total", `group="shared"`) != before+1 {
		t.Fatalf("the repeat of query %d through w1 was not answered from %s's cache", k, owner)
	}
}

// postgresWire: simple-protocol queries of a PostgreSQL client share the owners' caches too.
func (lf *localityFleet) postgresWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns := map[string]*pgx.Conn{}
	for _, w := range []string{"w1", "w2"} {
		cfg, err := pgx.ParseConfig("postgres://queryflux@" + lf.addr[w]["postgres"] + "/pg?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("connect to %s: %v", w, err)
		}
		defer c.Close(ctx)
		conns[w] = c
	}
	const keys = 6
	before := lf.fleetMetric("queryflux_cache_hits_total", `group="shared"`)
	forwards := lf.fleetMetric("queryflux_forwards_total", `protocol="query"`, `outcome="ok"`)
	for _, w := range []string{"w1", "w2"} {
		for k := 3000; k < 3000+keys; k++ {
			var q, n int
			if err := conns[w].QueryRow(ctx, mixSQL(k, false)).Scan(&q, &n); err != nil || q != k || n != 1000 {
				t.Fatalf("query %d through %s: (%d, %d) %v", k, w, q, n, err)
			}
		}
	}
	if hits := lf.fleetMetric("queryflux_cache_hits_total", `group="shared"`) - before; hits != keys {
		t.Fatalf("%g hits for %d keys asked through two workers: the second round missed", hits, keys)
	}
	if lf.fleetMetric("queryflux_forwards_total", `protocol="query"`, `outcome="ok"`) == forwards {
		t.Fatal("no PostgreSQL wire query was forwarded")
	}
}

// ownerDown kills the owner of a key: the query then runs on the worker it reached.
func (lf *localityFleet) ownerDown(t *testing.T) {
	k, owner := lf.fresh("w1", 2000)
	lf.kill(owner)
	from := "w1"
	unreachable := lf.metric(from, "queryflux_forwards_total", `protocol="query"`, `outcome="owner_unreachable"`)
	admitted := lf.metric(from, "queryflux_queries_total", `group="shared"`, `cluster="pg"`)
	start := time.Now()
	lf.query(from, mixSQL(k, false), k)
	took := time.Since(start)
	if lf.metric(from, "queryflux_forwards_total", `protocol="query"`, `outcome="owner_unreachable"`) != unreachable+1 ||
		lf.metric(from, "queryflux_queries_total", `group="shared"`, `cluster="pg"`) != admitted+1 {
		t.Fatalf("with its owner %s down, query %d did not run on %s", owner, k, from)
	}
	t.Logf("query %d with its owner down ran on %s in %s", k, from, took)
}

// TestLocalityFigures measures the fleet's hit rate with and without preferredWorker for 2, 4
// and 8 workers, and what a forward adds to a cache hit (RESULTS.md). It runs only with
// QUERYFLUX_LOCALITY_FIGURES=1: it starts 14 daemons.
func TestLocalityFigures(t *testing.T) {
	if os.Getenv("QUERYFLUX_LOCALITY_FIGURES") == "" {
		t.Skip("set QUERYFLUX_LOCALITY_FIGURES=1 to measure")
	}
	const keys, rounds = 24, 8
	for _, n := range []int{2, 4, 8} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			lf := newLocalityFleet(t, n)
			// A load balancer's spread: each query to a worker drawn at random, the same
			// draws for both groups.
			r1, r2 := rand.New(rand.NewPCG(7, 0)), rand.New(rand.NewPCG(7, 0))
			shared, total := lf.runMix(keys, rounds, false, func() int { return r1.IntN(n) })
			plain, _ := lf.runMix(keys, rounds, true, func() int { return r2.IntN(n) })
			fmt.Printf("locality N=%d keys=%d rounds=%d queries=%d hit rate with preferredWorker %.1f%% (%d), without %.1f%% (%d)\n",
				n, keys, rounds, total, 100*float64(shared)/float64(total), shared, 100*float64(plain)/float64(total), plain)
			if n == 2 {
				lf.forwardLatency(t, keys)
			}
		})
	}
}

// forwardLatency times cache hits answered by the worker the client reached against hits that
// worker forwarded to the owner, over the warm keys of the mix.
func (lf *localityFleet) forwardLatency(t *testing.T, keys int) {
	var local, forwarded []time.Duration
	for rep := range 20 {
		for k := range keys {
			from := lf.names[(k+rep)%len(lf.names)]
			fwd := lf.metric(from, "queryflux_forwards_total", `protocol="query"`, `outcome="ok"`)
			start := time.Now()
			lf.query(from, mixSQL(k, false), k)
			d := time.Since(start)
			if lf.metric(from, "queryflux_forwards_total", `protocol="query"`, `outcome="ok"`) != fwd {
				forwarded = append(forwarded, d)
			} else {
				local = append(local, d)
			}
		}
	}
	slices.Sort(local)
	slices.Sort(forwarded)
	if len(local) == 0 || len(forwarded) == 0 {
		t.Fatalf("%d local and %d forwarded hits", len(local), len(forwarded))
	}
	p := func(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }
	fmt.Printf("locality forward latency (Trino client, cache hit, full round trip): local p50 %s p90 %s (n=%d); forwarded p50 %s p90 %s (n=%d); added p50 %s\n",
		p(local, .5), p(local, .9), len(local), p(forwarded, .5), p(forwarded, .9), len(forwarded), p(forwarded, .5)-p(local, .5))
}

// pgConn connects a PostgreSQL client (simple protocol, so queries take the cacheable path) to
// worker's PostgreSQL frontend.
func (pf *peerFleet) pgConn(ctx context.Context, worker string) *pgx.Conn {
	pf.t.Helper()
	cfg, err := pgx.ParseConfig("postgres://queryflux@" + pf.addr[worker]["postgres"] + "/pg?sslmode=disable")
	if err != nil {
		pf.t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		pf.t.Fatalf("connect to %s: %v", worker, err)
	}
	pf.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Workers with only a PostgreSQL frontend (sidecars) own cache keys too: peers send them
// queries on their ops listener, over plain http, and over https when the workers have their own
// certificates (the ops listener then serves only TLS, so a hit proves the forward verified it).
func TestPreferredWorkerOwnersWithoutTrinoListener(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[tlsOn], func(t *testing.T) {
			pf := newPeerFleet(t, peerFleetOptions{cap: 4, groups: localityGroups, tls: tlsOn, workers: withFrontends(2, "postgres")})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			conns := map[string]*pgx.Conn{"w1": pf.pgConn(ctx, "w1"), "w2": pf.pgConn(ctx, "w2")}
			daemontest.EventuallyNil(t, 60*time.Second, func() error { return conns["w1"].QueryRow(ctx, "SELECT 1 AS plain_q").Scan(new(int)) })
			daemontest.EventuallyNil(t, 60*time.Second, func() error { return conns["w2"].QueryRow(ctx, "SELECT 1 AS plain_q").Scan(new(int)) })
			const keys = 8
			hits := pf.fleetMetric("queryflux_cache_hits_total", `group="shared"`)
			slots := pf.fleetMetric("queryflux_queries_total", `group="shared"`, `cluster="pg"`)
			for _, w := range []string{"w1", "w2"} {
				for k := range keys {
					var q, n int
					if err := conns[w].QueryRow(ctx, mixSQL(k, false)).Scan(&q, &n); err != nil || q != k || n != 1000 {
						t.Fatalf("query %d through %s: (%d, %d) %v", k, w, q, n, err)
					}
				}
			}
			if got := pf.fleetMetric("queryflux_cache_hits_total", `group="shared"`) - hits; got != keys {
				t.Fatalf("%g hits for %d keys asked through both workers, want %d: the owners without a Trino listener were not used", got, keys, keys)
			}
			if got := pf.fleetMetric("queryflux_queries_total", `group="shared"`, `cluster="pg"`) - slots; got != keys {
				t.Fatalf("%g queries ran on the cluster for %d keys, want one each", got, keys)
			}
			if pf.forwards("w1", "query", "ok")+pf.forwards("w2", "query", "ok") == 0 || pf.forwards("w1", "query", "owner_unreachable")+pf.forwards("w2", "query", "owner_unreachable") != 0 {
				t.Fatalf("forwards: w1 ok %d unreachable %d, w2 ok %d unreachable %d", pf.forwards("w1", "query", "ok"),
					pf.forwards("w1", "query", "owner_unreachable"), pf.forwards("w2", "query", "ok"), pf.forwards("w2", "query", "owner_unreachable"))
			}
		})
	}
}

// slowSQL is a cacheable query of the shared group that runs for seconds on PostgreSQL.
func slowSQL(k int) string {
	return fmt.Sprintf("SELECT %d AS q, count(*) AS n FROM generate_series(1, 100000000)", k)
}

// An owner SIGKILLed while it runs a query a peer forwarded to it, before any of its answer came
// back: the query (a cacheable read) runs on the peer, which takes one capacity slot for it, and
// the client gets its answer, no error; the next query runs on the peer too.
func TestPreferredOwnerKilledMidForward(t *testing.T) {
	pf := newPeerFleet(t, peerFleetOptions{cap: 2, groups: localityGroups, workers: withFrontends(2, "postgres")})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	from := pf.pgConn(ctx, "w1")
	daemontest.EventuallyNil(t, 60*time.Second, func() error { return from.QueryRow(ctx, "SELECT 1 AS plain_q").Scan(new(int)) })
	ran := pf.metric("w1", "queryflux_queries_total", `cluster="pg"`)
	for k := range 20 {
		done := make(chan error, 1)
		qctx, qcancel := context.WithCancel(ctx)
		c := pf.pgConn(ctx, "w1")
		go func() { done <- c.QueryRow(qctx, slowSQL(k)).Scan(new(int), new(int)) }()
		owner := ""
		daemontest.Eventually(t, 30*time.Second, "the slow query holding a slot", func() bool {
			for _, w := range pf.names {
				if pf.metric(w, "queryflux_running_queries") > 0 {
					owner = w
				}
			}
			return owner != ""
		})
		if owner == "w1" { // w1 owns this key: try the next one
			qcancel()
			<-done
			daemontest.Eventually(t, 30*time.Second, "w1's cancelled query finished", func() bool {
				return pf.metric("w1", "queryflux_running_queries") == 0 && pf.metric("w1", "queryflux_queries_total", `cluster="pg"`) == ran+1
			})
			ran++
			continue
		}
		pf.kill(owner)
		var err error
		select {
		case err = <-done:
		case <-time.After(90 * time.Second):
			t.Fatal("the client of a query whose owner was killed hangs")
		}
		qcancel()
		if err != nil {
			t.Fatalf("query %d with its owner killed mid-forward: %v, want it run on w1", k, err)
		}
		if got := pf.metric("w1", "queryflux_queries_total", `cluster="pg"`); got != ran+1 {
			t.Fatalf("w1 ran %g queries on the cluster for the query whose owner died, want 1", got-ran)
		}
		ran++
		// The next query runs on w1: w2 owns nothing once the registry dropped it, and refuses
		// the connection until then.
		daemontest.EventuallyNil(t, 30*time.Second, func() error {
			return from.QueryRow(ctx, fmt.Sprintf("SELECT %d AS q, count(*) AS n FROM generate_series(1, 1000)", k)).Scan(new(int), new(int))
		})
		if got := pf.metric("w1", "queryflux_queries_total", `cluster="pg"`); got != ran+1 {
			t.Fatalf("w1 ran %g queries on the cluster after the owner died, want 1", got-ran)
		}
		return
	}
	t.Fatal("w1 owned 20 keys in a row")
}
