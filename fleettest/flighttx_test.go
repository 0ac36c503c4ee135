package fleettest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestFlightSQLTransactionsOfAKilledOrFrozenWorker: arrow-go's Flight SQL client holds
// transactions (BeginTransaction, an INSERT each, no commit yet) on real workers in front of
// PostgreSQL with cap 4, each transaction holding a slot and a pinned engine connection.
// w3 is killed (SIGKILL) with its transactions open: its leases expire and are freed, its
// engine connections end and its inserts are never committed. w1 is frozen (SIGSTOP) with the
// whole cap in its transactions, past its leases' terms: the control plane takes the leases
// back and fences the pinned connections, w2's clients fill the cap; when w1 resumes (SIGCONT)
// each COMMIT answers the lost lease's code (40000, gRPC Aborted), nothing of the
// transactions is committed, and pg_stat_activity, sampled every 50 ms, never shows more than
// the cap running. w1 then runs and commits a transaction again once slots are free.
func TestFlightSQLTransactionsOfAKilledOrFrozenWorker(t *testing.T) {
	engineURL, db := engineDatabases(t)
	coordination := fmt.Sprintf("coordination: {mode: controlPlane, leaseTtlSecs: %d, driftMarginSecs: 1, sweepEverySecs: 1}", leaseTTLSecs)
	f := startEngineControlPlane(t, engineURL, db, coordination, engineCap, 120)
	ef := &engineFleet{fleet: f, engineDB: strings.TrimPrefix(engineURL.Path, "/"), workers: map[string]string{}, procs: map[string]*daemontest.Proc{}}
	flightAt := map[string]string{}
	for _, name := range []string{"w1", "w2", "w3"} {
		addrs, p := startWorkerOn(t, name, f.apiAddr, coordination, "", "postgres", "flightsql")
		ef.workers[name], ef.procs[name], flightAt[name] = addrs["postgres"], p, addrs["flightsql"]
	}
	awaitPG(t, ef.workers["w1"], ef.workers["w2"], ef.workers["w3"])
	engine, err := pgx.Connect(context.Background(), engineURL.String())
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(context.Background())
	if _, err := engine.Exec(context.Background(), "CREATE TABLE flight_tx (id INTEGER PRIMARY KEY, worker TEXT)"); err != nil {
		t.Fatal(err)
	}
	committed := func(worker string) int {
		var n int
		if err := engine.QueryRow(context.Background(), "SELECT count(*) FROM flight_tx WHERE worker = $1", worker).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// pinned counts the engine connections holding a transaction open between statements.
	pinned := func() int {
		var n int
		if err := engine.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = $1 AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()`, ef.engineDB).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var s sampler
	wg.Add(1)
	go func() { defer wg.Done(); s.run(ctx, t, ef.engineDB) }()
	defer func() {
		ef.procs["w1"].Signal(syscall.SIGCONT)
		cancel()
		wg.Wait()
	}()
	wait := func(what string, cond func() bool) { daemontest.Eventually(t, 60*time.Second, what, cond) }

	// w3 killed with its transactions open.
	killed := openTransactions(t, ctx, flightAt["w3"], "w3", 100)
	wait("w3's transactions hold the whole cap, pinned", func() bool { return ef.leases()["w3"] == engineCap && pinned() == engineCap })
	ef.procs["w3"].Kill(t)
	for _, tx := range killed {
		err := tx.Commit(ctx)
		if code := status.Code(err); code != codes.Unavailable {
			t.Errorf("COMMIT on a killed worker: %v, want Unavailable", err)
		}
	}
	wait("w3's leases freed and its engine connections ended", func() bool { return ef.leases()["w3"] == 0 && pinned() == 0 })
	if n := committed("w3"); n != 0 {
		t.Fatalf("%d inserts of the killed worker's transactions were committed", n)
	}

	// w1 frozen with its transactions open, past a lease term.
	frozen := openTransactions(t, ctx, flightAt["w1"], "w1", 200)
	wait("w1's transactions hold the whole cap, pinned", func() bool { return ef.leases()["w1"] == engineCap && pinned() == engineCap })
	var ran atomic.Int64
	loadCtx, stopLoad := context.WithCancel(ctx)
	var loadWG sync.WaitGroup
	ef.load(loadCtx, &loadWG, "w2", engineCap, &ran)
	time.Sleep(time.Second) // w2's clients queue for the whole cap
	ef.procs["w1"].Signal(syscall.SIGSTOP)
	wait("w2 holds the whole cap after w1's leases were taken back and its connections fenced", func() bool {
		ls := ef.leases()
		return ls["w2"] == engineCap && ls["w1"] == 0 && s.tagged.Load() == engineCap && pinned() == 0
	})
	time.Sleep(leaseTTLSecs * time.Second) // w1's timers all come due together when it resumes
	ef.procs["w1"].Signal(syscall.SIGCONT)
	// One client's next statement learns it, then rolls back as told; one rolls back at once;
	// the others commit.
	cctx, done := context.WithTimeout(ctx, 45*time.Second)
	_, err = frozen[0].ExecuteUpdate(cctx, "INSERT INTO flight_tx VALUES (299, 'w1')")
	done()
	wantLeaseLost(t, "a statement of a frozen worker's transaction", err)
	if err := frozen[0].Rollback(ctx); err != nil {
		t.Errorf("ROLLBACK of the transaction whose lease was lost: %v", err)
	}
	if err := frozen[1].Rollback(ctx); err != nil {
		t.Errorf("ROLLBACK of a transaction whose lease was lost while it idled: %v", err)
	}
	for i, tx := range frozen[2:] {
		cctx, done := context.WithTimeout(ctx, 45*time.Second)
		err := tx.Commit(cctx)
		done()
		wantLeaseLost(t, fmt.Sprintf("COMMIT %d of a frozen worker's transaction", i), err)
	}
	if n := committed("w1"); n != 0 {
		t.Fatalf("%d inserts of the frozen worker's transactions were committed", n)
	}
	time.Sleep(2 * time.Second) // a slot w1 wrongly kept would show in the samples now
	t.Logf("engine samples %d: at most %d tagged queries running, %d pg_sleep backends (cap %d)",
		s.samples.Load(), s.maxTagged.Load(), s.maxSleeping.Load(), engineCap)
	if s.maxTagged.Load() > engineCap || s.maxSleeping.Load() > engineCap {
		t.Fatalf("the engine ran more than the cap: %d tagged, %d pg_sleep, cap %d", s.maxTagged.Load(), s.maxSleeping.Load(), engineCap)
	}
	if ls := ef.leases(); ls["w1"] != 0 {
		t.Fatalf("w1 holds %d leases after its transactions ended", ls["w1"])
	}

	// Once w2's load stops, w1 serves transactions again.
	stopLoad()
	loadWG.Wait()
	again := openTransactions(t, ctx, flightAt["w1"], "w1", 300)
	for _, tx := range again {
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("COMMIT on w1 after it resumed: %v", err)
		}
	}
	if n := committed("w1"); n != engineCap {
		t.Fatalf("w1 committed %d rows after it resumed, want %d", n, engineCap)
	}
}

// openTransactions begins engineCap transactions through the Flight SQL frontend at addr, each
// inserting one row (ids from first) named for worker, and leaves them open.
func openTransactions(t *testing.T, ctx context.Context, addr, worker string, first int) []*fsql.Txn {
	t.Helper()
	cl := frontendtest.DialFlight(t, addr)
	var txs []*fsql.Txn
	for i := range engineCap {
		tctx, done := context.WithTimeout(ctx, 30*time.Second)
		tx, err := cl.BeginTransaction(tctx)
		if err == nil {
			_, err = tx.ExecuteUpdate(tctx, fmt.Sprintf("INSERT INTO flight_tx VALUES (%d, '%s')", first+i, worker))
		}
		done()
		if err != nil {
			t.Fatalf("transaction %d on %s: %v", i, worker, err)
		}
		txs = append(txs, tx)
	}
	return txs
}

// wantLeaseLost fails t unless err is the lost lease's: gRPC Aborted, its SQLSTATE leading,
// naming the cluster.
func wantLeaseLost(t *testing.T, what string, err error) {
	t.Helper()
	st, _ := status.FromError(err)
	if err == nil || st.Code() != codes.Aborted || !strings.Contains(st.Message(), "["+query.CodeLeaseLost+"]") ||
		!strings.Contains(st.Message(), "on cluster pg was lost") {
		t.Errorf("%s: %v, want Aborted with the lost lease's %s", what, err, query.CodeLeaseLost)
	}
}
