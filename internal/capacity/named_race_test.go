package capacity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
)

// holdingLink serves a Remote's requests with the capacity API in the caller's task, except
// the first acquire: that one is held undecided (its sender sees a cut connection), to be
// served later by decideHeld, as a first sending still being decided at the control plane
// when its retry comes.
type holdingLink struct {
	h    http.Handler
	held *http.Request
	body []byte
	done bool
}

func (l *holdingLink) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	if !l.done && req.URL.Path == PathAcquire {
		l.done = true
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		l.held, l.body = req, body
		return nil, errors.New("connection reset by peer (the acquire is still being decided)")
	}
	rec := httptest.NewRecorder()
	l.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// decideHeld serves the held acquire now, its answer going nowhere.
func (l *holdingLink) decideHeld() {
	if l.held == nil {
		return
	}
	req := l.held.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(l.body))
	l.held = nil
	l.h.ServeHTTP(httptest.NewRecorder(), req)
}

// namedHook is a memory store that runs afterNamed (once) right after a name's lookup: the
// first sending decided between its retry's lookup and its retry's decision.
type namedHook struct {
	*Memory
	afterNamed func()
}

func (s *namedHook) Named(ctx context.Context, cluster, holder, request string) (Lease, bool, error) {
	l, ok, err := s.Memory.Named(ctx, cluster, holder, request)
	if f := s.afterNamed; f != nil {
		s.afterNamed = nil
		f()
	}
	return l, ok, err
}

// TestRetryBeforeItsFirstSendingIsDecidedTakesOneSlot: a named acquire whose first sending is
// still undecided at the control plane when its retry comes holds at most one slot there, and
// none the worker does not know of:
//   - the retry is granted, then the first sending is decided: it is answered the retry's lease
//     (the store decides a name once), no second lease;
//   - the first sending is granted the cluster's last slot between the retry's lookup of its
//     name and the retry's decision, which is a denial: the worker settles the name anyway,
//     and the control plane frees that lease.
func TestRetryBeforeItsFirstSendingIsDecidedTakesOneSlot(t *testing.T) {
	for _, c := range []struct {
		name      string
		limit     int
		midLookup bool // the first sending is decided during the retry (else after it)
		wantHeld  int  // the worker's slots after the acquire
	}{
		{"decided after the retry", 2, false, 1},
		{"decided during the retry", 1, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s := sim.New(sim.Opts{Seed: 1})
			n := s.AddNode("w", nil)
			store := &namedHook{Memory: NewMemory()}
			link := &holdingLink{h: NewAPIHandler(store, store, n.Env(), nil)}
			if c.midLookup {
				store.afterNamed = link.decideHeld
			}
			g, err := NewLeaseGuard(GuardOptions{Env: n.Env(), Client: NewRemoteDo(link.do), Holder: "w",
				LeaseTTL: time.Minute, AcquireTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var failures []string
			s.Spawn(n, "test", func() {
				sl, err := g.Acquire(ctx, "c", c.limit)
				link.decideHeld()
				_ = g.flush(ctx, time.Time{})
				held, count := g.Held("c"), store.Count("c")
				if held != c.wantHeld || count != held {
					failures = append(failures, fmt.Sprintf("after the acquire (%v): the worker holds %d slots, the control plane %d leases; want %d and %d",
						err, held, count, c.wantHeld, c.wantHeld))
				}
				if sl != nil {
					sl.Release()
				}
			})
			if err := s.Run(time.Minute); err != nil {
				t.Fatal(err)
			}
			for _, f := range failures {
				t.Error(f)
			}
		})
	}
}
