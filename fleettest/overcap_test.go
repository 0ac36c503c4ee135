package fleettest

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// overCapCounted reads queryflux_capacity_over_cap_total{cluster="pg"} off the control plane's
// metrics (0 when the series is not there yet).
func overCapCounted(t *testing.T, apiAddr string) int {
	m := regexp.MustCompile(`(?m)^queryflux_capacity_over_cap_total\{cluster="pg"\} (\S+)$`).
		FindStringSubmatch(daemontest.Get(t, "http://"+apiAddr+"/metrics", ""))
	if m == nil {
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("over-cap counter %q: %v", m[1], err)
	}
	return int(n)
}

// TestControlPlaneCountsAGrantOverTheCap: two real control-plane replicas on one real
// PostgreSQL database, three real workers, a PostgreSQL cluster. Replica cp1 caps the cluster at
// 4; cp2 was left with a cap of 5 (a rollout half done, a mistake in one file). w1 and w2 are
// cp1's: w1 fills the cap with pg_sleep queries, w2 waits for slots, and for several lease terms
// the audit counts nothing. Then w3, cp2's worker, asks: cp2 grants it a fifth slot, five queries
// run on the engine, and cp1's audit notices within a few sweeps, whichever replica holds the
// sweep lock: queryflux_capacity_over_cap_total{cluster="pg"} counts it and cp1's log names the
// cluster, the leases held, the cap and who holds them.
func TestControlPlaneCountsAGrantOverTheCap(t *testing.T) {
	engineURL, db := engineDatabases(t)
	coordination := "coordination: {mode: controlPlane, leaseTtlSecs: 3, driftMarginSecs: 1, sweepEverySecs: 1}"
	cp1 := startEngineControlPlane(t, engineURL, db, coordination, engineCap, 120)
	cp2 := startEngineControlPlane(t, engineURL, db, coordination, engineCap+1, 120)
	ef := &engineFleet{fleet: cp1, engineDB: strings.TrimPrefix(engineURL.Path, "/"), workers: map[string]string{}}
	ef.workers["w1"], _ = startPGWorker(t, "w1", cp1.apiAddr, coordination, "")
	ef.workers["w2"], _ = startPGWorker(t, "w2", cp1.apiAddr, coordination, "")
	ef.workers["w3"], _ = startPGWorker(t, "w3", cp2.apiAddr, coordination, "")
	awaitPG(t, ef.workers["w1"], ef.workers["w2"], ef.workers["w3"])

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var s sampler
	wg.Add(1)
	go func() { defer wg.Done(); s.run(ctx, t, ef.engineDB) }()
	defer func() { cancel(); wg.Wait() }()
	var ran atomic.Int64
	total := func() int {
		n := 0
		for _, k := range ef.leases() {
			n += k
		}
		return n
	}
	ef.load(ctx, &wg, "w1", engineCap, &ran)
	daemontest.Eventually(t, 60*time.Second, "w1 runs 4 queries on the engine", func() bool {
		return ef.leases()["w1"] == engineCap && s.tagged.Load() == engineCap
	})
	ef.load(ctx, &wg, "w2", 2, &ran)
	// Several lease terms at the cap, slots changing hands as w1's queries end: no false count.
	time.Sleep(3 * sleepSecs * time.Second / 2)
	for _, cp := range []*fleet{cp1, cp2} {
		if n := overCapCounted(t, cp.apiAddr); n != 0 || s.maxSleeping.Load() > engineCap || total() > engineCap {
			t.Fatalf("at the cap, before any over-grant: %d counted over the cap, at most %d queries on the engine, %v leases (cap %d)\n%s",
				n, s.maxSleeping.Load(), ef.leases(), engineCap, daemontest.Tail(cp.cp.Output(), 3000))
		}
	}

	ef.load(ctx, &wg, "w3", 1, &ran)
	daemontest.Eventually(t, 60*time.Second, "w3 granted a slot over cp1's cap by cp2, and cp1's audit counting it", func() bool {
		return total() > engineCap && overCapCounted(t, cp1.apiAddr) >= 1
	})
	daemontest.Eventually(t, 30*time.Second, "the over-grant logged", func() bool {
		out := cp1.cp.Output()
		return strings.Contains(out, "more leases held than the cluster's cap") && strings.Contains(out, "cluster=pg held=5 cap=4")
	})
	daemontest.Eventually(t, 2*sleepSecs*time.Second, "five queries running on the engine", func() bool { return s.maxSleeping.Load() > engineCap })
	if n := overCapCounted(t, cp2.apiAddr); n != 0 {
		t.Errorf("cp2, whose cap is 5, counted %d over it", n)
	}
	t.Logf("leases %v, cp1 counted %d over the cap, at most %d queries on the engine (cap %d), %d queries ran",
		ef.leases(), overCapCounted(t, cp1.apiAddr), s.maxSleeping.Load(), engineCap, ran.Load())
}
