package fleettest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/query"
)

// frozenSleepSecs is how long the frozen worker's clients' statements would run: longer than
// the freeze, so that each is still running on the engine, had nobody stopped it, when the
// worker resumes.
const frozenSleepSecs = 60

// TestClientOfAFrozenWorkerSeesItsLeaseLost: w1 runs the cap's worth of clients' statements on
// PostgreSQL and is frozen (SIGSTOP) while they run, past its leases' terms: the control plane
// takes the leases back, fences their work on the engine and grants the slots to w2, whose
// clients fill them. When w1 resumes (SIGCONT), each of its clients, still waiting on its
// statement, gets the lost lease's error (40000) or its result, never a hang nor another error;
// pg_stat_activity, sampled every 50 ms, never shows more than the cap running.
func TestClientOfAFrozenWorkerSeesItsLeaseLost(t *testing.T) {
	frozenWorkerClients(t, pgClient)
}

// frozenClient is one kind of client of the frozen worker: the workers' frontends it needs
// beside PostgreSQL's, how it runs a statement on a worker, and how it reads the lost lease's
// error (the message, ok) from what it got.
type frozenClient struct {
	frontends []string
	run       func(ctx context.Context, ef *engineFleet, worker, stmt string) error
	leaseLost func(err error) (message string, ok bool)
}

// pgClient is pgx on the PostgreSQL frontend; the lost lease is query.CodeLeaseLost.
var pgClient = frozenClient{
	run: func(ctx context.Context, ef *engineFleet, worker, stmt string) error {
		return ef.runOnce(ctx, worker, stmt)
	},
	leaseLost: func(err error) (string, bool) {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == query.CodeLeaseLost {
			return pe.Message, true
		}
		return "", false
	},
}

// frozenWorkerClients is TestClientOfAFrozenWorkerSeesItsLeaseLost with client's kind of client.
func frozenWorkerClients(t *testing.T, client frozenClient) {
	ef := newEngineFleetServing(t, client.frontends...)
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

	answers := make(chan error, engineCap)
	for i := range engineCap {
		go func() {
			answers <- client.run(ctx, ef, "w1", fmt.Sprintf("SELECT pg_sleep(%d) /* frozen client %d */", frozenSleepSecs, i))
		}()
	}
	wait("w1 runs 4 statements on the engine", func() bool { return ef.leases()["w1"] == engineCap && s.tagged.Load() == engineCap })
	var ran atomic.Int64
	ef.load(ctx, &wg, "w2", engineCap, &ran)
	time.Sleep(time.Second) // w2's clients queue for the whole cap
	ef.procs["w1"].Signal(syscall.SIGSTOP)
	frozen := time.Now()
	t.Logf("w1 frozen with 4 statements running")
	wait("w2 holds the whole cap after w1's leases were taken back and fenced", func() bool {
		ls := ef.leases()
		return ls["w2"] == engineCap && ls["w1"] == 0 && s.tagged.Load() == engineCap
	})
	// w1 stays frozen past a whole lease term more: its timers all come due together when it
	// resumes, as after a long pause of a VM or a GC.
	time.Sleep(leaseTTLSecs * time.Second)
	ef.procs["w1"].Signal(syscall.SIGCONT)
	resumed := time.Now()
	t.Logf("w1 resumed after %v frozen", resumed.Sub(frozen).Round(time.Millisecond))

	var lost, results int
	for range engineCap {
		select {
		case err := <-answers:
			message, isLost := client.leaseLost(err)
			switch {
			case err == nil:
				results++
			case isLost:
				lost++
				if !strings.Contains(message, "on cluster pg was lost") {
					t.Errorf("a lost lease's message does not name its cluster: %v", message)
				}
			default:
				t.Errorf("a client of the frozen worker got %v, want the lost lease's error or its result", err)
			}
		case <-time.After(45 * time.Second):
			t.Fatalf("a client of the frozen worker still waits %v after it resumed", time.Since(resumed).Round(time.Second))
		}
	}
	t.Logf("w1's clients: %d lost leases, %d results, all within %v of the resume",
		lost, results, time.Since(resumed).Round(time.Millisecond))
	// w2's clients keep the cap busy a moment longer: a slot w1 wrongly kept would show now.
	time.Sleep(2 * time.Second)
	t.Logf("engine samples %d: at most %d tagged queries running, %d pg_sleep backends (cap %d)",
		s.samples.Load(), s.maxTagged.Load(), s.maxSleeping.Load(), engineCap)
	if s.maxTagged.Load() > engineCap || s.maxSleeping.Load() > engineCap {
		t.Fatalf("the engine ran more than the cap: %d tagged, %d pg_sleep, cap %d", s.maxTagged.Load(), s.maxSleeping.Load(), engineCap)
	}
	if ran.Load() == 0 && s.tagged.Load() == 0 {
		t.Fatalf("w2's clients never ran after w1 was frozen")
	}
}

// runOnce connects a client to worker name and runs stmt once, returning its error.
func (ef *engineFleet) runOnce(ctx context.Context, name, stmt string) error {
	c, err := pgx.Connect(ctx, "postgres://queryflux@"+ef.workers[name]+"/pg?sslmode=disable&connect_timeout=5")
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, stmt)
	return err
}
