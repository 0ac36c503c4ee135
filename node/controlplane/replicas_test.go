package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Two replicas on one store, each hearing only the workers that reach it:
//   - live registered at A and beats only there; B, started after, never evicts it (before, B
//     evicted it after StaleAfter and the grace, revoking the leases of its running queries);
//   - moved registered at A after B started, then moved to B, which did not know its token and
//     took a new registration: A does not evict it either, and ends its old session there as
//     superseded;
//   - dead is silent everywhere: both evict it.
func TestReplicaDoesNotEvictAnotherReplicasWorkers(t *testing.T) {
	ctx := context.Background()
	store := registry.NewMemory()
	a := newHarness(t, store, nil)
	live := a.register("live")
	a.register("dead")
	if err := a.cp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	e := newManualEnv()
	e.now, e.rnd = a.e.Now(), 0x2545f4914f6cdd1d // its own tokens
	b := newHarness(t, store, e)
	evicted := map[string][]string{}
	for name, h := range map[string]*harness{"A": a, "B": b} {
		h.cp.OnEvict(func(_ context.Context, w workerapi.WorkerInfo) { evicted[name] = append(evicted[name], w.Name) })
	}
	var endedAtA []string
	a.cp.OnSessionEnd(func(_ context.Context, s Session, why string) { endedAtA = append(endedAtA, s.Worker+" "+why) })
	movedAtA := a.register("moved")
	if code := b.beat(movedAtA, 1); code != 401 {
		t.Fatalf("a token B never loaded: %d, want 401 (the worker registers there)", code)
	}
	movedAtB := b.register("moved")

	for i := range 20 { // 200 s: past StaleAfter and the grace many times over
		for _, h := range []*harness{a, b} {
			h.e.Advance(10 * time.Second)
		}
		if code := a.beat(live, i+1); code != 200 {
			t.Fatalf("live beat %d at A: %d; A sees %+v", i+1, code, a.state("live"))
		}
		if code := b.beat(movedAtB, i+2); code != 200 {
			t.Fatalf("moved's beat %d at B: %d", i+2, code)
		}
		for _, h := range []*harness{a, b} {
			h.cp.Tick(ctx, h.e.Now())
			if err := h.cp.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		h      *harness
		where  string
		worker string
	}{{b, "B", "live"}, {a, "A", "live"}, {a, "A", "moved"}, {b, "B", "moved"}} {
		if s := c.h.state(c.worker); !s.Online || s.State != workerapi.StateHealthy {
			t.Fatalf("%s as %s sees it: %+v", c.worker, c.where, s)
		}
	}
	for _, where := range []string{"A", "B"} {
		if got := evicted[where]; len(got) != 1 || got[0] != "dead" {
			t.Fatalf("%s evicted %v, want only dead", where, got)
		}
	}
	if len(endedAtA) != 2 || endedAtA[0] != "moved superseded" || endedAtA[1] != "dead evicted" {
		t.Fatalf("sessions ended at A: %v", endedAtA)
	}
}
