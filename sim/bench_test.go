package sim_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/gcfloor"
	"github.com/queryflux/queryflux/internal/hugeheap"
	"github.com/queryflux/queryflux/scenarios"
	"github.com/queryflux/queryflux/sim"
	"github.com/queryflux/queryflux/sim/workload"
)

// The benchmarks' heap is advised for huge pages as qfsim's is; first, as Reserve needs.
func init() { hugeheap.Reserve(sim.HugeHeap) }

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

// BenchmarkHTTPRoundTrip is one simulated HTTP round trip as a role makes it: a task POSTs a
// small JSON body (with a deadline) to another node's handler, which reads it and answers with
// JSON, through simnet (a message each way, a handler task, the trace hash). Run it with
// -benchmem: the allocations per round trip are the figure.
func BenchmarkHTTPRoundTrip(b *testing.B) {
	s := sim.New(sim.Opts{Seed: 1})
	s.AddNode("srv", func(n *sim.Node) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		})
	})
	c := s.AddNode("cli", nil)
	body := []byte(`{"worker":"w-1","state":"healthy","inflight":3}`)
	b.ReportAllocs()
	s.Spawn(c, "bench", func() {
		e := c.Env()
		_ = e.Sleep(context.Background(), time.Second) // let srv boot
		b.ResetTimer()
		for range b.N {
			ctx, cancel := e.WithTimeout(c.Ctx(), time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://srv/v1/heartbeat", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Client().Do(req)
			if err != nil {
				b.Error(err)
				cancel()
				return
			}
			if got, _ := io.ReadAll(resp.Body); len(got) != len(body) {
				b.Errorf("answer %q, want the request's body back", got)
			}
			resp.Body.Close()
			cancel()
		}
		b.StopTimer()
	})
	if err := s.Run(1000 * time.Hour); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHeartbeatHour runs one virtual hour of N stand-in workers heartbeating a control plane
// every 5s over simnet (JSON over simulated HTTP) and reports virtual seconds per wall second.
func BenchmarkHeartbeatHour(b *testing.B) {
	for _, workers := range []int{100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
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
// worker. Its virtual seconds are all the simulator ran: the file's 20 and the leak check's
// settle after them (Result.SettleSeconds: the fleet runs on while the stopped clients' last
// queries end), as its wall covers both. It reports virtual seconds per wall second and per CPU second of the process (the
// runner is single-threaded; the garbage collector is not), and the process's peak RSS per
// worker, and virtual seconds per CPU second of the runner's thread alone (what a machine with
// a core to spare for the collector would run at: wall time on a busy machine says nothing, and
// the process's CPU counts the collector's background work, which runs beside the runner).
// Goals: 1,000 workers at >= 50x real time; 10,000 at >= 1x in <= 150 KB per worker,
// with the clusters' caps grown with the fleet (cap x workers / 1,000: each slot sees
// plan-fleet's load, and the fleet runs where it was planned, not six times over capacity). The
// last run keeps plan-fleet's caps at 3,000 workers for 12 virtual seconds (three times over
// capacity: every waiting worker asks again every 50 ms), for its CPU per virtual second; it has
// no goal. Each run is one command: qfsim run scenarios/plan-fleet.yaml --workers N [--cap C]
// [--duration D], and runs with the collector's headroom floor qfsim keeps (sim.GCFloor) and its
// heap advised for huge pages as qfsim's is (sim.HugeHeap).
func BenchmarkPlanFleet(b *testing.B) {
	sc, err := scenarios.Load("../scenarios/plan-fleet.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if f := flag.Lookup("test.memprofile"); f == nil || f.Value.String() == "" {
		runtime.MemProfileRate = 0 // as qfsim samples no allocation unless asked for a heap profile
	}
	for _, g := range []struct {
		name     string
		workers  int
		cap      int           // every cluster's cap; 0 keeps the file's
		duration time.Duration // 0 keeps the file's
		speed    float64       // goal: virtual seconds per wall second (0: none)
		kb       float64       // goal: peak RSS per worker (0: none)
	}{
		{"workers=1000", 1000, 0, 0, 50, 0},
		{"workers=10000/cap=400", 10000, 400, 0, 1, 150},
		{"workers=3000/12s", 3000, 0, 12 * time.Second, 0, 0},
	} {
		b.Run(g.name, func(b *testing.B) {
			var caps map[string]int
			if g.cap > 0 {
				caps = map[string]int{"": g.cap}
			}
			v, err := sc.Variant(g.workers, caps, nil)
			if err == nil && g.duration > 0 {
				v, err = v.WithDuration(g.duration)
			}
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				stop := gcfloor.Start(sim.GCFloor) // as qfsim runs
				// The runner on a thread of its own, so that thread's CPU time is the runner's:
				// every task runs there (a coroutine runs on its caller's thread), the
				// collector's background work does not.
				runtime.LockOSThread()
				cpu0, runner0 := cpuTime(), threadCPUTime()
				res := scenarios.Run(v, 1, scenarios.RunOpts{})
				cpu, runner := cpuTime()-cpu0, threadCPUTime()-runner0
				runtime.UnlockOSThread()
				stop()
				if !res.Pass() {
					b.Fatalf("%+v", res.Checks)
				}
				speed := res.VirtualSeconds / res.WallSeconds
				kb := float64(peakRSS()) / 1024 / float64(g.workers)
				b.ReportMetric(speed, "virtual-s/wall-s")
				b.ReportMetric(res.VirtualSeconds/cpu.Seconds(), "virtual-s/cpu-s")
				b.ReportMetric(cpu.Seconds(), "cpu-s")
				b.ReportMetric(runner.Seconds(), "runner-cpu-s")
				b.ReportMetric(kb, "peak-KB/worker")
				b.Logf("%d workers, %g virtual s (%g of them the settle): %.2fx wall, %.2fx per CPU second, %.2fx per runner CPU second, %.0f KB per worker peak; %s",
					g.workers, res.VirtualSeconds, res.SettleSeconds, speed, res.VirtualSeconds/cpu.Seconds(), res.VirtualSeconds/runner.Seconds(), kb,
					verdict(g.workers, g.speed, g.kb, speed, kb))
			}
		})
	}
}

// verdict is a met/not-met line for a plan-fleet goal (speed and kb 0: no goal).
func verdict(workers int, goalSpeed, goalKB, speed, kb float64) string {
	if goalSpeed == 0 {
		return "no goal"
	}
	goal := fmt.Sprintf("goal %d workers >= %gx real time", workers, goalSpeed)
	met := speed >= goalSpeed
	if goalKB > 0 {
		goal += fmt.Sprintf(" and <= %g KB per worker", goalKB)
		met = met && kb <= goalKB
	}
	if met {
		return goal + ": met"
	}
	return goal + ": NOT MET"
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPUTime is the calling thread's user and system CPU time so far (lock the goroutine to
// its thread around the span measured).
func threadCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is the process's peak resident set in bytes (it covers the runs before this one: the
// runs with a memory goal come before larger ones).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}
