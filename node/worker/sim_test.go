package worker_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/sim"
)

// simFleet is a control plane and workers in the deterministic simulator, with the registry
// store kept across control-plane crashes (it stands for Postgres).
type simFleet struct {
	s       *sim.Sim
	store   *registry.Memory
	cp      *controlplane.ControlPlane // the current incarnation
	workers map[string]*worker.Worker
}

func newSimFleet(t *testing.T, seed uint64, names ...string) *simFleet {
	t.Helper()
	f := &simFleet{s: sim.New(sim.Opts{Seed: seed}), store: registry.NewMemory(), workers: map[string]*worker.Worker{}}
	t.Cleanup(f.s.Close)
	f.s.AddNode("cp", func(n *sim.Node) http.Handler {
		cp := controlplane.New(n.Env(), controlplane.Config{WorkerSecret: "s3cret", AdminToken: "adm",
			HeartbeatInterval: 10 * time.Second, StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second}, f.store)
		if err := cp.Start(n.Ctx()); err != nil {
			t.Errorf("control plane start: %v", err)
		}
		f.cp = cp
		return cp.Handler()
	})
	for _, name := range names {
		f.s.AddNode(name, func(n *sim.Node) http.Handler {
			w := worker.New(n.Env(), worker.Config{ControlPlaneURL: "http://cp", Secret: "s3cret", Name: n.Name(),
				Labels: map[string]string{"site": "sim"}}, n.Client())
			w.Start(n.Ctx())
			f.workers[n.Name()] = w
			return w.OpsHandler()
		})
	}
	return f
}

func (f *simFleet) state(name string) string {
	wi, ok := f.cp.Worker(name)
	if !ok {
		return "unknown"
	}
	return wi.State
}

func TestSimWorkerCrashAndControlPlaneRestart(t *testing.T) {
	f := newSimFleet(t, 42, "w1", "w2")
	var checks []string
	check := func(at time.Duration, name, want string) {
		f.s.At(at, func() {
			if got := f.state(name); got != want {
				checks = append(checks, at.String()+" "+name+": "+got+", want "+want)
			}
		})
	}
	check(30*time.Second, "w1", workerapi.StateHealthy)
	check(30*time.Second, "w2", workerapi.StateHealthy)
	f.s.At(60*time.Second, func() { f.s.Node("w2").Crash() })
	check(85*time.Second, "w2", workerapi.StateHealthy) // silent < 30s
	check(110*time.Second, "w2", workerapi.StateStale)  // silent > 30s + a reaper tick
	check(165*time.Second, "w2", workerapi.StateEvicted)
	check(165*time.Second, "w1", workerapi.StateHealthy)
	// The control plane is down for five minutes, far past timeout + grace.
	f.s.At(200*time.Second, func() { f.s.Node("cp").Crash() })
	f.s.At(500*time.Second, func() { f.s.Node("cp").Restart() })
	for at := 505 * time.Second; at < 700*time.Second; at += 5 * time.Second {
		check(at, "w1", workerapi.StateHealthy)
		check(at, "w2", workerapi.StateEvicted)
	}
	if err := f.s.Run(700 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		t.Error(c)
	}
	if st := f.workers["w1"].Status(); st.Registrations != 1 || st.ConsecutiveFailures != 0 {
		t.Fatalf("w1 after the control-plane restart: %+v (the token survives in the store)", st)
	}
}

func TestSimStarvedWorkerReportsUnhealthy(t *testing.T) {
	f := newSimFleet(t, 7, "w1")
	f.s.At(60*time.Second, func() { f.s.Node("w1").SetStarve(400 * time.Millisecond) })
	var sawUnhealthy bool
	f.s.At(75*time.Second, func() {
		wi, _ := f.cp.Worker("w1")
		sawUnhealthy = wi.Health == workerapi.HealthUnhealthy
	})
	f.s.At(80*time.Second, func() { f.s.Node("w1").SetStarve(0) })
	if err := f.s.Run(120 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !sawUnhealthy {
		t.Fatal("the control plane did not hear that the starved worker was unhealthy")
	}
	if wi, _ := f.cp.Worker("w1"); wi.Health != workerapi.HealthHealthy {
		t.Fatalf("not recovered: %+v", wi)
	}
}

func TestSimSameSeedSameTrace(t *testing.T) {
	hash := func(seed uint64) string {
		f := newSimFleet(t, seed, "w1", "w2", "w3")
		f.s.At(40*time.Second, func() { f.s.Node("w3").Crash() })
		if err := f.s.Run(3 * time.Minute); err != nil {
			t.Fatal(err)
		}
		return f.s.TraceHash()
	}
	if a, b := hash(5), hash(5); a != b {
		t.Fatalf("seed 5 gave %s then %s", a, b)
	}
}
