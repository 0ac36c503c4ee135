package sim_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
	"github.com/queryflux/queryflux/sim/workload"
)

// pingWorld runs the built-in ping-pong workload with a crash, a restart, a partition and lossy
// links for a minute of virtual time and returns the trace hash.
func pingWorld(t testing.TB, seed uint64) (string, map[string]*workload.PingStats) {
	s := sim.New(sim.Opts{Seed: seed})
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
	return s.TraceHash(), stats
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
