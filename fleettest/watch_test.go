package fleettest

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/workerapi"
)

// The contention watch on real daemons: a control plane in retry mode with one PostgreSQL
// cluster of cap 1, worker w1 running statements back to back (it reuses its one lease), and
// worker w2 asking for the cluster meanwhile.
//
// With the watch (the binary as built): a watch POSTed by name (capacity.PathWatch, asked to
// wait 8 s) is answered contended when w2 is denied, and w1, told so by its own watch, lets its
// lease go: w2's statement runs. While w1 reuses its lease the control plane's store sees no
// renewal checks (leases of 30 s are renewed every 10 s).
//
// Against a control plane without the watch's route (assembly.TestNoContentionWatchEnv, as one
// that predates it): the watch is 404, w1 logs that it falls back, its keeper checks with
// renewals (many of them while it reuses), and w2's statement still runs.
func TestContentionWatchOnRealDaemons(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noWatch bool
	}{{"watch", false}, {"control plane without the watch", true}} {
		t.Run(tc.name, func(t *testing.T) { contentionWatch(t, tc.noWatch) })
	}
}

func contentionWatch(t *testing.T, noWatch bool) {
	engineURL, db := engineDatabases(t)
	const coordination = "coordination: {mode: controlPlane, leaseTtlSecs: 30, driftMarginSecs: 2, sweepEverySecs: 1}"
	f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
	if noWatch {
		f.env = []string{assembly.TestNoContentionWatchEnv + "=1"}
	}
	f.cpConfig = engineControlPlane(t, f, engineURL, db, coordination, 1, 60, "")
	f.startControlPlane()
	w1, w1p := startPGWorker(t, "w1", f.apiAddr, coordination, "")
	w2, _ := startPGWorker(t, "w2", f.apiAddr, coordination, "")
	awaitPG(t, w1, w2)

	// w1 runs statements back to back until the test ends.
	ctx, cancel := context.WithCancel(context.Background())
	busy := make(chan struct{})
	var ran atomic.Int64
	go func() {
		defer close(busy)
		c, err := pgx.Connect(ctx, "postgres://queryflux@"+w1+"/pg?sslmode=disable&connect_timeout=5")
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		for ctx.Err() == nil {
			if err := c.QueryRow(ctx, "SELECT 1").Scan(new(int)); err != nil && ctx.Err() == nil {
				t.Errorf("w1's statement: %v", err)
				return
			}
			ran.Add(1)
		}
	}()
	defer func() { cancel(); <-busy }()
	daemontest.Eventually(t, 30*time.Second, "w1 runs statements", func() bool { return ran.Load() >= 50 })

	// While w1 reuses its lease: renewal checks only against a control plane without the watch.
	renewsBefore, from := storeCalls(t, f, capacity.StoreRenew), ran.Load()
	time.Sleep(2 * time.Second)
	renews, statements := storeCalls(t, f, capacity.StoreRenew)-renewsBefore, ran.Load()-from
	t.Logf("while w1 ran %d statements on its reused lease, the control plane's store took %d renewals", statements, renews)
	switch {
	case statements < 20:
		t.Fatalf("w1 ran only %d statements in 2 s: the test did not reuse a lease", statements)
	case !noWatch && renews > 5:
		t.Errorf("%d renewals while w1 reused its lease under a contention watch: want at most 5 (its lease's own renewal)", renews)
	case noWatch && renews <= 5:
		// The keeper checks every 10 ms, about 200 in 2 s at rest; at load 25 CI saw 9.
		t.Errorf("%d renewals while w1 reused its lease against a control plane without the watch: want the keeper's checks (more than 5)", renews)
	}

	// A watch asked by name, held while w2 is denied.
	token := register(t, f, "probe")
	type answer struct {
		code int
		body string
	}
	watched := make(chan answer, 1)
	go func() {
		code, _, body := daemontest.Call("POST", "http://"+f.apiAddr+capacity.PathWatch, token, `{"clusters":["pg"],"waitMillis":8000}`,
			map[string]string{"Content-Type": capacity.MediaJSON})
		watched <- answer{code, body}
	}()
	time.Sleep(200 * time.Millisecond) // the watch is held
	c2, err := pgx.Connect(context.Background(), "postgres://queryflux@"+w2+"/pg?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(context.Background())
	qctx, qcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer qcancel()
	asked := time.Now()
	if err := c2.QueryRow(qctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Fatalf("w2's statement while w1 reuses the only slot: %v", err)
	}
	t.Logf("w2's statement ran %v after it was sent", time.Since(asked).Round(time.Millisecond))
	a := <-watched
	if noWatch {
		if a.code != 404 {
			t.Errorf("the watch against a control plane without it: %d %s, want 404", a.code, a.body)
		}
		if out := w1p.Output(); !regexp.MustCompile("predates the contention watch").MatchString(out) {
			t.Errorf("w1 never said it fell back to renewal checks:\n%s", daemontest.Tail(out, 3000))
		}
		return
	}
	var resp capacity.WatchResponse
	if a.code != 200 || json.Unmarshal([]byte(a.body), &resp) != nil || len(resp.Uncontended) != 0 {
		t.Errorf("the watch held while w2 was denied: %d %s, want pg contended", a.code, a.body)
	}
}

// storeCalls is how many calls of op the control plane's lease store took so far (its
// queryflux_capacity_store_seconds histogram's count).
func storeCalls(t *testing.T, f *fleet, op string) int {
	t.Helper()
	metrics := daemontest.Get(t, "http://"+f.apiAddr+"/metrics", "")
	m := regexp.MustCompile(`queryflux_capacity_store_seconds_count\{op="` + op + `"\} (\d+)`).FindStringSubmatch(metrics)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// register registers a worker called name with the bootstrap secret and returns its token.
func register(t *testing.T, f *fleet, name string) string {
	t.Helper()
	code, eb, body := f.post(workerapi.PathRegister, workerSecret, workerapi.MediaWorkerRegister, `{"name":"`+name+`","version":"1"}`)
	var reg workerapi.RegisterResponse
	if code != 200 || json.Unmarshal(body, &reg) != nil {
		t.Fatalf("registering %s: %d %+v", name, code, eb)
	}
	return reg.Token
}
