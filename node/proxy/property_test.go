package proxy

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/node/env"
)

// seqRand is a deterministic env.Rand for property tests.
type seqRand struct{ s uint64 }

func (r *seqRand) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
func (r *seqRand) Float64() float64     { return float64(r.Uint64()>>11) / (1 << 53) }
func (r *seqRand) Int64N(n int64) int64 { return int64(r.Uint64() % uint64(n)) }
func (r *seqRand) Read(p []byte) {
	for i := range p {
		p[i] = byte(r.Uint64())
	}
}

var _ env.Rand = (*seqRand)(nil)

// Every strategy offers exactly the enabled, healthy members below their cap, each once.
func TestCandidatesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "members")
		strategy := rapid.SampledFrom([]string{RoundRobin, LeastLoaded, Failover, Weighted}).Draw(t, "strategy")
		g := &group{name: "g", strategy: strategy}
		running := map[string]int{}
		want := map[string]bool{}
		for i := 0; i < n; i++ {
			c := &cluster{name: fmt.Sprintf("c%d", i), cap: rapid.IntRange(1, 4).Draw(t, "cap"),
				enabled: rapid.Bool().Draw(t, "enabled")}
			c.healthy.Store(rapid.Bool().Draw(t, "healthy"))
			running[c.name] = rapid.IntRange(0, 5).Draw(t, "running")
			g.members = append(g.members, member{cluster: c, weight: rapid.IntRange(1, 10).Draw(t, "weight")})
			if c.enabled && c.healthy.Load() && running[c.name] < c.cap {
				want[c.name] = true
			}
		}
		g.cursor.Store(uint64(rapid.IntRange(0, 100).Draw(t, "cursor")))
		got := g.candidates(func(c *cluster) int { return running[c.name] }, &seqRand{s: rapid.Uint64().Draw(t, "seed")})
		seen := map[string]bool{}
		for _, m := range got {
			if !want[m.cluster.name] || seen[m.cluster.name] {
				t.Fatalf("candidate %s not eligible or repeated: %v", m.cluster.name, names(got))
			}
			seen[m.cluster.name] = true
		}
		if len(seen) != len(want) {
			t.Fatalf("offered %v, eligible %v", names(got), want)
		}
		if strategy == LeastLoaded {
			for i := 1; i < len(got); i++ {
				a, b := got[i-1].cluster, got[i].cluster
				if running[a.name]*b.cap > running[b.name]*a.cap {
					t.Fatalf("leastLoaded order broken: %v", names(got))
				}
			}
		}
	})
}

func names(ms []member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.cluster.name)
	}
	return out
}

// Under any mix of caps and concurrent queries, no engine ever runs more than its cluster's cap,
// the queue holds the rest, and every query finishes once the engines let go.
func TestCapHoldsUnderConcurrency(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t)
		gt := newGate(h.env)
		members := rapid.IntRange(1, 3).Draw(rt, "members")
		var clusters []ClusterSpec
		var engines []*fakeEngine
		total := 0
		for i := 0; i < members; i++ {
			e := &fakeEngine{rows: 1, gate: gt}
			c := rapid.IntRange(1, 3).Draw(rt, "cap")
			total += c
			engines = append(engines, e)
			clusters = append(clusters, cl(fmt.Sprintf("c%d", i), c, e))
		}
		strategy := rapid.SampledFrom([]string{RoundRobin, LeastLoaded, Failover, Weighted}).Draw(rt, "strategy")
		n := rapid.IntRange(1, 12).Draw(rt, "queries")
		h.activate(oneGroup(strategy, n, time.Minute, clusters...))
		var outs []*outcome
		for i := 0; i < n; i++ {
			outs = append(outs, h.async(t.Context(), sel(fmt.Sprintf("select %d", i))))
		}
		runningNow := min(n, total)
		eventually(t, "slots taken and the rest queued", func() bool {
			sum := 0
			for _, c := range clusters {
				sum += h.core.Running(c.Name)
			}
			return sum == runningNow && h.core.Queued("g") == n-runningNow
		})
		gt.release()
		for _, o := range outs {
			if _, err := o.result(t); err != nil {
				rt.Fatalf("query failed: %v", err)
			}
		}
		for i, e := range engines {
			if int(e.peak.Load()) > clusters[i].MaxRunningQueries {
				rt.Fatalf("engine %d ran %d at once, cap %d", i, e.peak.Load(), clusters[i].MaxRunningQueries)
			}
		}
		if len(h.recs.all()) != n {
			rt.Fatalf("%d records for %d queries", len(h.recs.all()), n)
		}
	})
}

// knownGroup tells a name apart by its length first (Runtime.nameLens): it still knows exactly
// the groups served and withheld, of any length (63 bytes and longer share one bit).
func TestKnownGroupByLengthFirst(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.OneOf(rapid.StringMatching(`[a-c]{1,4}`), rapid.StringMatching(`[a-c]{62,66}`))
		served := rapid.SliceOfNDistinct(name, 1, 4, func(s string) string { return s }).Draw(t, "served")
		spec := RuntimeSpec{Clusters: []ClusterSpec{cl("c", 1, &fakeEngine{})}, Fallback: served[0]}
		for _, g := range served {
			spec.Groups = append(spec.Groups, GroupSpec{Name: g, Members: []MemberSpec{{Cluster: "c"}}})
		}
		want := map[string]bool{}
		for _, g := range served {
			want[g] = true
		}
		spec.Withheld = map[string]string{}
		for _, g := range rapid.SliceOfN(name, 0, 3).Draw(t, "withheld") {
			if !want[g] {
				spec.Withheld[g] = "{zone=eu-1}"
			}
		}
		for g := range spec.Withheld {
			want[g] = true
		}
		rt, err := NewRuntime(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range append(rapid.SliceOfN(name, 1, 8).Draw(t, "asked"), served...) {
			if got := rt.knownGroup(q); got != want[q] {
				t.Fatalf("knownGroup(%q) = %v, want %v (served %q, withheld %v)", q, got, want[q], served, spec.Withheld)
			}
		}
	})
}

// The running counts are atomics that admissions and releases change without the core's lock:
// goroutines admitting (some under NoWait, as an event loop does, some waiting in the queue)
// and finishing at once, on groups of one to three members, never hold more slots of a cluster
// than its cap, every waiting query gets a slot, and every count is back to zero at the end.
func TestCapExactUnderConcurrentAdmitAndFinish(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t)
		members := rapid.IntRange(1, 3).Draw(rt, "members")
		var clusters []ClusterSpec
		holders := map[string]*[2]atomic.Int64{} // cluster -> {held now, most held at once}
		for i := range members {
			c := cl(fmt.Sprintf("c%d", i), rapid.IntRange(1, 4).Draw(rt, "cap"), &fakeEngine{rows: 1})
			clusters = append(clusters, c)
			holders[c.Name] = new([2]atomic.Int64)
		}
		strategy := rapid.SampledFrom([]string{RoundRobin, LeastLoaded, Failover}).Draw(rt, "strategy")
		h.activate(oneGroup(strategy, 1000, time.Minute, clusters...))
		workers := rapid.IntRange(2, 12).Draw(rt, "workers")
		rounds := rapid.IntRange(1, 100).Draw(rt, "rounds")
		noWait := rapid.SliceOfN(rapid.Bool(), workers, workers).Draw(rt, "noWait")
		var wg sync.WaitGroup
		var failed atomic.Value
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := t.Context()
				if noWait[w] {
					ctx = NoWait(ctx)
				}
				for i := range rounds {
					adm, err := h.core.Admit(ctx, sel(fmt.Sprintf("select %d", i)))
					if errors.Is(err, engine.ErrWouldWait) {
						continue
					}
					if err != nil {
						failed.Store(err)
						return
					}
					hd := holders[adm.Cluster]
					n := hd[0].Add(1)
					for m := hd[1].Load(); n > m && !hd[1].CompareAndSwap(m, n); m = hd[1].Load() {
					}
					runtime.Gosched()
					hd[0].Add(-1)
					adm.Finish(1, 1, nil)
				}
			}()
		}
		wg.Wait()
		if err := failed.Load(); err != nil {
			rt.Fatalf("an admission failed: %v", err)
		}
		for _, c := range clusters {
			if most := holders[c.Name][1].Load(); most > int64(c.MaxRunningQueries) {
				rt.Fatalf("cluster %s: %d slots held at once, cap %d", c.Name, most, c.MaxRunningQueries)
			}
			if n := h.core.Running(c.Name); n != 0 {
				rt.Fatalf("cluster %s: %d running after every query finished", c.Name, n)
			}
		}
		if q := h.core.Queued("g"); q != 0 || h.core.queued.Load() != 0 {
			rt.Fatalf("%d queued in g, %d in all after every query finished", q, h.core.queued.Load())
		}
	})
}

// takeCounted is the cap's last word when admissions race past candidates' check: goroutines
// taking and giving back one count never hold more than its limit, and a taker alone gets
// exactly the limit.
func TestTakeCountedIsExact(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		limit := rapid.IntRange(1, 4).Draw(rt, "limit")
		var n, held, most atomic.Int64
		for range limit {
			if !takeCounted(&n, limit) {
				rt.Fatalf("refused with %d of %d taken", n.Load(), limit)
			}
		}
		if takeCounted(&n, limit) {
			rt.Fatalf("took a slot past the limit %d", limit)
		}
		n.Store(0)
		var wg sync.WaitGroup
		for range rapid.IntRange(2, 16).Draw(rt, "workers") {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					if !takeCounted(&n, limit) {
						continue
					}
					h := held.Add(1)
					for m := most.Load(); h > m && !most.CompareAndSwap(m, h); m = most.Load() {
					}
					runtime.Gosched()
					held.Add(-1)
					n.Add(-1)
				}
			}()
		}
		wg.Wait()
		if most.Load() > int64(limit) {
			rt.Fatalf("%d held at once, limit %d", most.Load(), limit)
		}
	})
}
