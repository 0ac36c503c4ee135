package controlplane_test

// Benchmarks of config delivery: an accepted reload on the control plane until every worker has
// the new revision active.
//
//	go test ./node/controlplane -run '^$' -bench 'EditToActive' -benchtime 1x    (sim: one world)
//	go test ./node/controlplane -run '^$' -bench 'Loopback' -benchtime 20x
//
// The simulated one reports virtual time (what the fleet would see); the loopback one real time
// on this machine with 50 in-process workers (real net/http over 127.0.0.1, real clocks).

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/sim"
)

const benchSecret = "bench-worker-secret"

// benchConfig is a one-cluster configuration whose cap is capacity (each edit changes it).
func benchConfig(capacity int) *config.Config {
	cfg := &config.Config{
		Clusters:        config.NamedList[config.Cluster]{{Name: "c", Engine: config.EngineSim, MaxRunningQueries: capacity}},
		ClusterGroups:   config.NamedList[config.ClusterGroup]{{Name: "g", Members: []string{"c"}}},
		RoutingFallback: "g",
	}
	config.ApplyDefaults(cfg)
	return cfg
}

// simServiceModel makes the simulated control plane pay for each response: slots responses are
// written at once (the machine's cores), each taking perResponse of virtual time. Without it the
// simulated control plane answers 1,000 workers in zero time.
type simServiceModel struct {
	e           env.Env
	slots       int
	perResponse time.Duration
	inUse       int
	freed       env.Signal
}

func (m *simServiceModel) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&costlyWriter{ResponseWriter: w, m: m, ctx: r.Context()}, r)
	})
}

// costlyWriter charges the service time when the handler starts its answer (after a long-poll's
// wait, not during it).
type costlyWriter struct {
	http.ResponseWriter
	m       *simServiceModel
	ctx     context.Context
	charged bool
}

func (w *costlyWriter) charge() {
	if w.charged {
		return
	}
	w.charged = true
	m := w.m
	for m.inUse >= m.slots {
		if m.freed.Wait(w.ctx, m.freed.Seq()) != nil {
			return
		}
	}
	m.inUse++
	_ = m.e.Sleep(w.ctx, m.perResponse)
	m.inUse--
	m.freed.Notify()
}

func (w *costlyWriter) WriteHeader(code int) { w.charge(); w.ResponseWriter.WriteHeader(code) }
func (w *costlyWriter) Write(b []byte) (int, error) {
	w.charge()
	return w.ResponseWriter.Write(b)
}

// Service model of the simulated control plane: 2 cores, 250µs per response (an over-estimate:
// BenchmarkServeConfigResponse measures the handler's part at a few µs; net/http adds tens).
const (
	simSlots       = 2
	simPerResponse = 250 * time.Microsecond
)

// simEditToActive builds a world with one control plane and n workers, reloads an edited
// configuration at 60s of virtual time, and returns the virtual time from the reload until the
// last worker activated the new revision.
func simEditToActive(b *testing.B, n int, seed uint64) time.Duration {
	s := sim.New(sim.Opts{Seed: seed})
	defer s.Close()
	s.Net().SetDefault(sim.Link{Latency: sim.Exponential(time.Millisecond, 5*time.Millisecond)})
	desired := 1
	var reloader *controlplane.ConfigReloader
	cpNode := s.AddNode("cp", func(node *sim.Node) http.Handler {
		e := node.Env()
		cp := controlplane.New(e, controlplane.Config{WorkerSecret: benchSecret,
			HeartbeatInterval: 10 * time.Second, StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second}, registry.NewMemory())
		srv := controlplane.NewConfigServer(e, 20*time.Second)
		srv.Mount(cp)
		r, err := controlplane.NewConfigReloader(e, srv, benchConfig(desired), controlplane.ReloadOptions{
			Load: func() (*config.Config, error) { return benchConfig(desired), nil },
		})
		if err != nil {
			b.Fatal(err)
		}
		reloader = r
		e.Go(node.Ctx(), "config-refresh", func(ctx context.Context) {
			_ = srv.RunConfigRefresh(ctx, r.Source, r.Wake(), 5*time.Second)
		})
		if err := cp.Start(node.Ctx()); err != nil {
			b.Fatal(err)
		}
		model := &simServiceModel{e: e, slots: simSlots, perResponse: simPerResponse, freed: e.NewSignal()}
		return model.wrap(cp.Handler())
	})
	activated := map[string]time.Time{} // when each worker activated cap 2
	for i := range n {
		s.AddNode(fmt.Sprintf("w%04d", i), func(node *sim.Node) http.Handler {
			e := node.Env()
			w := worker.New(e, worker.Config{ControlPlaneURL: "http://cp", Secret: benchSecret, Name: node.Name()}, node.Client())
			cs := worker.NewConfigSync(w, worker.ConfigSyncOptions{PollTimeout: 20 * time.Second,
				Apply: func(_ context.Context, cfg *config.Config, _ *snapshot.WorkerSnapshotV1) error {
					if cfg.Clusters[0].MaxRunningQueries == 2 {
						activated[node.Name()] = e.Now()
					}
					return nil
				}})
			e.Go(node.Ctx(), "config-sync", func(ctx context.Context) { _ = cs.Run(ctx) })
			w.Start(node.Ctx())
			return w.OpsHandler()
		})
	}
	const editAt = 60 * time.Second
	var editStart time.Time
	var result controlplane.ReloadResult
	s.At(editAt, func() {
		desired = 2
		s.Spawn(cpNode, "reload", func() {
			editStart = cpNode.Env().Now()
			result = reloader.Reload(cpNode.Ctx())
		})
	})
	if err := s.Run(editAt + 30*time.Second); err != nil {
		b.Fatal(err)
	}
	if !result.OK || !result.Changed {
		b.Fatalf("reload: %+v", result)
	}
	if len(activated) != n {
		b.Fatalf("%d of %d workers activated the edit", len(activated), n)
	}
	var last time.Time
	for _, at := range activated {
		if at.After(last) {
			last = at
		}
	}
	return last.Sub(editStart)
}

// BenchmarkSimEditToActive1000Workers: one world per iteration; reports the virtual time from
// the reload to the last of 1,000 workers running the new revision (goal: <= 1s).
func BenchmarkSimEditToActive1000Workers(b *testing.B) {
	var total, worst time.Duration
	for i := 0; i < b.N; i++ {
		d := simEditToActive(b, 1000, uint64(i+1))
		total += d
		worst = max(worst, d)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "virtual-ms/edit")
	b.ReportMetric(float64(worst.Milliseconds()), "virtual-ms-worst")
}

// loopbackFleet is a control plane on a real loopback listener and n in-process workers
// (each its own http.Client and connection) following it with real clocks.
type loopbackFleet struct {
	reloader *controlplane.ConfigReloader
	syncs    []*worker.ConfigSync
	desired  int
	mu       sync.Mutex
}

func newLoopbackFleet(b *testing.B, n int) *loopbackFleet {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	e := env.Real(slog.New(slog.DiscardHandler))
	f := &loopbackFleet{desired: 1}
	cp := controlplane.New(e, controlplane.Config{WorkerSecret: benchSecret}, registry.NewMemory())
	srv := controlplane.NewConfigServer(e, 20*time.Second)
	srv.Mount(cp)
	r, err := controlplane.NewConfigReloader(e, srv, benchConfig(1), controlplane.ReloadOptions{
		Load: func() (*config.Config, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return benchConfig(f.desired), nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	f.reloader = r
	e.Go(ctx, "config-refresh", func(ctx context.Context) { _ = srv.RunConfigRefresh(ctx, r.Source, r.Wake(), 5*time.Second) })
	if err := cp.Start(ctx); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(cp.Handler())
	b.Cleanup(func() { cancel(); ts.CloseClientConnections(); ts.Close() })
	for i := range n {
		client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		w := worker.New(e, worker.Config{ControlPlaneURL: ts.URL, Secret: benchSecret, Name: fmt.Sprintf("w%02d", i)}, client)
		cs := worker.NewConfigSync(w, worker.ConfigSyncOptions{PollTimeout: 20 * time.Second})
		e.Go(ctx, "config-sync", func(ctx context.Context) { _ = cs.Run(ctx) })
		w.Start(ctx)
		f.syncs = append(f.syncs, cs)
	}
	return f
}

// waitAll waits until every worker runs a revision other than notRev.
func (f *loopbackFleet) waitAll(b *testing.B, notRev string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, cs := range f.syncs {
		wg.Go(func() {
			if err := cs.WaitActive(ctx, notRev); err != nil {
				b.Errorf("worker did not activate: %v", err)
			}
		})
	}
	wg.Wait()
}

// BenchmarkLoopbackEditToActive50Workers: one reload per iteration; ns/op is the real time from
// the reload until all 50 workers run the new revision (goal: <= 300ms).
func BenchmarkLoopbackEditToActive50Workers(b *testing.B) {
	f := newLoopbackFleet(b, 50)
	f.waitAll(b, "")
	var times []time.Duration
	var last string
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, prev := f.syncs[0].Active()
		f.mu.Lock()
		f.desired++
		f.mu.Unlock()
		start := time.Now()
		res := f.reloader.Reload(context.Background())
		if !res.OK || !res.Changed {
			b.Fatalf("reload: %+v", res)
		}
		f.waitAll(b, prev.Revision)
		times = append(times, time.Since(start))
		last = res.Revision
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, "max-ms")
	for _, cs := range f.syncs {
		if _, snap := cs.Active(); snap == nil || snap.Revision != last {
			b.Fatalf("a worker runs %v, the last reload published %s", snap, last)
		}
	}
}

// BenchmarkServeConfigResponse is the control plane's part of one snapshot answer (encode is
// done at publish; this is the write), to calibrate the simulated service time.
func BenchmarkServeConfigResponse(b *testing.B) {
	e := env.Real(slog.New(slog.DiscardHandler))
	srv := controlplane.NewConfigServer(e, time.Second)
	snap, err := snapshot.Build(benchConfig(1), snapshot.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Publish(snap); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", snapshot.PathConfig, nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		srv.ServeConfig(rec, req, nil)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
