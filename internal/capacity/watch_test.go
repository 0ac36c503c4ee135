package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/sim"
)

// TestWatchAnswersAtOnceOnContention: two control-plane replicas (a and b) share one store. A
// watch held at a is answered when its wait is over if nobody else asks; at once (one round
// trip) when another worker is denied one of its clusters at a; within watchRecheckEvery (50 ms)
// when that denial is at b; and never for the watcher's own denial. Bad watches are refused.
func TestWatchAnswersAtOnceOnContention(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 3})
	store := capacity.NewMemory()
	for _, name := range []string{"a", "b"} {
		s.AddNode(name, func(n *sim.Node) http.Handler { return capacity.NewAPIHandler(store, store, n.Env(), nil) })
	}
	w := s.AddNode("w", nil)
	var got []string
	s.Spawn(w, "test", func() {
		a, b := capacity.NewRemote("http://a", w.Client(), nil), capacity.NewRemote("http://b", w.Client(), nil)
		e := w.Env()
		for _, c := range []string{"c", "d"} {
			if _, err := a.Acquire(w.Ctx(), c, "w1", 1, time.Minute, time.Time{}); err != nil {
				panic(err)
			}
		}
		watch := func(what string, deny func()) {
			start := e.Now()
			if deny != nil {
				e.Go(w.Ctx(), "deny", func(ctx2 context.Context) {
					sleep(ctx2, e, 200*time.Millisecond)
					deny()
				})
			}
			unc, err := a.WatchContention(w.Ctx(), "w1", []string{"c", "d"}, 500*time.Millisecond)
			got = append(got, fmt.Sprintf("%s: %v %v after %v", what, unc, err, e.Now().Sub(start).Round(10*time.Millisecond)))
		}
		deny := func(r *capacity.Remote, holder string) func() {
			return func() {
				if _, err := r.Acquire(w.Ctx(), "d", holder, 1, time.Minute, time.Time{}); !errors.Is(err, capacity.ErrAtCapacity) {
					panic(fmt.Sprint("want a denial: ", err))
				}
			}
		}
		watch("nobody", nil)
		watch("own denial", deny(a, "w1"))
		watch("denied at a", deny(a, "w2"))
		sleep(w.Ctx(), e, capacity.ContendedFor) // w2's denial is forgotten
		watch("denied at b", deny(b, "w3"))
		for _, bad := range [][]string{nil, {"c", "c"}, {""}} {
			_, err := a.WatchContention(w.Ctx(), "w1", bad, time.Second)
			var se *workerapi.StatusError
			got = append(got, fmt.Sprintf("%q: 400 %v", bad, errors.Is(err, capacity.ErrInvalid) && errors.As(err, &se) && se.Status == 400))
		}
	})
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"nobody: [c d] <nil> after 500ms",
		"own denial: [c d] <nil> after 500ms",
		"denied at a: [c] <nil> after 200ms",
		"denied at b: [c] <nil> after 250ms",
		`[]: 400 true`, `["c" "c"]: 400 true`, `[""]: 400 true`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("watches answered\n%q\nwant\n%q", got, want)
	}
}

// TestLostWatchEndsReuseWithinItsBound: a busy worker reuses its leases under a contention
// watch; from 500 ms on, the control plane's answers to watches are lost. The watch in flight
// then (sent at about 1 s) keeps reuse going for at most its wait and leaseReuseWindow (1.05 s)
// after it was sent; from then on the worker asks for a new lease whenever an acquire's answer
// is 50 ms old, as without any check.
func TestLostWatchEndsReuseWithinItsBound(t *testing.T) {
	f := newAPIFleet(9)
	w := f.s.AddNode("w1", nil)
	acquiresAt := map[time.Duration]int{}
	f.s.At(500*time.Millisecond, func() { f.lose = true })
	for _, at := range []time.Duration{2000, 2150, 3000} {
		f.s.At(at*time.Millisecond, func() { acquiresAt[at] = f.asked[capacity.PathAcquire] })
	}
	f.s.Spawn(w, "test", func() {
		g, e := f.guard(w, nil), w.Env()
		busyClient(query.WithAffinity(w.Ctx(), 1), e, g, 2, time.Millisecond, e.Now().Add(3*time.Second), func(capacity.Slot) {})
	})
	if err := f.s.Run(3100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	t.Logf("acquires by 2 s: %d, by 2.15 s: %d, by 3 s: %d; watches %d", acquiresAt[2000], acquiresAt[2150], acquiresAt[3000], f.asked[capacity.PathWatch])
	if acquiresAt[2000] != 1 || acquiresAt[3000]-acquiresAt[2150] < 10 {
		t.Errorf("acquires by 2 s: %d, from 2.15 s to 3 s: %d: want the first only while the lost watch is within its bound, then one every 50 ms or so",
			acquiresAt[2000], acquiresAt[3000]-acquiresAt[2150])
	}
}
