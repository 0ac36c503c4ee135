package simengine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/simengine"
	"github.com/queryflux/queryflux/sim"
)

// world is an engine on its own node and a client node "w" that starts one query per tag at
// 1s (each on its own task, draining and closing its rows) and records each query's error.
func world(t *testing.T, p simengine.Params, tags ...string) (*sim.Sim, *simengine.Engine, map[string]error) {
	t.Helper()
	s := sim.New(sim.Opts{Seed: 1})
	eng := simengine.New(s.AddNode("engine", nil).Env(), "c", p)
	w := s.AddNode("w", nil)
	errs := map[string]error{}
	for _, tag := range tags {
		s.Spawn(w, "query "+tag, func() {
			_ = w.Env().Sleep(w.Ctx(), time.Second)
			rows, err := eng.ExecuteTagged(w.Ctx(), &query.Request{SQL: "select 1"}, tag)
			for err == nil {
				_, err = rows.Next(w.Ctx())
			}
			if rows != nil {
				rows.Close()
			}
			errs[tag] = err
		})
	}
	return s, eng, errs
}

// at runs the world to d and returns the engine's executing count then.
func at(t *testing.T, s *sim.Sim, eng *simengine.Engine, d time.Duration) int {
	t.Helper()
	if err := s.Run(d); err != nil {
		t.Fatal(err)
	}
	return eng.Executing()
}

// TestCrashedClientsQueryRunsToItsEnd: without a client-loss rule (MySQL, MariaDB) the engine
// keeps a dead client's query until it ends.
func TestCrashedClientsQueryRunsToItsEnd(t *testing.T) {
	s, eng, _ := world(t, simengine.Params{Duration: simengine.Constant{D: 30 * time.Second}}, "c#1", "c#2")
	s.At(5*time.Second, func() { s.Node("w").Crash() })
	if n := at(t, s, eng, 20*time.Second); n != 2 {
		t.Fatalf("executing 15s after the client crashed: %d, want 2", n)
	}
	if n := at(t, s, eng, 32*time.Second); n != 0 {
		t.Fatalf("executing after the queries' end: %d, want 0", n)
	}
	if st := eng.Stats(); st.Orphaned != 2 || st.Succeeded != 0 || st.Cancelled != 0 {
		t.Fatalf("stats %+v: want 2 orphaned, none succeeded or cancelled", st)
	}
}

// TestClientTimeoutStopsADeadClientsQuery: with a client timeout (Trino's), the dead client's
// query stops that long after the client went away.
func TestClientTimeoutStopsADeadClientsQuery(t *testing.T) {
	p := simengine.Params{Duration: simengine.Constant{D: 30 * time.Second}, ClientLoss: simengine.ClientLoss{Timeout: 5 * time.Second}}
	s, eng, _ := world(t, p, "c#1")
	s.At(5*time.Second, func() { s.Node("w").Crash() })
	if n := at(t, s, eng, 9*time.Second); n != 1 {
		t.Fatalf("executing 4s after the crash: %d, want 1", n)
	}
	if n := at(t, s, eng, 11*time.Second); n != 0 {
		t.Fatalf("executing 6s after the crash: %d, want 0 (client timeout 5s)", n)
	}
}

// TestClientCheckEndsADeadClientsQueryAtTheNextLook: PostgreSQL with
// client_connection_check_interval looks at the socket every interval from the query's start,
// so a query started at 1s whose client dies at 5.3s ends at the look at 6s, not before.
func TestClientCheckEndsADeadClientsQueryAtTheNextLook(t *testing.T) {
	p := simengine.Params{Duration: simengine.Constant{D: 30 * time.Second}, ClientLoss: simengine.ClientLoss{CheckEvery: time.Second}}
	s, eng, _ := world(t, p, "c#1")
	s.At(5300*time.Millisecond, func() { s.Node("w").Crash() })
	if n := at(t, s, eng, 5999*time.Millisecond); n != 1 {
		t.Fatalf("executing before the next look: %d, want 1", n)
	}
	if n := at(t, s, eng, 6*time.Second); n != 0 {
		t.Fatalf("executing at the look after the crash: %d, want 0", n)
	}
	if st := eng.Stats(); st.Orphaned != 1 || st.Succeeded != 0 {
		t.Fatalf("stats %+v: want 1 orphaned, none succeeded", st)
	}
}

// TestClientCheckKeepsAFrozenClientsQuery: a frozen client keeps its socket open, so the
// engine's looks find it there and the query runs to its end.
func TestClientCheckKeepsAFrozenClientsQuery(t *testing.T) {
	p := simengine.Params{Duration: simengine.Constant{D: 10 * time.Second}, ClientLoss: simengine.ClientLoss{CheckEvery: time.Second}}
	s, eng, _ := world(t, p, "c#1")
	s.At(2*time.Second, func() { s.Node("w").SetStarve(time.Minute) })
	if n := at(t, s, eng, 10*time.Second); n != 1 {
		t.Fatalf("executing 8s into the client's freeze: %d, want 1", n)
	}
	if st := eng.Stats(); st.Orphaned != 0 {
		t.Fatalf("stats %+v: a frozen client is not gone", st)
	}
}

// TestEmbeddedEngineQueryEndsWithItsClient: an embedded engine (DuckDB) dies with the process
// it runs in.
func TestEmbeddedEngineQueryEndsWithItsClient(t *testing.T) {
	p := simengine.Params{Duration: simengine.Constant{D: 30 * time.Second}, ClientLoss: simengine.ClientLoss{Embedded: true}}
	s, eng, _ := world(t, p, "c#1", "c#2")
	s.At(5*time.Second, func() { s.Node("w").Crash() })
	if n := at(t, s, eng, 4999*time.Millisecond); n != 2 {
		t.Fatalf("executing before the crash: %d, want 2", n)
	}
	if n := at(t, s, eng, 5*time.Second); n != 0 {
		t.Fatalf("executing at the crash: %d, want 0", n)
	}
}

// TestCancellingClientStopsItsQuery: a live client that cancels stops the query at once.
func TestCancellingClientStopsItsQuery(t *testing.T) {
	s, eng, errs := world(t, simengine.Params{Duration: simengine.Constant{D: 30 * time.Second}}, "c#1")
	s.At(5*time.Second, func() { s.Node("w").Shutdown(time.Minute) }) // cancels its context
	if n := at(t, s, eng, 5*time.Second+time.Millisecond); n != 0 {
		t.Fatalf("executing after the client cancelled: %d, want 0", n)
	}
	if !errors.Is(errs["c#1"], context.Canceled) || eng.Stats().Cancelled != 1 {
		t.Fatalf("client got %v, stats %+v: want cancelled", errs["c#1"], eng.Stats())
	}
}

// TestFenceStopsOnlyTheTaggedQueries: Fence stops the queries of the named leases, whether
// their client is alive or dead, and nothing else.
func TestFenceStopsOnlyTheTaggedQueries(t *testing.T) {
	s, eng, errs := world(t, simengine.Params{Duration: simengine.Constant{D: 30 * time.Second}}, "c#1", "c#2", "c#3")
	s.At(3*time.Second, func() { s.Node("w").Crash() })
	if n := at(t, s, eng, 2*time.Second); n != 3 {
		t.Fatalf("executing: %d, want 3", n)
	}
	stopped := -1
	s.At(5*time.Second, func() { stopped = eng.Fence([]string{"c#1", "c#3", "c#9"}) })
	if n := at(t, s, eng, 5*time.Second); n != 1 || stopped != 2 {
		t.Fatalf("after fencing c#1 and c#3: executing %d (want 1), stopped %d (want 2)", n, stopped)
	}
	if eng.Running("c#1") != 0 || eng.Running("c#2") != 1 {
		t.Fatalf("running c#1 %d, c#2 %d: want 0 and 1", eng.Running("c#1"), eng.Running("c#2"))
	}
	if n := at(t, s, eng, 40*time.Second); n != 0 || len(errs) != 0 {
		t.Fatalf("executing at the end %d, client errors %v: want 0 and none (the client died)", n, errs)
	}
	if st := eng.Stats(); st.Fenced != 2 {
		t.Fatalf("stats %+v: want 2 fenced", st)
	}
}

// TestFenceOfALiveClientsQueryFailsIt: the client of a fenced query gets an engine error.
func TestFenceOfALiveClientsQueryFailsIt(t *testing.T) {
	s, eng, errs := world(t, simengine.Params{Duration: simengine.Constant{D: 30 * time.Second}}, "c#1")
	s.At(5*time.Second, func() { eng.Fence([]string{"c#1"}) })
	at(t, s, eng, 6*time.Second)
	var qe *query.Error
	if !errors.As(errs["c#1"], &qe) || qe.Code != query.CodeEngine {
		t.Fatalf("client got %v, want an engine error", errs["c#1"])
	}
}
