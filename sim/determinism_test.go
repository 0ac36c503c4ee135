package sim_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
	"github.com/queryflux/queryflux/sim/workload"
)

// pingWorld runs the built-in ping-pong workload with a crash, a restart, a partition and lossy
// links for a minute of virtual time and returns the trace hash.
func pingWorld(t testing.TB, seed uint64) (string, map[string]*workload.PingStats) {
	h, st, _ := noisyPingWorld(t, seed, false)
	return h, st
}

// noisyPingWorld is pingWorld, with the Go scheduler yielded at random at task switches when
// noise is set; it also returns how often it was.
func noisyPingWorld(t testing.TB, seed uint64, noise bool) (string, map[string]*workload.PingStats, uint64) {
	s := sim.New(sim.Opts{Seed: seed, Noise: noise})
	s.Net().SetDefault(sim.Link{Latency: sim.Exponential(time.Millisecond, 2*time.Millisecond), Drop: 0.01})
	stats := workload.PingPong(s, []string{"a", "b", "c", "d"})
	s.At(10*time.Second, func() { s.Node("b").Crash() })
	s.At(20*time.Second, func() { s.Node("b").Restart() })
	s.At(30*time.Second, func() { s.Net().PartitionBoth("a", "c") })
	s.At(40*time.Second, func() { s.Net().HealAll() })
	s.At(45*time.Second, func() { _ = s.Node("d").SetClock(time.Second, 1.1) })
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	return s.TraceHash(), stats, s.NoiseYields()
}

// TestNoiseKeepsTheTrace: scheduler noise yields the Go scheduler at task switches, and a
// deterministic world's trace does not notice.
func TestNoiseKeepsTheTrace(t *testing.T) {
	quiet, _, none := noisyPingWorld(t, 3, false)
	noisy, _, yields := noisyPingWorld(t, 3, true)
	if quiet != noisy {
		t.Fatalf("seed 3: %s without noise, %s with", quiet, noisy)
	}
	if none != 0 || yields < 1000 {
		t.Fatalf("yields: %d without noise, %d with (want none, then many)", none, yields)
	}
}

func TestSameSeedSameHash(t *testing.T) {
	h1, st := pingWorld(t, 1)
	h2, _ := pingWorld(t, 1)
	if h1 != h2 {
		t.Fatalf("seed 1 gave %s then %s", h1, h2)
	}
	if st["a"].OK < 100 || st["a"].Failed == 0 {
		t.Fatalf("workload did too little to mean anything: %+v", *st["a"])
	}
}

func TestDifferentSeedsDifferentHash(t *testing.T) {
	h1, _ := pingWorld(t, 1)
	h2, _ := pingWorld(t, 2)
	if h1 == h2 {
		t.Fatalf("seeds 1 and 2 both gave %s", h1)
	}
}

// TestHashIndependentOfGOMAXPROCS re-executes this test binary with GOMAXPROCS=1 and 4.
func TestHashIndependentOfGOMAXPROCS(t *testing.T) {
	if os.Getenv("SIM_HASH_CHILD") != "" {
		h, _ := pingWorld(t, 7)
		os.Stdout.WriteString("HASH=" + h + "\n")
		return
	}
	var hashes []string
	for _, procs := range []int{1, 4} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHashIndependentOfGOMAXPROCS$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SIM_HASH_CHILD=1", "GOMAXPROCS="+strconv.Itoa(procs))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child GOMAXPROCS=%d: %v\n%s", procs, err, out)
		}
		_, h, ok := strings.Cut(string(out), "HASH=")
		if !ok {
			t.Fatalf("child printed no hash:\n%s", out)
		}
		hashes = append(hashes, strings.Fields(h)[0])
	}
	local, _ := pingWorld(t, 7)
	if hashes[0] != hashes[1] || hashes[0] != local {
		t.Fatalf("hashes differ: GOMAXPROCS=1 %s, 4 %s, in-process %s", hashes[0], hashes[1], local)
	}
}

// TestStallWatchdogNamesTheSeed: a lock held across an Env call deadlocks the world; the watchdog
// turns the hang into a crash naming the seed and the blocked task (run in a child process).
func TestStallWatchdogNamesTheSeed(t *testing.T) {
	if os.Getenv("SIM_STALL_CHILD") != "" {
		s := sim.New(sim.Opts{Seed: 77, StallTimeout: 500 * time.Millisecond})
		n := s.AddNode("a", nil)
		var mu sync.Mutex
		for i := range 2 {
			s.Spawn(n, fmt.Sprint("locker-", i), func() {
				mu.Lock()
				_ = n.Env().Sleep(context.Background(), time.Second) // the contract violation
				mu.Unlock()
			})
		}
		_ = s.Run(time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStallWatchdogNamesTheSeed$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SIM_STALL_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the stalled child exited cleanly:\n%s", out)
	}
	for _, want := range []string{"sim seed 77", "no progress", `task "locker-`, "mutex held across an Env call"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%.2000s", want, out)
		}
	}
}
