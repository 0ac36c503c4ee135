package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// uncontendedStore is a lease client that always says nobody else wants the cluster, so a
// LeaseGuard over it reuses its leases, as a worker's does while it has its cluster to itself.
type uncontendedStore struct{ *capacity.Memory }

func (s uncontendedStore) AcquireContended(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []capacity.LeaseRef) (capacity.Lease, bool, error) {
	if _, err := s.ReleaseBatch(ctx, release); err != nil {
		return capacity.Lease{}, true, err
	}
	l, err := s.Acquire(ctx, cluster, holder, limit, ttl, now)
	return l, false, err
}

// stillClock is a real Env whose clock stands still.
type stillClock struct {
	env.Env
	now time.Time
}

func (c stillClock) Now() time.Time { return c.now }

// leaseServer is a MySQL frontend on a core whose slots are capacity leases that it keeps idle
// between statements (as a worker's are while it has its cluster to itself), on eng. The clock
// of the lease guard and of the core (whose admission time judges an idle lease's take) stands
// still, so a released lease stays idle until the next statement takes it
// however long the client takes to send it: on the real clock it goes after idleLeaseHold
// (10 ms), a gap a loaded machine's client goroutine exceeds (then the loop finds no idle lease,
// and after loopHandOffsMax such statements in a row the session leaves the loop for
// loopBackoff commands).
func leaseServer(t *testing.T, ctx context.Context, eng *mysqlengine.Engine) string {
	t.Helper()
	e := env.Real(slog.New(slog.DiscardHandler))
	still := stillClock{Env: e, now: e.Now()}
	g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: still, Client: uncontendedStore{capacity.NewMemory()}, Holder: "w"})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(ctx)
	core := proxy.New(proxy.Options{Env: still, Registerer: prometheus.NewRegistry(), Guard: g})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "maria", Enabled: true, MaxRunningQueries: 8, Engine: eng}},
		Groups:   []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "maria"}}, MaxQueuedQueries: 100}},
		Fallback: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	return startServer(t, core, Options{})
}

// TestLoopRelaysLeaseTaggedStatements: a worker's statements run under capacity leases and
// carry their tag, which the event loop writes before the statement itself, so they are relayed
// there like any other (each one used to be handed to the session's goroutine, then the session
// left the loop: a worker's MySQL sessions ran at half the passthrough's qps). 40 statements:
// none handed over; the loop relays those whose lease it finds idle: all but the first (which
// acquires the lease the others reuse).
func TestLoopRelaysLeaseTaggedStatements(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addr := leaseServer(t, ctx, eng)
	c := oneConn(t, openDB(t, addr, testUser, "", "", ""))
	s := serverOf(t, addr)
	handed, relayed := s.LoopHandOvers(), s.LoopStatements()
	for i := range 40 {
		var n int
		if err := c.QueryRowContext(ctx, "SELECT 7").Scan(&n); err != nil || n != 7 {
			t.Fatalf("statement %d: %d, %v", i, n, err)
		}
	}
	if got := s.LoopHandOvers() - handed; got != 0 {
		t.Fatalf("the loop handed %d of 40 tagged statements over to the goroutine: want none", got)
	}
	if got := s.LoopStatements() - relayed; got != 39 {
		t.Fatalf("the loop relayed %d of 40 tagged statements: want all but the first", got)
	}
}

// TestLoopTagsLeasedStatementsForTheFence: a statement the loop relays under a capacity lease
// reaches the engine after its lease's tag comment, so the control plane's engine fence
// (mysqlengine.KillTagged, from the process list) finds it and stops it.
func TestLoopTagsLeasedStatementsForTheFence(t *testing.T) {
	eng, dsn, _ := frontendtest.MariaDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addr := leaseServer(t, ctx, eng)
	c := oneConn(t, openDB(t, addr, testUser, "", "", ""))
	s := serverOf(t, addr)
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	// The loop relays a statement whose lease it finds idle: a first one takes the lease off the
	// loop (leaseServer's lease guard keeps it idle from then on).
	if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	relayed := s.LoopStatements()
	marker := fmt.Sprintf("mylean_fence_%d", time.Now().UnixNano())
	type answer struct {
		v   int
		err error
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		var a answer
		a.err = c.QueryRowContext(ctx, "SELECT SLEEP(30) AS "+marker).Scan(&a.v)
		done <- a
	}()
	// In the process list until it is killed (or it ended first: the test fails below).
	var info string
	for len(done) == 0 {
		err := admin.QueryRowContext(ctx, "SELECT INFO FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()",
			"%"+marker+"%").Scan(&info)
		if err == nil {
			break
		}
		if err != sql.ErrNoRows {
			t.Fatalf("the statement in the process list: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling the engine's own view: no event to wait on
	}
	if info == "" {
		a := <-done
		t.Fatalf("the SLEEP ended (%d, %v) before it showed in the process list", a.v, a.err)
	}
	tag, _, ok := strings.Cut(strings.TrimPrefix(info, "/* "), " */ SELECT SLEEP(30)")
	if !strings.HasPrefix(info, "/* qf-lease:") || !ok {
		t.Fatalf("the engine runs %q: want the statement after its lease's tag comment", info)
	}
	if n, err := eng.KillTagged(ctx, []string{tag}); n != 1 || err != nil {
		t.Fatalf("KillTagged(%q): %d, %v", tag, n, err)
	}
	a := <-done
	// MariaDB ends a killed SLEEP with 1317 (interrupted), or with its result 1.
	if interrupted := a.err != nil && strings.Contains(a.err.Error(), "1317"); !interrupted && (a.err != nil || a.v != 1) {
		t.Fatalf("the killed SLEEP answered %d, %v after %v: want it interrupted", a.v, a.err, time.Since(start))
	}
	if got := s.LoopStatements() - relayed; got != 1 {
		t.Fatalf("the loop relayed %d of 1 leased statement", got)
	}
}

// TestLoopLostLeaseStopsOnlyItsStatement: on the event loop, a statement whose lease is lost is
// stopped with the lost lease's error; and a lost lease's cancel that lands after its statement
// ended leaves the session's next statement, under a lease of its own, alone. The lease guard's
// keeper takes a fenced lease's callbacks under its lock and runs them after letting go of it,
// by when the statement may have ended and the loop started the next one: the loop's cancel
// used to stop whatever ran then.
func TestLoopLostLeaseStopsOnlyItsStatement(t *testing.T) {
	guard := capacitytest.NewLosingGuard()
	f := coreServer(t, coreSetup{guard: guard})
	conn := loopConn(t, openDB(t, f.addr, testUser, "", f.dbName, ""))
	ctx := context.Background()
	lastSlot := func() *capacitytest.LosableSlot { s := guard.Slots(); return s[len(s)-1] }
	sleep := func(marker string, secs float64) <-chan error {
		done := make(chan error, 1)
		go func() {
			var n int
			err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT SLEEP(%g) AS %s", secs, marker)).Scan(&n)
			if err == nil && n != 0 {
				err = fmt.Errorf("SLEEP answered %d: interrupted", n)
			}
			done <- err
		}()
		engineThread(t, f.direct, marker) // running on the engine
		return done
	}

	var late func()
	onLoop(t, f.addr, 2, func() {
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
			t.Fatal(err)
		}
		late = lastSlot().LoseLater() // fenced as the statement ended; its cancel not yet run
		// Long enough to be running still when the late cancel lands, on a loaded machine too.
		done := sleep("qf_next_statement", 3)
		late()
		if err := <-done; err != nil {
			t.Fatalf("the next statement, its own lease kept, once the last one's lost lease landed: %v", err)
		}
	})

	start := time.Now()
	done := sleep("qf_lost_statement", 30)
	lastSlot().Lose()
	err := <-done
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1213 || !strings.Contains(me.Message, "capacity lease") || time.Since(start) > 20*time.Second {
		t.Fatalf("a statement whose lease was lost answered %v after %v: want the lost lease's error at once", err, time.Since(start))
	}
}
