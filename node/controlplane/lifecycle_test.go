package controlplane

import (
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

const (
	healthy  = workerapi.StateHealthy
	stale    = workerapi.StateStale
	evictedS = workerapi.StateEvicted
)

func TestLifecycleTable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	limits := Timeouts{StaleAfter: 30 * time.Second, Grace: 60 * time.Second}
	type step struct {
		op    string // tick, beat, restart
		at    float64
		state string
		ok    bool // for beat: accepted
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"quiet worker stays healthy before the timeout", []step{{"tick", 29.9, healthy, true}}},
		{"silence turns stale at the timeout", []step{{"tick", 30, stale, true}}},
		{"stale worker evicted after the grace", []step{{"tick", 30, stale, true}, {"tick", 89.9, stale, true}, {"tick", 90, evictedS, true}}},
		{"heartbeat inside the grace recovers", []step{{"tick", 31, stale, true}, {"beat", 80, healthy, true}, {"tick", 109, healthy, true}, {"tick", 110, stale, true}}},
		{"heartbeats keep it healthy", []step{{"beat", 20, healthy, true}, {"tick", 49, healthy, true}, {"beat", 45, healthy, true}, {"tick", 74, healthy, true}}},
		{"one tick makes one step however late", []step{{"tick", 1000, stale, true}, {"tick", 1059, stale, true}, {"tick", 1060, evictedS, true}}},
		{"evicted ignores heartbeats", []step{{"tick", 30, stale, true}, {"tick", 90, evictedS, true}, {"beat", 91, evictedS, false}, {"tick", 500, evictedS, true}}},
		{"restart gives a fresh window", []step{{"tick", 30, stale, true}, {"restart", 85, healthy, true}, {"tick", 114, healthy, true}, {"tick", 115, stale, true}}},
		{"restart does not revive the evicted", []step{{"tick", 30, stale, true}, {"tick", 90, evictedS, true}, {"restart", 100, evictedS, true}}},
		{"an old heartbeat does not move LastSeen back", []step{{"beat", 20, healthy, true}, {"beat", 10, healthy, true}, {"tick", 49, healthy, true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := NewLifecycle(t0)
			for i, s := range c.steps {
				ok := true
				switch s.op {
				case "tick":
					l.Tick(at(s.at), limits)
				case "beat":
					_, ok = l.Heartbeat(at(s.at))
				case "restart":
					l.FreshWindow(at(s.at))
				}
				if l.State != s.state || ok != s.ok {
					t.Fatalf("step %d %s@%vs: state %s ok %v, want %s ok %v", i, s.op, s.at, l.State, ok, s.state, s.ok)
				}
			}
		})
	}
}

func TestLifecycleRejectsCorruptState(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on unknown state")
		}
	}()
	l := Lifecycle{State: "zombie"}
	l.Tick(time.Unix(0, 0), Timeouts{})
}
