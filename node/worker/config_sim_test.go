package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/sim"
	"pgregory.net/rapid"
)

// cfgSimFleet is a control plane serving config from an in-memory source and workers following
// it, in the simulator. desired is what the source holds (cap -1 means an invalid config).
type cfgSimFleet struct {
	t       *testing.T
	s       *sim.Sim
	desired int
	wake    env.Signal // the current control-plane incarnation's
	syncs   map[string]*worker.ConfigSync
}

func cfgSimConfig(capacity int) *config.Config {
	fallback := "g"
	if capacity < 0 {
		capacity, fallback = 1, "nowhere" // compiles nowhere: the fallback names no group
	}
	cfg := &config.Config{
		Clusters:        config.NamedList[config.Cluster]{{Name: "c", Engine: config.EngineSim, MaxRunningQueries: capacity}},
		ClusterGroups:   config.NamedList[config.ClusterGroup]{{Name: "g", Members: []string{"c"}}},
		RoutingFallback: fallback,
	}
	config.ApplyDefaults(cfg)
	return cfg
}

// cfgSimSnapshot builds the snapshot of cfgSimConfig(capacity), bypassing Compile for invalid ones
// (a control plane with a bug, or other compilers, could serve it).
func cfgSimSnapshot(capacity int, at time.Time) (*snapshot.WorkerSnapshotV1, error) {
	if capacity >= 0 {
		return snapshot.Build(cfgSimConfig(capacity), snapshot.Options{ConfirmedAt: at})
	}
	s, err := snapshot.Build(cfgSimConfig(1), snapshot.Options{ConfirmedAt: at})
	if err != nil {
		return nil, err
	}
	s.RoutingFallback = "nowhere"
	s.Revision, err = snapshot.Revision(s)
	return s, err
}

func newCfgSimFleet(t *testing.T, seed uint64, names ...string) *cfgSimFleet {
	t.Helper()
	f := &cfgSimFleet{t: t, s: sim.New(sim.Opts{Seed: seed}), desired: 1, syncs: map[string]*worker.ConfigSync{}}
	t.Cleanup(f.s.Close)
	f.s.Net().SetDefault(sim.Link{Latency: sim.Exponential(time.Millisecond, 5*time.Millisecond)})
	f.s.AddNode("cp", func(n *sim.Node) http.Handler {
		e := n.Env()
		cp := controlplane.New(e, controlplane.Config{WorkerSecret: "s3cret",
			HeartbeatInterval: 10 * time.Second, StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second}, registry.NewMemory())
		srv := controlplane.NewConfigServer(e, 20*time.Second)
		srv.Mount(cp)
		f.wake = e.NewSignal()
		src := func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error) {
			return cfgSimSnapshot(f.desired, e.Now())
		}
		e.Go(n.Ctx(), "config-refresh", func(ctx context.Context) {
			_ = srv.RunConfigRefresh(ctx, src, f.wake, 5*time.Second)
		})
		if err := cp.Start(n.Ctx()); err != nil {
			t.Errorf("control plane start: %v", err)
		}
		return cp.Handler()
	})
	for _, name := range names {
		f.s.AddNode(name, func(n *sim.Node) http.Handler {
			w := worker.New(n.Env(), worker.Config{ControlPlaneURL: "http://cp", Secret: "s3cret", Name: n.Name()}, n.Client())
			cs := worker.NewConfigSync(w, worker.ConfigSyncOptions{PollTimeout: 20 * time.Second,
				BackoffMin: time.Second, BackoffMax: 5 * time.Second})
			n.Env().Go(n.Ctx(), "config-sync", func(ctx context.Context) { _ = cs.Run(ctx) })
			w.Start(n.Ctx())
			f.syncs[n.Name()] = cs
			return w.OpsHandler()
		})
	}
	return f
}

func (f *cfgSimFleet) set(at time.Duration, capacity int) {
	f.s.At(at, func() {
		f.desired = capacity
		f.wake.Notify()
	})
}

// activeCap is the cap of cluster c in the worker's active config, checking on the way that the
// config and the snapshot it came from agree (nothing half-applied). -1 when none is active.
func (f *cfgSimFleet) activeCap(name string) (int, error) {
	cfg, snap := f.syncs[name].Active()
	if cfg == nil && snap == nil {
		return -1, nil
	}
	if cfg == nil || snap == nil || cfg.Clusters[0].MaxRunningQueries != snap.Clusters[0].MaxRunningQueries {
		return 0, fmt.Errorf("%s: config and snapshot disagree", name)
	}
	return cfg.Clusters[0].MaxRunningQueries, nil
}

// TestSimConfigSync: workers follow config changes within a second; a partitioned worker keeps
// its last good config and catches up after healing; an invalid revision is rejected everywhere
// and changes nothing; a control-plane crash changes nothing; at every second of virtual time
// each worker runs a whole, valid config.
func TestSimConfigSync(t *testing.T) {
	f := newCfgSimFleet(t, 11, "w1", "w2", "w3")
	var problems []string
	expect := func(at time.Duration, name string, want int) {
		f.s.At(at, func() {
			if got, err := f.activeCap(name); err != nil || got != want {
				problems = append(problems, fmt.Sprintf("%s %s: cap %d (%v), want %d", at, name, got, err, want))
			}
		})
	}
	for at := time.Second; at < 400*time.Second; at += time.Second {
		f.s.At(at, func() {
			for _, name := range []string{"w1", "w2", "w3"} {
				if _, err := f.activeCap(name); err != nil {
					problems = append(problems, err.Error())
				}
			}
		})
	}
	for _, w := range []string{"w1", "w2", "w3"} {
		expect(10*time.Second, w, 1)
	}
	f.set(60*time.Second, 2)
	for _, w := range []string{"w1", "w2", "w3"} {
		expect(61*time.Second, w, 2) // pushed through the long-poll, not found by a timer
	}
	f.s.At(90*time.Second, func() { f.s.Net().PartitionBoth("w2", "cp") })
	f.set(100*time.Second, 3)
	expect(101*time.Second, "w1", 3)
	expect(150*time.Second, "w2", 2) // cut off: keeps its last good config
	f.s.At(200*time.Second, func() { f.s.Net().HealAll() })
	expect(230*time.Second, "w2", 3) // backoff is at most 5s, the poll timeout 20s
	f.set(250*time.Second, -1)       // an invalid revision
	for _, w := range []string{"w1", "w2", "w3"} {
		expect(260*time.Second, w, 3)
	}
	f.s.At(260*time.Second, func() {
		for name, cs := range f.syncs {
			if rev, _ := cs.Rejected(); rev == "" {
				problems = append(problems, name+": the invalid revision was not rejected")
			}
		}
	})
	f.s.At(280*time.Second, func() { f.s.Node("cp").Crash() })
	f.set(290*time.Second, 5) // edited while the control plane is down
	f.s.At(300*time.Second, func() { f.s.Node("cp").Restart() })
	for _, w := range []string{"w1", "w2", "w3"} {
		expect(295*time.Second, w, 3)
		expect(340*time.Second, w, 5)
	}
	if err := f.s.Run(400 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestSimConfigSyncSameSeedSameTrace(t *testing.T) {
	run := func(seed uint64) string {
		f := newCfgSimFleet(t, seed, "w1", "w2")
		f.set(30*time.Second, 2)
		f.s.At(40*time.Second, func() { f.s.Net().PartitionBoth("w1", "cp") })
		f.set(50*time.Second, 3)
		f.s.At(70*time.Second, func() { f.s.Net().HealAll() })
		if err := f.s.Run(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		return f.s.TraceHash()
	}
	for _, seed := range []uint64{1, 2} {
		if a, b := run(seed), run(seed); a != b {
			t.Fatalf("seed %d: trace %s then %s", seed, a, b)
		}
	}
}

// TestSimConfigSyncConverges draws timelines of config edits (some invalid), partitions and
// control-plane crashes. At every second no worker runs a half-applied or invalid config, and
// within a minute of the faults healing every worker runs the last valid config.
func TestSimConfigSyncConverges(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		workers := []string{"w1", "w2", "w3"}
		f := newCfgSimFleet(t, rapid.Uint64().Draw(rt, "seed"), workers...)
		defer f.s.Close() // free each world's coroutines now, not at the end of the test
		lastValid := 1
		cpDown := false
		var problems []string
		for i := range rapid.IntRange(0, 12).Draw(rt, "actions") {
			at := time.Duration(rapid.IntRange(1, 300).Draw(rt, fmt.Sprint("at", i))) * time.Second
			switch rapid.IntRange(0, 4).Draw(rt, fmt.Sprint("kind", i)) {
			case 0, 1:
				c := rapid.IntRange(-1, 5).Draw(rt, fmt.Sprint("cap", i))
				f.s.At(at, func() {
					f.desired = c
					f.wake.Notify()
				})
			case 2:
				w := rapid.SampledFrom(workers).Draw(rt, fmt.Sprint("w", i))
				f.s.At(at, func() { f.s.Net().PartitionBoth(w, "cp") })
			case 3:
				f.s.At(at, func() { f.s.Net().HealAll() })
			case 4:
				f.s.At(at, func() {
					if cpDown {
						f.s.Node("cp").Restart()
					} else {
						f.s.Node("cp").Crash()
					}
					cpDown = !cpDown
				})
			}
		}
		final := rapid.IntRange(1, 5).Draw(rt, "final")
		f.s.At(301*time.Second, func() {
			f.s.Net().HealAll()
			if cpDown {
				f.s.Node("cp").Restart()
				cpDown = false
			}
			f.desired = final
			f.wake.Notify()
			lastValid = final
		})
		for at := time.Second; at <= 380*time.Second; at += time.Second {
			f.s.At(at, func() {
				for _, w := range workers {
					c, err := f.activeCap(w)
					if err != nil {
						problems = append(problems, err.Error())
					}
					if _, snap := f.syncs[w].Active(); snap != nil && snap.RoutingFallback != "g" {
						problems = append(problems, fmt.Sprintf("%s: %s runs an invalid config", at, w))
					}
					if at >= 361*time.Second && c != lastValid {
						problems = append(problems, fmt.Sprintf("%s: %s runs cap %d, want %d", at, w, c, lastValid))
					}
				}
			})
		}
		if err := f.s.Run(380 * time.Second); err != nil {
			rt.Fatal(err)
		}
		if len(problems) > 0 {
			rt.Fatalf("%d problems, first: %s", len(problems), problems[0])
		}
	})
}
