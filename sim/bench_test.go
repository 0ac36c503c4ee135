package sim_test

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/scenarios"
	"github.com/queryflux/queryflux/sim"
	"github.com/queryflux/queryflux/sim/workload"
)

// BenchmarkTaskSwitch measures scheduling decisions per second: 100 tasks on one node each
// sleeping 1ms in a loop, so every step is a coroutine switch into a task and back.
func BenchmarkTaskSwitch(b *testing.B) {
	s := sim.New(sim.Opts{Seed: 1})
	n := s.AddNode("a", nil)
	for i := range 100 {
		s.Spawn(n, fmt.Sprint("t", i), func() {
			for {
				if n.Env().Sleep(context.Background(), time.Millisecond) != nil {
					return
				}
			}
		})
	}
	b.ResetTimer()
	start := s.Steps()
	for s.Steps()-start < uint64(b.N) {
		if !s.Step() {
			b.Fatal(s.Err())
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "switches/s")
}

// simGC sets the garbage collector the way qfsim runs the simulator (GOGC=400 unless GOGC is
// set): the runner allocates much short-lived garbage and keeps thousands of coroutine stacks.
func simGC(b *testing.B) {
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(400)
		b.Cleanup(func() { debug.SetGCPercent(old) })
	}
}

// BenchmarkHeartbeatHour runs one virtual hour of N stand-in workers heartbeating a control plane
// every 5s over simnet (JSON over simulated HTTP) and reports virtual seconds per wall second.
func BenchmarkHeartbeatHour(b *testing.B) {
	for _, workers := range []int{100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			simGC(b)
			for range b.N {
				s := sim.New(sim.Opts{Seed: 1})
				f := workload.Heartbeats(s, workers, 5*time.Second)
				t0 := time.Now()
				if err := s.Run(time.Hour); err != nil {
					b.Fatal(err)
				}
				wall := time.Since(t0)
				want := workers * 700
				if f.Received < want {
					b.Fatalf("only %d heartbeats arrived, want >= %d", f.Received, want)
				}
				b.ReportMetric(time.Hour.Seconds()/wall.Seconds(), "virtual-s/wall-s")
				b.ReportMetric(float64(f.Received)/wall.Seconds(), "heartbeats/s")
			}
		})
	}
}

// BenchmarkFleetHour runs one virtual hour of the real roles: one control plane and N workers
// (production intervals: heartbeat 10s, self-health probe 1s) through the scenario runner, and
// reports virtual seconds per wall second.
func BenchmarkFleetHour(b *testing.B) {
	for _, workers := range []int{100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			sc, err := scenarios.Parse("bench.yaml", []byte(fmt.Sprintf(`
duration: 1h
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: %d, labels: {zone: a}}]
checks:
  - registryState: {worker: workers, state: healthy, from: 59m, mode: always}
`, workers)))
			if err != nil {
				b.Fatal(err)
			}
			simGC(b)
			for range b.N {
				res := scenarios.Run(sc, 1, scenarios.RunOpts{})
				if !res.Pass() {
					b.Fatalf("%+v", res.Checks)
				}
				b.ReportMetric(res.VirtualSeconds/res.WallSeconds, "virtual-s/wall-s")
				b.ReportMetric(float64(res.Events)/res.WallSeconds, "events/s")
			}
		})
	}
}

// BenchmarkPlanFleet runs scenarios/plan-fleet.yaml (20 virtual seconds: one control plane, the
// real worker roles, leases on four clusters, each worker a Poisson stream into two groups) with
// its fleet resized to N workers, so the load grows with the fleet as plan-fleet's rates are per
// worker. It reports virtual seconds per wall second and per CPU second of the process (the
// runner is single-threaded; the garbage collector is not), and the process's peak RSS per
// worker. Goals: 10,000 workers at >= 1x real time in <= 150 KB per worker; 1,000 at >= 50x.
func BenchmarkPlanFleet(b *testing.B) {
	sc, err := scenarios.Load("../scenarios/plan-fleet.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range []struct {
		workers int
		speed   float64 // virtual seconds per wall second
		kb      float64 // peak RSS per worker
	}{{1000, 50, 0}, {10000, 1, 150}} {
		b.Run(fmt.Sprintf("workers=%d", g.workers), func(b *testing.B) {
			v, err := sc.Variant(g.workers, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			simGC(b)
			for range b.N {
				cpu0 := cpuTime()
				res := scenarios.Run(v, 1, scenarios.RunOpts{})
				cpu := cpuTime() - cpu0
				if !res.Pass() {
					b.Fatalf("%+v", res.Checks)
				}
				speed := res.VirtualSeconds / res.WallSeconds
				kb := float64(peakRSS()) / 1024 / float64(g.workers)
				b.ReportMetric(speed, "virtual-s/wall-s")
				b.ReportMetric(res.VirtualSeconds/cpu.Seconds(), "virtual-s/cpu-s")
				b.ReportMetric(cpu.Seconds(), "cpu-s")
				b.ReportMetric(kb, "peak-KB/worker")
				goal := fmt.Sprintf("goal %d workers >= %gx real time", g.workers, g.speed)
				met := speed >= g.speed
				if g.kb > 0 {
					goal += fmt.Sprintf(" and <= %g KB per worker", g.kb)
					met = met && kb <= g.kb
				}
				verdict := "NOT MET"
				if met {
					verdict = "met"
				}
				b.Logf("%s: %s (%.1fx wall, %.1fx per CPU second, %.0f KB per worker)", goal, verdict, speed, res.VirtualSeconds/cpu.Seconds(), kb)
			}
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is the process's peak resident set in bytes (it covers the runs before this one: run
// the larger fleet last).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}
