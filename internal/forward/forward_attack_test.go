package forward

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// impostor answers at an address the peer list still gives to a worker (a stale entry, a host
// that took the address over) and keeps every request forwarded to it.
type impostor struct {
	mu   sync.Mutex
	seen []captured
	srv  *httptest.Server
}

type captured struct {
	method, uri string
	header      http.Header
	body        []byte
}

func newImpostor(t *testing.T) *impostor {
	im := &impostor{}
	im.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		im.mu.Lock()
		im.seen = append(im.seen, captured{r.Method, r.URL.RequestURI(), r.Header.Clone(), body})
		im.mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(im.srv.Close)
	return im
}

func (im *impostor) requests() []captured {
	im.mu.Lock()
	defer im.mu.Unlock()
	return append([]captured(nil), im.seen...)
}

// TestForwardedRequestsDoNotHandTheWorkerSecretToTheOwnersAddress: worker w1's peer list still
// names w2 at an address someone else now answers. Anyone (a Trino poll needs no password)
// makes w1 forward a follow-up naming w2's owner id, and a query whose cache key w2 owns goes
// there too. What reaches that address must not be the worker secret (with which it could
// register as any worker, read every snapshot and run any SQL as any user through a worker's
// PathQuery), and what it received must not be usable anywhere else: not at another worker,
// not with another client address (a loopback one is trusted by trustLoopback), not with
// another query or user.
func TestForwardedRequestsDoNotHandTheWorkerSecretToTheOwnersAddress(t *testing.T) {
	const secret = "fleet-worker-secret-0123456789"
	im := newImpostor(t)
	list := peers{{Name: "w2", Healthy: true, Endpoints: map[string]string{Trino: im.srv.URL}}}
	w1, err := New(Options{Env: testEnv, Name: "w1", Secret: secret, Directory: list, Client: NewClient(nil)})
	if err != nil {
		t.Fatal(err)
	}

	// A Trino poll of a query that names w2, from a client nobody authenticated.
	poll := httptest.NewRequest(http.MethodGet, "/v1/statement/executing/20261205_235900_00001_abcdef_"+OwnerID("w2")+"/y1/1", nil)
	poll.RemoteAddr = "203.0.113.7:40000"
	_ = w1.ProxyHTTP(httptest.NewRecorder(), poll, Trino, OwnerID("w2"))
	// A whole query whose cache key w2 owns (the only candidate).
	rows, err := w1.Locality().Run(context.Background(), &query.Request{SQL: "select secret_plan from alice_only", User: "alice",
		Protocol: "trino", ClientAddr: "203.0.113.7:40001"}, "key", func(map[string]string) bool { return true }, 2*time.Second)
	if err == nil {
		rows.Close()
	}

	got := im.requests()
	if len(got) != 2 {
		t.Fatalf("the impostor received %d requests, want the poll and the query", len(got))
	}
	for _, c := range got {
		for name, values := range c.header {
			for _, v := range values {
				if strings.Contains(v, secret) {
					t.Errorf("%s %s: header %s carries the worker secret to whoever answers at w2's address", c.method, c.uri, name)
				}
			}
		}
	}

	// What the impostor holds, presented elsewhere.
	w2, _ := testOwner(testEnv, "w2", secret, im.srv.URL) // w2 advertised the address the impostor took
	w3, _ := testOwner(testEnv, "w3", secret, im.srv.URL)
	sealedPoll := httptest.NewRequest(got[0].method, got[0].uri, bytes.NewReader(got[0].body))
	sealedPoll.Header = got[0].header.Clone()
	if _, err := w3.unsealRequest(sealedPoll.Clone(context.Background())); err == nil {
		t.Error("the sealed poll opens at another worker")
	}
	sealedPoll.Body = io.NopCloser(bytes.NewReader(got[0].body))
	opened, err := w2.unsealRequest(sealedPoll) // what only w2 reads: the poll's own forwarding headers
	if err != nil {
		t.Fatalf("the sealed poll at its owner: %v", err)
	}
	pollHeader := opened.Header
	if _, err := w3.Inbound(pollHeader.Get, BindTrino); err == nil {
		t.Error("the poll's forwarding headers, replayed to another worker, pass its check")
	}
	loopback := pollHeader.Clone()
	loopback.Set(HeaderClientAddr, "127.0.0.1:5000")
	if _, err := w2.Inbound(loopback.Get, BindTrino); err == nil {
		t.Error("the poll's forwarding headers with a loopback client address pass the owner's check")
	}
	if hop, err := w2.Inbound(pollHeader.Get, BindTrino); err != nil || hop.ClientAddr != "203.0.113.7:40000" {
		t.Errorf("the genuine forwarded poll at its owner: %+v %v", hop, err)
	}

	// The whole query, its (sealed) body altered, at the owner's PathQuery.
	q := got[1]
	forged := bytes.Clone(q.body)
	forged[len(forged)/2] ^= 1
	for name, body := range map[string][]byte{"rewritten": forged, "genuine": q.body} {
		req := httptest.NewRequest(http.MethodPost, PathQuery, bytes.NewReader(body))
		req.Header = q.header.Clone()
		rec := httptest.NewRecorder()
		w2.QueryHandler(refuseAll{}).ServeHTTP(rec, req)
		if name == "rewritten" && rec.Code != http.StatusForbidden {
			t.Errorf("the forwarded query altered: %d, want 403", rec.Code)
		}
		if name == "genuine" && rec.Code != http.StatusOK {
			t.Errorf("the genuine forwarded query at its owner: %d %s", rec.Code, rec.Body)
		}
	}
	if _, err := w3.Inbound(q.header.Get, BindQuery(q.body)); err == nil {
		t.Error("the forwarded query's headers, replayed to another worker, pass its check")
	}
}

// TestForwardProofExpires: a proof older than ProofAgeMax, or dated ahead by more than that,
// is refused, so what an address once received does not stay good.
func TestForwardProofExpires(t *testing.T) {
	const secret = "s3cret-s3cret"
	w2, _ := testOwner(testEnv, "w2", secret, "http://10.9.9.9:8080")
	now := testEnv.Now()
	for _, c := range []struct {
		at   time.Time
		pass bool
	}{{now, true}, {now.Add(-ProofAgeMax + time.Second), true}, {now.Add(-ProofAgeMax - time.Second), false},
		{now.Add(ProofAgeMax + time.Second), false}} {
		h := map[string]string{HeaderHop: "1", HeaderSecret: proof(secret, OwnerID("w2"), BindTrino, "10.9.9.9:8080", "10.0.0.1:1", false, c.at),
			HeaderPeerAddr: "10.9.9.9:8080", HeaderClientAddr: "10.0.0.1:1", HeaderClientTLS: "false"}
		_, err := w2.Inbound(func(k string) string { return h[k] }, BindTrino)
		if (err == nil) != c.pass {
			t.Errorf("a proof dated %s from now: %v, want pass %v", c.at.Sub(now), err, c.pass)
		}
		if !c.pass && !strings.Contains(fmt.Sprint(err), "clocks differ") {
			t.Errorf("a true proof dated %s from now: %v, want it to say the clocks differ", c.at.Sub(now), err)
		}
		forged := map[string]string{HeaderHop: "1", HeaderSecret: proof("not-the-secret", OwnerID("w2"), BindTrino, "10.9.9.9:8080", "10.0.0.1:1", false, c.at),
			HeaderPeerAddr: "10.9.9.9:8080", HeaderClientAddr: "10.0.0.1:1", HeaderClientTLS: "false"}
		if _, err := w2.Inbound(func(k string) string { return forged[k] }, BindTrino); err != ErrBadHop {
			t.Errorf("a forged proof dated %s from now: %v, want only ErrBadHop (nothing of the clocks)", c.at.Sub(now), err)
		}
	}
}

type refuseAll struct{}

func (refuseAll) Ready() bool { return true }

func (refuseAll) Execute(context.Context, *query.Request) (query.Rows, error) {
	return nil, &query.Error{Code: query.CodeAuthRefused, Message: "test backend"}
}
