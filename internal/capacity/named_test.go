package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/sim"
)

// lossyLink serves a Remote's requests with the capacity API in the caller's task, and loses
// the answers it is told to: the control plane has done the work (granted, freed), and the
// worker sees a cut connection, as after a timeout or a reset on the way back.
type lossyLink struct {
	h     http.Handler
	lose  []bool // per request, in order (cycled); nil loses none
	n     int
	off   bool // lose nothing from now on
	lost  int
	calls map[string]int // by path
	// before, if set, runs before each request is served: what happens meanwhile.
	before func()
}

func (l *lossyLink) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	if l.before != nil {
		l.before()
	}
	rec := httptest.NewRecorder()
	l.h.ServeHTTP(rec, req)
	if l.calls == nil {
		l.calls = map[string]int{}
	}
	l.calls[req.URL.Path]++
	lose := !l.off && len(l.lose) > 0 && l.lose[l.n%len(l.lose)]
	l.n++
	if lose {
		l.lost++
		return nil, errors.New("connection reset by peer (answer lost)")
	}
	return rec.Result(), nil
}

// TestNamedAcquireIsAnsweredItsLease: over the API, a retried acquire is answered the lease its
// first sending was granted (renewed, taking no other slot), another holder's same name is not
// its lease, a settled acquire's lease is freed, and bad names are refused naming the problem.
func TestNamedAcquireIsAnsweredItsLease(t *testing.T) {
	ctx := context.Background()
	s := sim.New(sim.Opts{Seed: 1})
	n := s.AddNode("w", nil)
	store := NewMemory()
	link := &lossyLink{h: NewAPIHandler(store, store, n.Env(), nil)}
	r := NewRemoteDo(link.do)
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	s.Spawn(n, "test", func() {
		first, _, err := r.AcquireContendedNamed(ctx, "c", "w1", 2, time.Minute, time.Time{}, nil, Naming{Request: "a1"})
		if err != nil {
			fail("first acquire: %v", err)
			return
		}
		_ = n.Env().Sleep(ctx, 10*time.Second)
		again, _, err := r.AcquireContendedNamed(ctx, "c", "w1", 2, time.Minute, time.Time{}, nil, Naming{Request: "a1", Retry: true})
		if err != nil || again.ID != first.ID || !again.ExpiresAt.After(first.ExpiresAt) || store.Count("c") != 1 {
			fail("retry: %+v %v (first %+v), %d leases; want the first lease renewed, 1 lease", again, err, first, store.Count("c"))
		}
		other, _, err := r.AcquireContendedNamed(ctx, "c", "w2", 2, time.Minute, time.Time{}, nil, Naming{Request: "a1", Retry: true})
		if err != nil || other.ID == first.ID || store.Count("c") != 2 {
			fail("another holder's retry under the same name: %+v %v; want a lease of its own", other, err)
		}
		// w2's name is not w1's: settling it as w1 frees nothing of w2's.
		if err := r.Settle(ctx, "c", "w1", "nope"); err != nil || store.Count("c") != 2 {
			fail("settling an unknown name: %v, %d leases", err, store.Count("c"))
		}
		if err := r.Settle(ctx, "c", "w1", "a1"); err != nil || store.Count("c") != 1 {
			fail("settle: %v, %d leases; want w1's lease freed", err, store.Count("c"))
		}
		if l, ok, _ := store.Named(ctx, "c", "w2", "a1"); !ok || l.ID != other.ID {
			fail("w2's named lease after w1 settled: %+v %v", l, ok)
		}
		// A retry whose lease is gone is decided as a new acquire.
		third, _, err := r.AcquireContendedNamed(ctx, "c", "w1", 2, time.Minute, time.Time{}, nil, Naming{Request: "a1", Retry: true})
		if err != nil || third.ID == first.ID || store.Count("c") != 2 {
			fail("retry after settle: %+v %v; want a new lease", third, err)
		}
		for _, c := range []struct {
			req  AcquireRequest
			want string
		}{
			{AcquireRequest{Cluster: "c", Holder: "w1", RequestID: "a b"}, "requestId"},
			{AcquireRequest{Cluster: "c", Holder: "w1", RequestID: strings.Repeat("x", RequestIDMax+1)}, "at most 64"},
			{AcquireRequest{Cluster: "c", Holder: "w1", Retry: true}, "give its requestId"},
			{AcquireRequest{Cluster: "c", Holder: "w1", Settle: true}, "give its requestId"},
			{AcquireRequest{Cluster: "c", Holder: "w1", RequestID: "x", Retry: true, Settle: true}, "not both"},
		} {
			var resp AcquireResponse
			err := r.post(ctx, PathAcquire, c.req, &resp)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				fail("%+v: %v; want 400 naming %q", c.req, err, c.want)
			}
		}
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

// TestRemoteToAnOlderControlPlaneDropsTheName: a control plane that predates named acquires
// refuses requestId as an unknown field; the worker asks again without it, from then on.
func TestRemoteToAnOlderControlPlaneDropsTheName(t *testing.T) {
	ctx := context.Background()
	var asked []string
	old := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		asked = append(asked, string(data))
		if strings.Contains(string(data), `"requestId"`) {
			w.Header().Set("Content-Type", MediaJSON)
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"json: unknown field \"requestId\""}`))
			return
		}
		w.Header().Set("Content-Type", MediaJSON)
		_, _ = w.Write([]byte(`{"granted":true,"lease":{"id":"c#1","cluster":"c","holder":"w","generation":1,"expiresAt":"2030-01-01T00:00:00Z"}}`))
	})
	r := NewRemoteDo(func(ctx context.Context, req *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		old.ServeHTTP(rec, req)
		return rec.Result(), nil
	})
	for i := 0; i < 2; i++ {
		if _, _, err := r.AcquireContendedNamed(ctx, "c", "w", 1, time.Minute, time.Time{}, nil, Naming{Request: "n1"}); err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
	}
	if len(asked) != 3 || strings.Contains(asked[2], "requestId") {
		t.Fatalf("requests %q: want one named, then unnamed ones", asked)
	}
	if err := r.Settle(ctx, "c", "w", "n1"); !errors.Is(err, ErrNamesUnsupported) {
		t.Fatalf("settle against an older control plane: %v", err)
	}
}

// TestLostAcquireAnswersHoldNoSlots (rapid): a worker's lease guard over a link that loses
// answers at random (acquires, retries, settles, releases) never leaves the control plane
// holding a lease it does not know of, beyond the acquires it has yet to settle; once the link
// is whole again and its queries are done, the control plane holds no lease of it. Plant: an
// unnamed acquire (newName answering no name) leaves lost grants held to their term.
func TestLostAcquireAnswersHoldNoSlots(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		s := sim.New(sim.Opts{Seed: rapid.Uint64().Draw(rt, "seed")})
		n := s.AddNode("w", nil)
		store := NewMemory()
		link := &lossyLink{h: NewAPIHandler(store, store, n.Env(), nil), lose: rapid.SliceOfN(rapid.Bool(), 1, 40).Draw(rt, "lose")}
		const limit = 3
		g, err := NewLeaseGuard(GuardOptions{Env: n.Env(), Client: NewRemoteDo(link.do), Holder: "w",
			LeaseTTL: time.Minute, AcquireTimeout: 5 * time.Second})
		if err != nil {
			rt.Fatal(err)
		}
		ops := rapid.SliceOfN(rapid.IntRange(0, 3), 1, 60).Draw(rt, "ops")
		waits := rapid.SliceOfN(rapid.IntRange(0, 1500), len(ops), len(ops)).Draw(rt, "waits")
		var failures []string
		check := func(when string) {
			// Every lease the control plane holds is known here: a taken or idle slot, a queued
			// release, or a lost acquire yet to settle.
			known := g.Held("c") + g.PendingReleases() + g.LostAcquires()
			if held := store.Count("c"); held > known {
				failures = append(failures, fmt.Sprintf("%s: the control plane holds %d leases, the worker knows of %d", when, held, known))
			}
		}
		s.Spawn(n, "test", func() {
			var slots []Slot
			for i, op := range ops {
				switch op {
				case 0, 1:
					if sl, err := g.Acquire(ctx, "c", limit); err == nil {
						slots = append(slots, sl)
					}
				case 2:
					if len(slots) > 0 {
						slots[0].Release()
						slots = slots[1:]
					}
				case 3:
					_ = g.flush(ctx, time.Time{})
				}
				check(fmt.Sprintf("op %d (%d)", i, op))
				_ = n.Env().Sleep(ctx, time.Duration(waits[i])*time.Millisecond)
			}
			link.off = true
			for _, sl := range slots {
				sl.Release()
			}
			_ = n.Env().Sleep(ctx, time.Second) // past the idle hold
			g.reapIdle(ctx, time.Time{})
			_ = g.flush(ctx, time.Time{})
			check("at the end")
			if held := store.Count("c"); held != 0 {
				failures = append(failures, fmt.Sprintf("at the end: %d leases held at the control plane for a worker with no query (%d answers lost)", held, link.lost))
			}
		})
		if err := s.Run(10 * time.Minute); err != nil {
			rt.Fatal(err)
		}
		if len(failures) > 0 {
			rt.Fatal(strings.Join(failures, "\n"))
		}
	})
}

// TestLostAcquireIsSettledByTheRunningGuard: a running guard whose acquire's answers were all
// lost (the first sending and its lostRetries retries, no more) settles the name on its own,
// trying again after settles lost too, once the link is whole again, with nothing else to do (no release, no other acquire): the control plane frees the
// lease it granted within seconds, not at its term, and the guard has nothing left to settle.
func TestLostAcquireIsSettledByTheRunningGuard(t *testing.T) {
	ctx := context.Background()
	s := sim.New(sim.Opts{Seed: 3})
	n := s.AddNode("w", nil)
	store := NewMemory()
	link := &lossyLink{h: NewAPIHandler(store, store, n.Env(), nil), lose: []bool{true}}
	var failures []string
	s.Spawn(n, "test", func() {
		g, err := NewLeaseGuard(GuardOptions{Env: n.Env(), Client: NewRemoteDo(link.do), Holder: "w", LeaseTTL: time.Minute})
		if err != nil {
			panic(err)
		}
		g.Start(n.Ctx())
		_ = n.Env().Sleep(ctx, time.Second) // the duties ran and sleep
		if _, err := g.Acquire(ctx, "c", 2); err == nil {
			failures = append(failures, "an acquire whose answers were all lost was granted")
		}
		if store.Count("c") == 0 || g.LostAcquires() != 1 || link.calls[PathAcquire] != 1+lostRetries {
			failures = append(failures, fmt.Sprintf("after the lost acquire: %d leases at the control plane, %d lost acquires, %d sendings; want some, 1 and %d",
				store.Count("c"), g.LostAcquires(), link.calls[PathAcquire], 1+lostRetries))
		}
		_ = n.Env().Sleep(ctx, 2500*time.Millisecond) // the first settles are lost too
		if g.LostAcquires() != 1 {
			failures = append(failures, fmt.Sprintf("after settles whose answers were lost: %d lost acquires, want 1 (to settle again)", g.LostAcquires()))
		}
		link.off = true
		_ = n.Env().Sleep(ctx, 5*time.Second)
		if store.Count("c") != 0 || g.LostAcquires() != 0 {
			failures = append(failures, fmt.Sprintf("5 s after the link is whole: %d leases at the control plane, %d lost acquires; want 0 and 0", store.Count("c"), g.LostAcquires()))
		}
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
}
