package controlplane

import (
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
	"pgregory.net/rapid"
)

// TestLifecycleProperties drives a lifecycle with random heartbeats, reaper ticks (at random,
// possibly long, intervals) and control-plane restarts, and checks after every step:
//   - a worker is stale or evicted only after StaleAfter without a heartbeat or fresh window;
//   - a worker is evicted only after being seen stale for at least Grace;
//   - eviction is final, and a heartbeat is accepted exactly when the worker is not evicted;
//   - time only moves forward in the lifecycle's own fields.
func TestLifecycleProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		limits := Timeouts{
			StaleAfter: time.Duration(rapid.IntRange(1, 60).Draw(rt, "staleSecs")) * time.Second,
			Grace:      time.Duration(rapid.IntRange(1, 120).Draw(rt, "graceSecs")) * time.Second,
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		l := NewLifecycle(now)
		lastAlive := now // last heartbeat or fresh window
		var staleSeen time.Time
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(3*limits.StaleAfter)).Draw(rt, "advance")))
			before := l
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				tr, ok := l.Heartbeat(now)
				if ok != (before.State != workerapi.StateEvicted) {
					rt.Fatalf("heartbeat on %s accepted=%v", before.State, ok)
				}
				if ok {
					lastAlive = now
					if l.State != workerapi.StateHealthy || tr.To != workerapi.StateHealthy {
						rt.Fatalf("heartbeat left %s", l.State)
					}
				}
			case 1:
				l.Tick(now, limits)
			case 2:
				l.FreshWindow(now)
				if l.Online() {
					lastAlive = now
				}
			}
			if before.State == workerapi.StateEvicted && l.State != workerapi.StateEvicted {
				rt.Fatalf("eviction undone: %+v -> %+v", before, l)
			}
			if l.State != workerapi.StateHealthy && before.State == workerapi.StateHealthy && now.Sub(lastAlive) < limits.StaleAfter {
				rt.Fatalf("%s after only %v of silence", l.State, now.Sub(lastAlive))
			}
			if l.State == workerapi.StateStale && before.State != workerapi.StateStale {
				staleSeen = now
			}
			if l.State == workerapi.StateEvicted && before.State != workerapi.StateEvicted {
				if before.State != workerapi.StateStale || now.Sub(staleSeen) < limits.Grace {
					rt.Fatalf("evicted from %s after %v stale (grace %v)", before.State, now.Sub(staleSeen), limits.Grace)
				}
			}
			if l.LastSeen.Before(before.LastSeen) || l.StateSince.Before(before.StateSince) {
				rt.Fatalf("time went backwards: %+v -> %+v", before, l)
			}
		}
	})
}
