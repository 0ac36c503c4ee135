package fleettest

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/node/controlplane"
)

// The replicated fleet: control-plane replicas A and B on one migrated database (one lease
// table), in ordered mode (coordination.queue: ordered), worker wa served by A and wb by B, one
// PostgreSQL cluster of cap replicaCap. Leases live replicaTTLSecs: a slot whose release was
// lost would free by expiring no sooner than about two thirds of that after its query ended,
// so a hand-off within handOffMax was a release reaching the other replica.
const (
	replicaCap     = 3
	replicaTTLSecs = 8
	handOffMax     = 3 * time.Second
)

type replicaFleet struct {
	engineURL string            // the cluster's database: its backends are the ones counted
	cpDB      string            // the replicas' database, holding the lease table
	replicas  map[string]*fleet // "A", "B"
	workers   map[string]string // worker name -> its postgres frontend
	servedBy  map[string]string // replica name -> its worker
}

func newReplicaFleet(t *testing.T) *replicaFleet {
	engineURL, db := engineDatabases(t)
	rf := &replicaFleet{engineURL: engineURL.String(), cpDB: db, replicas: map[string]*fleet{}, workers: map[string]string{},
		servedBy: map[string]string{"A": "wa", "B": "wb"}}
	coordination := fmt.Sprintf("coordination: {mode: controlPlane, queue: ordered, leaseTtlSecs: %d, driftMarginSecs: 1, sweepEverySecs: 1}", replicaTTLSecs)
	// Both replicas start before any worker registers; a replica started later is
	// TestLateReplicaLeavesAnotherReplicasWorkerAlone's.
	for _, name := range []string{"A", "B"} {
		rf.replicas[name] = startEngineControlPlane(t, engineURL, db, coordination, replicaCap, 120)
	}
	for _, name := range []string{"A", "B"} {
		worker := rf.servedBy[name]
		rf.workers[worker], _ = startPGWorker(t, worker, rf.replicas[name].apiAddr, coordination, "")
	}
	awaitPG(t, slices.Collect(maps.Values(rf.workers))...)
	return rf
}

// conns opens n connections to worker, each with its engine session in place (a query ran).
func (rf *replicaFleet) conns(t *testing.T, worker string, n int) []*pgx.Conn {
	ctx := context.Background()
	cs := make([]*pgx.Conn, n)
	for i := range cs {
		c, err := pgx.Connect(ctx, "postgres://queryflux@"+rf.workers[worker]+"/pg?sslmode=disable&connect_timeout=5")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		if err := c.QueryRow(ctx, "SELECT 1").Scan(new(int)); err != nil {
			t.Fatal(err)
		}
		cs[i] = c
	}
	return cs
}

// waiting is how many acquires of the cluster replica is answering now (in its ordered queue).
func (rf *replicaFleet) waiting(t *testing.T, replica string) int {
	var st controlplane.CapacityStats
	daemontest.GetJSON(t, "http://"+rf.replicas[replica].apiAddr+controlplane.PathAdminCapacityStats+"?cluster=pg", adminToken, &st)
	if len(st.Clusters) == 0 {
		return 0
	}
	return st.Clusters[0].Now.Waiting
}

// gate holds advisory locks on the engine's database: a query through the fleet that waits for
// one of them holds its slot until the test lets it end.
type gate struct {
	t    *testing.T
	conn *pgx.Conn
}

func (rf *replicaFleet) gate(t *testing.T, keys ...int) *gate {
	c, err := pgx.Connect(context.Background(), rf.engineURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	g := &gate{t: t, conn: c}
	for _, k := range keys {
		if _, err := c.Exec(context.Background(), fmt.Sprintf("SELECT pg_advisory_lock(%d)", k)); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// open lets the queries waiting for key end.
func (g *gate) open(key int) {
	var ok bool
	if err := g.conn.QueryRow(context.Background(), fmt.Sprintf("SELECT pg_advisory_unlock(%d)", key)).Scan(&ok); err != nil || !ok {
		g.t.Fatalf("opening gate %d: %v, %v", key, ok, err)
	}
}

// blocked is how many queries of the fleet wait for gate key on the engine now: their
// statements began there. Only a backend waiting for the lock counts: an active one with the
// query's text may not have reached the lock yet, or not be running it at all (a prepare).
func (g *gate) blocked(key int) int {
	var n int
	err := g.conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock'
		AND query LIKE '%' || $1 || '%'`, fmt.Sprintf("pg_advisory_xact_lock_shared(%d)", key)).Scan(&n)
	if err != nil {
		g.t.Fatal(err)
	}
	return n
}

// gatedSQL is a query that waits for gate key, then says when it began, when it got through and
// the lease it ran under (its engine session's tag: "qf-lease:<fleet>:<cluster>#<generation>", the
// generations in grant order).
func gatedSQL(key int) string {
	return fmt.Sprintf("SELECT now(), clock_timestamp(), current_setting('application_name') FROM pg_advisory_xact_lock_shared(%d)", key)
}

// ran is one query as the engine saw it: when its statement began (its slot was granted) and
// when its gate let it through (it was about to end and free the slot), and the lease it ran
// under; or its error.
type ran struct {
	start, end time.Time
	lease      string
	err        error
}

// gated runs, on c, a query that waits for gate key, and reports it to into. It goes in pgx's
// default protocol: the first use of a statement on c prepares it (Parse, Describe, Sync),
// which takes no lease and no place in the queue (docs/capacity.md), then executes it (Bind,
// Execute, Sync), which queues. When the prepare took a lease of its own, the execution asked
// again behind the queries that arrived after its prepare (leases #27 and #28 went to queries
// 3 and 2: 3 of 9 runs at load 16-21 failed on that order).
func gated(c *pgx.Conn, key int, into *ran, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		into.err = c.QueryRow(context.Background(), gatedSQL(key)).Scan(&into.start, &into.end, &into.lease)
	}()
}

// tableSampler reads the lease table every 20 ms: the most leases of the cluster ever held
// at once, and the last sample's leases by worker.
type tableSampler struct {
	max, samples atomic.Int64
	mu           sync.Mutex
	last         map[string]int
}

func (s *tableSampler) run(ctx context.Context, t *testing.T, db string) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(context.Background())
	for ctx.Err() == nil {
		rows, err := conn.Query(ctx, "SELECT holder FROM capacity_leases WHERE cluster = 'pg'")
		if err != nil {
			if ctx.Err() == nil {
				t.Error(err)
			}
			return
		}
		holders, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			if ctx.Err() == nil {
				t.Error(err)
			}
			return
		}
		by := map[string]int{}
		for _, h := range holders {
			by[capacity.HolderWorker(h)]++
		}
		s.mu.Lock()
		s.last = by
		s.mu.Unlock()
		s.samples.Add(1)
		if n := int64(len(holders)); n > s.max.Load() {
			s.max.Store(n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// held is the last sample's leases by worker.
func (s *tableSampler) held() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// TestReplicasShareTheCapInOrderedMode: two real control-plane replicas on one lease table in
// ordered mode, a real worker on each, one PostgreSQL cluster of cap 3. Twice (held at A and
// waited for at B, then the other way round): one worker fills the cap, three queries queue one
// by one at the other replica, and the holding queries end one at a time: each slot, freed
// through one replica, goes to the other's waiting queries in their arrival order, within
// handOffMax (sooner than it could have freed by expiring). Then replica A is killed with
// SIGKILL while wa holds the cap through it and three of wb's queries wait at B: wa's queries
// are stopped, its leases expire and are reclaimed, and wb holds all three slots at once.
// Throughout, the lease table (every 20 ms) and the engine (every 50 ms) never show more than
// the cap.
func TestReplicasShareTheCapInOrderedMode(t *testing.T) {
	rf := newReplicaFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var engine sampler
	var table tableSampler
	wg.Add(2)
	go func() { defer wg.Done(); engine.run(ctx, t, rf.engineDB()) }()
	go func() { defer wg.Done(); table.run(ctx, t, rf.cpDB) }()
	defer func() { cancel(); wg.Wait() }()

	var handOffs []time.Duration
	for i, way := range [][2]string{{"A", "B"}, {"B", "A"}} {
		handOffs = append(handOffs, rf.handOff(t, &table, way[0], way[1], 10*(i+1))...)
	}
	slices.Sort(handOffs)
	t.Logf("hand-offs across replicas (a query's end to the next one's start, engine clock): min %v, median %v, max %v",
		handOffs[0], handOffs[len(handOffs)/2], handOffs[len(handOffs)-1])

	rf.killReplicaA(t, &table)

	t.Logf("lease table: at most %d leases over %d samples; engine: at most %d tagged queries over %d samples (cap %d)",
		table.max.Load(), table.samples.Load(), engine.maxTagged.Load(), engine.samples.Load(), replicaCap)
	if table.max.Load() > replicaCap || engine.maxTagged.Load() > replicaCap {
		t.Errorf("the fleet went over the cap %d: %d leases, %d tagged queries on the engine at once",
			replicaCap, table.max.Load(), engine.maxTagged.Load())
	}
	if table.max.Load() < replicaCap || engine.maxTagged.Load() < replicaCap {
		t.Errorf("the test never filled the cap: %d leases, %d tagged queries at most", table.max.Load(), engine.maxTagged.Load())
	}
}

// engineDB is the name of the cluster's database.
func (rf *replicaFleet) engineDB() string {
	u, err := url.Parse(rf.engineURL)
	if err != nil {
		panic(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// handOff fills the cap with queries through holder's worker and queues a query per slot at
// waiter, one at a time (each in the queue before the next is sent), then ends the holding
// queries one at a time, each once the previous slot has been handed over. The waiting queries
// must start in their arrival order, each within handOffMax of the end of the query whose slot
// it took; it returns those times. Gates key..key+cap hold the queries.
func (rf *replicaFleet) handOff(t *testing.T, table *tableSampler, holder, waiter string, key int) []time.Duration {
	hw, ww := rf.servedBy[holder], rf.servedBy[waiter]
	waitKey := key + replicaCap
	g := rf.gate(t, key, key+1, key+2, waitKey)
	holdConns, waitConns := rf.conns(t, hw, replicaCap), rf.conns(t, ww, replicaCap)
	var wg sync.WaitGroup
	held, waited := make([]ran, replicaCap), make([]ran, replicaCap)
	for i, c := range holdConns {
		gated(c, key+i, &held[i], &wg)
	}
	daemontest.Eventually(t, 30*time.Second, hw+" fills the cap", func() bool { return g.blocked(key)+g.blocked(key+1)+g.blocked(key+2) == replicaCap })
	for i, c := range waitConns {
		gated(c, waitKey, &waited[i], &wg)
		daemontest.Eventually(t, 30*time.Second, fmt.Sprintf("query %d of %s waits at %s", i+1, ww, waiter),
			func() bool { return rf.waiting(t, waiter) == i+1 })
	}
	for i := range replicaCap {
		g.open(key + i)
		daemontest.Eventually(t, 30*time.Second, fmt.Sprintf("%d queries of %s run on the engine", i+1, ww), func() bool { return g.blocked(waitKey) == i+1 })
	}
	g.open(waitKey)
	wg.Wait()
	var out []time.Duration
	for i := range replicaCap {
		if held[i].err != nil || waited[i].err != nil {
			t.Fatalf("query %d: held by %s %v, waiting at %s %v", i+1, hw, held[i].err, ww, waited[i].err)
		}
		handOff := waited[i].start.Sub(held[i].end)
		// The lease says which grant it was: a query that began out of order under a lease
		// granted in order was slow to reach the engine (the worker); one under a lease
		// granted out of order was granted so (the control plane, or an acquire asked again).
		t.Logf("%s->%s: query %d of %s (lease %s) started %v after query %d of %s (lease %s) ended",
			holder, waiter, i+1, ww, waited[i].lease, handOff, i+1, hw, held[i].lease)
		// Slot i+1 was freed only once slot i had been handed over: the query that took slot i
		// started before it.
		if i+1 < replicaCap && !waited[i].start.Before(held[i+1].end) {
			t.Errorf("%s->%s: query %d waiting at %s started after the slot freed after its own: not granted in arrival order", holder, waiter, i+1, waiter)
		}
		if handOff < 0 || handOff > handOffMax {
			t.Errorf("%s->%s: query %d waiting at %s started %v after the end of query %d at %s, want within 0..%v",
				holder, waiter, i+1, waiter, handOff, i+1, holder, handOffMax)
		}
		out = append(out, handOff)
	}
	daemontest.Eventually(t, 30*time.Second, "every lease released", func() bool { return len(table.held()) == 0 })
	return out
}

// killReplicaA kills replica A with SIGKILL while wa holds the cap through it and three of wb's
// queries wait at B: wa cannot renew, so its queries are stopped and its leases expire; B's
// sweeper reclaims them (fencing their work on the engine) and B grants all three slots.
func (rf *replicaFleet) killReplicaA(t *testing.T, table *tableSampler) {
	const holdKey, waitKey = 100, 101
	g := rf.gate(t, holdKey, waitKey)
	holdConns, waitConns := rf.conns(t, "wa", replicaCap), rf.conns(t, "wb", replicaCap)
	var wg sync.WaitGroup
	held, waited := make([]ran, replicaCap), make([]ran, replicaCap)
	for i, c := range holdConns {
		gated(c, holdKey, &held[i], &wg)
	}
	daemontest.Eventually(t, 30*time.Second, "wa fills the cap", func() bool { return g.blocked(holdKey) == replicaCap })
	for i, c := range waitConns {
		gated(c, waitKey, &waited[i], &wg)
	}
	daemontest.Eventually(t, 30*time.Second, "wb's queries wait at B", func() bool { return rf.waiting(t, "B") == replicaCap })
	rf.replicas["A"].cp.Kill(t)
	killed := time.Now()
	t.Logf("replica A killed with SIGKILL while wa holds %d leases", replicaCap)
	daemontest.Eventually(t, 60*time.Second, "wb holds every slot after A's death", func() bool {
		h := table.held()
		return h["wb"] == replicaCap && h["wa"] == 0
	})
	t.Logf("wb holds every slot %v after the kill", time.Since(killed).Round(time.Millisecond))
	g.open(waitKey)
	wg.Wait()
	for i := range replicaCap {
		if held[i].err == nil {
			t.Errorf("wa's query %d ended normally: its lease was never fenced", i+1)
		}
		if waited[i].err != nil {
			t.Errorf("wb's query %d: %v", i+1, waited[i].err)
		}
	}
}
