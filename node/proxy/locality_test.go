package proxy

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/queryflux/queryflux/internal/query"
)

// modelFleet is n proxy cores in one process, each over its own handle on one engine, whose
// Locality calls the owner's core directly: the preferred-worker path without the network.
type modelFleet struct {
	names  []string
	cores  map[string]*Core
	engine *fakeEngine
}

// inProcess is Locality over a modelFleet, owners by rendezvous hashing as internal/forward does.
type inProcess struct {
	self  string
	fleet *modelFleet
	down  map[string]bool
}

func (l inProcess) Run(ctx context.Context, req *query.Request, key string, eligible func(map[string]string) bool, _ time.Duration) (query.Rows, error) {
	owner, best := "", uint64(0)
	for _, name := range l.fleet.names {
		if s := xxhash.Sum64String(name + "\x00" + key); owner == "" || s > best {
			owner, best = name, s
		}
	}
	if owner == l.self || l.down[owner] || !eligible(nil) {
		return nil, ErrRunHere
	}
	return l.fleet.cores[owner].Execute(FromPeer(ctx), req)
}

func newModelFleet(t testing.TB, n int, preferred bool, down map[string]bool) *modelFleet {
	f := &modelFleet{cores: map[string]*Core{}, engine: &fakeEngine{rows: 3}}
	for i := range n {
		f.names = append(f.names, fmt.Sprintf("w%d", i+1))
	}
	cache := CacheSpec{TTL: time.Hour, MaxBytes: 1 << 20}
	if preferred {
		cache.PreferredWait = time.Second
		cache.Eligible = func(map[string]string) bool { return true }
	}
	for _, name := range f.names {
		core := New(Options{Env: newTestEnv(), Locality: inProcess{self: name, fleet: f, down: down}})
		rt, err := NewRuntime(RuntimeSpec{Clusters: []ClusterSpec{cl("a", 100, f.engine)},
			Groups: []GroupSpec{{Name: "g", Members: []MemberSpec{{Cluster: "a"}}, Cache: cache}}, Fallback: "g"})
		if err != nil {
			t.Fatal(err)
		}
		core.Activate(rt)
		f.cores[name] = core
	}
	return f
}

func (f *modelFleet) run(t testing.TB, worker, sql string) {
	rows, err := f.cores[worker].Execute(context.Background(), sel(sql))
	if err != nil {
		t.Fatalf("%s on %s: %v", sql, worker, err)
	}
	defer rows.Close()
	for {
		if _, err := rows.Next(context.Background()); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("%s on %s: %v", sql, worker, err)
		}
	}
}

// hits is the fleet's cache hits so far.
func (f *modelFleet) hits() int {
	n := 0
	for _, c := range f.cores {
		n += int(c.Paths().Cache)
	}
	return n
}

// mix sends keys distinct queries rounds times each, every query to a worker drawn from seed
// (a load balancer spreading requests), and returns the fleet's hit rate.
func (f *modelFleet) mix(t testing.TB, keys, rounds int, seed uint64) float64 {
	r := rand.New(rand.NewPCG(seed, 0))
	for range rounds {
		for k := range keys {
			f.run(t, f.names[r.IntN(len(f.names))], fmt.Sprintf("SELECT %d", k))
		}
	}
	return float64(f.hits()) / float64(keys*rounds)
}

// A forwarded query runs once, on its owner: the forwarding core takes no slot and answers
// from the owner's cache thereafter; the owner does not send it on.
func TestPreferredWorkerRunsOnTheOwnerOnce(t *testing.T) {
	f := newModelFleet(t, 2, true, nil)
	for k := range 20 {
		sql := fmt.Sprintf("SELECT %d", k)
		f.run(t, "w1", sql)
		f.run(t, "w2", sql)
	}
	if got := f.engine.executes.Load(); got != 20 {
		t.Fatalf("20 keys through two workers ran %d times on the engine, want 20", got)
	}
	if f.hits() != 20 {
		t.Fatalf("%d hits, want 20 (each key's second query)", f.hits())
	}
	for _, name := range f.names {
		c := f.cores[name]
		if c.Paths().Arrow+c.Paths().Cache == 0 {
			t.Fatalf("%s owns no key of 20", name)
		}
	}
}

// An owner that is down (ErrRunHere) leaves the query to the core it reached.
func TestPreferredWorkerOwnerDownRunsHere(t *testing.T) {
	f := newModelFleet(t, 2, true, map[string]bool{"w1": true, "w2": true})
	for k := range 10 {
		f.run(t, "w1", fmt.Sprintf("SELECT %d", k))
	}
	if f.cores["w1"].Paths().Arrow != 10 || f.cores["w2"].Paths().Arrow != 0 {
		t.Fatalf("paths w1 %+v w2 %+v, want all 10 run on w1", f.cores["w1"].Paths(), f.cores["w2"].Paths())
	}
}

// The model's hit rates with and without preferredWorker (RESULTS.md): the same repeated mix,
// each query sent to a worker drawn at random.
func TestPreferredWorkerModelHitRates(t *testing.T) {
	const keys, rounds = 24, 8
	for _, n := range []int{2, 4, 8} {
		with := newModelFleet(t, n, true, nil).mix(t, keys, rounds, 7)
		without := newModelFleet(t, n, false, nil).mix(t, keys, rounds, 7)
		if os.Getenv("QUERYFLUX_LOCALITY_FIGURES") != "" {
			fmt.Printf("model N=%d keys=%d rounds=%d queries=%d hit rate with preferredWorker %.1f%%, without %.1f%%\n",
				n, keys, rounds, keys*rounds, 100*with, 100*without)
		}
		if want := float64(keys*(rounds-1)) / float64(keys*rounds); with != want {
			t.Fatalf("N=%d: hit rate %.3f with preferredWorker, want %.3f (one miss per key)", n, with, want)
		}
		if without >= with {
			t.Fatalf("N=%d: %.3f without, %.3f with", n, without, with)
		}
	}
}
