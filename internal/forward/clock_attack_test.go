package forward

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// steppedEnv is the Real env with its clock stepped by a shift that may move.
type steppedEnv struct {
	env.Env
	shift *atomic.Int64
}

func (e steppedEnv) Now() time.Time { return e.Env.Now().Add(time.Duration(e.shift.Load())) }

func stepped(by time.Duration) (steppedEnv, *atomic.Int64) {
	s := &atomic.Int64{}
	s.Store(int64(by))
	return steppedEnv{Env: testEnv, shift: s}, s
}

// clockOwner serves the Trino follow-ups forwarded to owner as trinohttp does: a refusal (with
// TellClock) or "rows". It keeps the forwarding headers of each request.
type clockOwner struct {
	mu   sync.Mutex
	seen []http.Header
	srv  *httptest.Server
}

func newClockOwner(t *testing.T, owner *Forwarder) *clockOwner {
	o := &clockOwner{}
	o.srv = httptest.NewServer(owner.Unsealing(owner.Vouching(BindTrino, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.seen = append(o.seen, r.Header.Clone())
		o.mu.Unlock()
		if _, err := owner.Inbound(r.Header.Get, BindTrino); err != nil {
			TellClock(w.Header(), err)
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, "rows")
	}))))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *clockOwner) requests() []http.Header {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]http.Header(nil), o.seen...)
}

// poll forwards a Trino poll of a query w2 owns through f: the client's status and body.
func poll(f *Forwarder) (int, string, error) {
	r := httptest.NewRequest(http.MethodGet, "/v1/statement/executing/q_"+OwnerID("w2")+"/y/1", nil)
	r.RemoteAddr = "203.0.113.9:4000"
	rec := httptest.NewRecorder()
	err := f.ProxyHTTP(rec, r, Trino, OwnerID("w2"))
	return rec.Code, rec.Body.String(), err
}

// TestForwardingAcrossClocksThatDiffer: w2's clock runs 5 minutes ahead of w1's, past the
// proof's 2-minute window. w1's forwarded poll is refused for its date; w2's refusal tells its
// time, bound to the refused proof by the secret; w1 retries once dated by it, and the client
// gets w2's answer. The next poll goes once. A whole query sent for its cache key is run by w2
// the same way. The proof w2 took is no good later (2 minutes on by w2's clock). An impostor at
// w2's address, without the secret, cannot tell w1 a time (to have it date proofs a day ahead
// and replay them then), nor hand back a time w2 told for another proof.
func TestForwardingAcrossClocksThatDiffer(t *testing.T) {
	const secret = "clock-secret-0123456789"
	ownerEnv, ownerShift := stepped(5 * time.Minute)
	w2, advertised := testOwner(ownerEnv, "w2", secret)
	owner := newClockOwner(t, w2)
	advertised.add(owner.srv.URL)
	list := peers{{Name: "w2", Healthy: true, Endpoints: map[string]string{Trino: owner.srv.URL}}}
	w1, err := New(Options{Env: testEnv, Name: "w1", Secret: secret, Directory: list, Client: NewClient(nil)})
	if err != nil {
		t.Fatal(err)
	}

	code, body, err := poll(w1)
	if code != http.StatusOK || body != "rows" || err != nil {
		t.Fatalf("a poll forwarded to an owner 5 minutes ahead: %d %q %v; want the owner's rows", code, body, err)
	}
	if n := len(owner.requests()); n != 2 {
		t.Fatalf("the owner saw %d requests, want the refused one and the retry", n)
	}
	if off := w1.ClockOffset(OwnerID("w2")); off < 5*time.Minute-2*time.Second || off > 5*time.Minute+2*time.Second {
		t.Fatalf("w1 reckons w2's clock %v ahead, want about 5m", off)
	}
	if code, body, _ := poll(w1); code != http.StatusOK || body != "rows" || len(owner.requests()) != 3 {
		t.Fatalf("the next poll: %d %q after %d requests; want one more request", code, body, len(owner.requests()))
	}

	// Replay protection holds: the proof w2 took, presented once w2's clock moved 2m1s on.
	taken := owner.requests()[2]
	ownerShift.Add(int64(ProofAgeMax + time.Second))
	var ce *ClockError
	if _, err := w2.Inbound(taken.Get, BindTrino); !errors.As(err, &ce) {
		t.Fatalf("the retried proof replayed %v later: %v, want it refused for its date", ProofAgeMax+time.Second, err)
	}
	ownerShift.Store(int64(5 * time.Minute))

	// A whole query whose cache key w2 owns, from a worker that has not learnt w2's clock.
	ran := &recordingBackend{}
	qsrv := httptest.NewServer(w2.QueryHandler(ran))
	t.Cleanup(qsrv.Close)
	advertised.add(qsrv.URL)
	w3, _ := New(Options{Env: testEnv, Name: "w3", Secret: secret, Client: NewClient(nil),
		Directory: peers{{Name: "w2", Healthy: true, Endpoints: map[string]string{Query: qsrv.URL}}}})
	rows, err := w3.Locality().Run(context.Background(), &query.Request{SQL: "select 1", User: "alice", Protocol: "trino",
		ClientAddr: "203.0.113.9:4001"}, "key", func(map[string]string) bool { return true }, 5*time.Second)
	if rows != nil {
		rows.Close()
	}
	if ran.count.Load() != 1 || errors.Is(err, proxy.ErrRunHere) {
		t.Fatalf("a whole query sent to an owner 5 minutes ahead: ran there %d times, %v; want it run there once", ran.count.Load(), err)
	}

	// An impostor answering at w2's address tells a time a day ahead, then one w2 told before.
	told := ""
	imp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderPeerTime, told)
		http.Error(w, "refused", http.StatusForbidden)
	}))
	t.Cleanup(imp.Close)
	w4, _ := New(Options{Env: testEnv, Name: "w4", Secret: secret, Client: NewClient(nil),
		Directory: peers{{Name: "w2", Healthy: true, Endpoints: map[string]string{Trino: imp.URL}}}})
	at := DialedAddress(owner.srv.URL)
	other := proof(secret, OwnerID("w2"), BindTrino, at, "198.51.100.1:1", false, testEnv.Now().Add(-10*time.Minute))
	_, refusal := w2.Inbound(func(k string) string {
		return map[string]string{HeaderHop: "1", HeaderSecret: other, HeaderPeerAddr: at, HeaderClientAddr: "198.51.100.1:1", HeaderClientTLS: "false"}[k]
	}, BindTrino)
	answered := http.Header{}
	TellClock(answered, refusal)
	if answered.Get(HeaderPeerTime) == "" {
		t.Fatalf("w2's refusal of a true proof 15 minutes off told no time: %v", refusal)
	}
	forged := proof("not-the-secret", OwnerID("w2"), BindTrino, at, "198.51.100.1:1", false, testEnv.Now().Add(-10*time.Minute))
	_, refusal = w2.Inbound(func(k string) string {
		return map[string]string{HeaderHop: "1", HeaderSecret: forged, HeaderPeerAddr: at, HeaderClientAddr: "198.51.100.1:1", HeaderClientTLS: "false"}[k]
	}, BindTrino)
	if h := (http.Header{}); tellAndRead(h, refusal) != "" {
		t.Fatalf("a forged proof was told w2's time: %s", h.Get(HeaderPeerTime))
	}
	for _, c := range []struct{ name, value string }{
		{"a day ahead, with no MAC", strconv.FormatInt(time.Now().Add(24*time.Hour).Unix(), 10) + ".00"},
		{"w2's answer to another proof", answered.Get(HeaderPeerTime)},
	} {
		name, value := c.name, c.value
		told = value
		if code, _, _ := poll(w4); code != http.StatusBadGateway || w4.ClockOffset(OwnerID("w2")) != 0 {
			t.Errorf("an impostor telling a time (%s): the client got %d, w4 reckons w2 %v ahead; want 502 (not the owner's answer) and nothing learnt",
				name, code, w4.ClockOffset(OwnerID("w2")))
		}
	}
}

// recordingBackend counts the queries it is given and answers each with an engine error.
type recordingBackend struct{ count atomic.Int64 }

func (*recordingBackend) Ready() bool { return true }

func (b *recordingBackend) Execute(context.Context, *query.Request) (query.Rows, error) {
	b.count.Add(1)
	return nil, &query.Error{Code: query.CodeEngine, Message: "ran on the owner"}
}

// tellAndRead is what TellClock sets on h for err.
func tellAndRead(h http.Header, err error) string {
	TellClock(h, err)
	return h.Get(HeaderPeerTime)
}
