package controlplane_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/sim"
	"pgregory.net/rapid"
)

// File contents the simulated edits write: a cap (>= 1), or one of these broken files.
const (
	fileBroken     = -1 // does not compile (the fallback names no group)
	fileUnreadable = -2 // the file cannot be read
)

func simFile(content int) (*config.Config, error) {
	switch content {
	case fileUnreadable:
		return nil, errors.New("open queryflux.yaml: permission denied")
	case fileBroken:
		cfg := benchConfig(1)
		cfg.RoutingFallback = "nowhere"
		return cfg, nil
	}
	return benchConfig(content), nil
}

// TestSimReloadsConverge draws a timeline of file edits (some broken or unreadable), each
// followed by a reload, and a partition of one worker. Every reload of a broken file is refused
// and keeps the served revision; every good one is served when Reload returns; no worker ever
// activates a revision the control plane did not serve; and after the partition heals every
// worker runs the last good file.
func TestSimReloadsConverge(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		edits := rapid.SliceOfN(rapid.IntRange(fileUnreadable, 4), 1, 6).Draw(rt, "edits")
		cut := rapid.SampledFrom([]string{"", "w1", "w2", "w3"}).Draw(rt, "partitioned")
		cutFrom := time.Duration(rapid.IntRange(0, 20).Draw(rt, "cutFromSecs")) * time.Second
		cutFor := time.Duration(rapid.IntRange(1, 40).Draw(rt, "cutForSecs")) * time.Second

		s := sim.New(sim.Opts{Seed: seed})
		defer s.Close()
		s.Net().SetDefault(sim.Link{Latency: sim.Exponential(time.Millisecond, 5*time.Millisecond)})
		file := 1
		served := map[string]bool{}
		var reloader *controlplane.ConfigReloader
		var srv *controlplane.ConfigServer
		cpNode := s.AddNode("cp", func(node *sim.Node) http.Handler {
			e := node.Env()
			cp := controlplane.New(e, controlplane.Config{WorkerSecret: benchSecret,
				HeartbeatInterval: 10 * time.Second, StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second}, registry.NewMemory())
			srv = controlplane.NewConfigServer(e, 20*time.Second)
			srv.Mount(cp)
			srv.OnChange(func(rev string) { served[rev] = true })
			r, err := controlplane.NewConfigReloader(e, srv, benchConfig(1), controlplane.ReloadOptions{
				Load: func() (*config.Config, error) { return simFile(file) },
			})
			if err != nil {
				rt.Fatal(err)
			}
			reloader = r
			e.Go(node.Ctx(), "config-refresh", func(ctx context.Context) {
				_ = srv.RunConfigRefresh(ctx, r.Source, r.Wake(), 5*time.Second)
			})
			if err := cp.Start(node.Ctx()); err != nil {
				rt.Fatal(err)
			}
			return cp.Handler()
		})
		syncs := map[string]*worker.ConfigSync{}
		var problems []string
		for _, name := range []string{"w1", "w2", "w3"} {
			s.AddNode(name, func(node *sim.Node) http.Handler {
				w := worker.New(node.Env(), worker.Config{ControlPlaneURL: "http://cp", Secret: benchSecret, Name: name}, node.Client())
				cs := worker.NewConfigSync(w, worker.ConfigSyncOptions{PollTimeout: 20 * time.Second,
					BackoffMin: time.Second, BackoffMax: 5 * time.Second,
					Apply: func(_ context.Context, _ *config.Config, snap *snapshot.WorkerSnapshotV1) error {
						if !served[snap.Revision] {
							problems = append(problems, fmt.Sprintf("%s activated %s, never served", name, snap.Revision))
						}
						return nil
					}})
				node.Env().Go(node.Ctx(), "config-sync", func(ctx context.Context) { _ = cs.Run(ctx) })
				w.Start(node.Ctx())
				syncs[name] = cs
				return w.OpsHandler()
			})
		}
		if cut != "" {
			s.At(10*time.Second+cutFrom, func() { s.Net().PartitionBoth(cut, "cp") })
			s.At(10*time.Second+cutFrom+cutFor, func() { s.Net().HealAll() })
		}
		lastGood := 1
		at := 10 * time.Second
		for i, content := range edits {
			at += time.Duration(1+i%3) * 1500 * time.Millisecond
			wantGood := lastGood
			if content > 0 {
				lastGood = content
			}
			good := lastGood
			s.At(at, func() {
				file = content
				s.Spawn(cpNode, "reload", func() {
					before := srv.Current().Revision
					res := reloader.Reload(cpNode.Ctx())
					switch {
					case content > 0 && (!res.OK || srv.Current().Revision != res.Revision):
						problems = append(problems, fmt.Sprintf("edit %d (cap %d): %+v, serving %s", i, content, res, srv.Current().Revision))
					case content <= 0 && (res.OK || res.Stage != controlplane.ReloadStageFile || res.Revision != before || srv.Current().Revision != before || len(res.Errors) == 0):
						problems = append(problems, fmt.Sprintf("broken edit %d: %+v (served before %s)", i, res, before))
					}
					if cur := reloader.Current().Clusters[0].MaxRunningQueries; cur != good {
						problems = append(problems, fmt.Sprintf("after edit %d the reloader holds cap %d, want %d (previous good %d)", i, cur, good, wantGood))
					}
				})
			})
		}
		end := max(at, 10*time.Second+cutFrom+cutFor) + time.Minute
		if err := s.Run(end); err != nil {
			rt.Fatal(err)
		}
		for _, p := range problems {
			rt.Error(p)
		}
		want, _ := snapshot.Build(benchConfig(lastGood), snapshot.Options{})
		if cur := srv.Current().Revision; cur != want.Revision {
			rt.Fatalf("serving %s, want the last good file's %s (cap %d)", cur, want.Revision, lastGood)
		}
		for name, cs := range syncs {
			if _, snap := cs.Active(); snap == nil || snap.Revision != want.Revision {
				rt.Fatalf("%s runs %v a minute after the faults healed, want %s", name, snap, want.Revision)
			}
		}
	})
}
