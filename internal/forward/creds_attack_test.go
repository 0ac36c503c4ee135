package forward

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// credsOwner answers forwarded Trino follow-ups as trinohttp does for a fleet with users: a
// poll needs no credentials, a kill (DELETE) does (401 without). It keeps what it received.
type credsOwner struct {
	mu   sync.Mutex
	seen []*http.Request
}

func (o *credsOwner) handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.seen = append(o.seen, r.Clone(r.Context()))
		o.mu.Unlock()
		user, _, ok := r.BasicAuth()
		if r.Method == http.MethodDelete && !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="QueryFlux"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(r.Method + " as " + user))
	}
}

func (o *credsOwner) carriedCredentials() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, r := range o.seen {
		for _, h := range credentialHeaders {
			if r.Header.Get(h) != "" {
				out = append(out, r.Method+" "+h)
			}
		}
	}
	return out
}

// followUp forwards a Trino follow-up carrying alice's credentials through f to w2.
func followUp(f *Forwarder, method string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/v1/query/q_"+OwnerID("w2"), nil)
	r.RemoteAddr = "203.0.113.9:4000"
	r.SetBasicAuth("alice", "alice-password")
	r.Header.Set("Cookie", "session=alice-cookie")
	r.Header.Set("X-Trino-Extra-Credential", "token=alice-token")
	rec := httptest.NewRecorder()
	_ = f.ProxyHTTP(rec, r, Trino, OwnerID("w2"))
	return rec
}

// TestForwardedFollowUpsHandCredentialsOnlyToAProvenOwner: a client's Trino follow-up carries its
// password (Basic), a cookie and an extra credential. Forwarded to its owner, a poll goes without
// them (the owner needs none), and a kill, which the owner answers 401 with its proof of the
// worker secret, is sent again with them. At an address someone else now answers, asking for
// credentials as the owner would, with no proof or a made-up one, the credentials never leave
// the worker and the client is told why (502).
func TestForwardedFollowUpsHandCredentialsOnlyToAProvenOwner(t *testing.T) {
	const secret = "creds-secret-0123456789"
	w2, advertised := testOwner(testEnv, "w2", secret)
	genuine := &credsOwner{}
	srv := httptest.NewServer(w2.Unsealing(w2.Vouching(BindTrino, genuine.handler())))
	t.Cleanup(srv.Close)
	advertised.add(srv.URL)
	w1, _ := New(Options{Env: testEnv, Name: "w1", Secret: secret, Client: NewClient(nil),
		Directory: peers{{Name: "w2", Healthy: true, Endpoints: map[string]string{Trino: srv.URL}}}})

	if rec := followUp(w1, http.MethodGet); rec.Code != http.StatusOK || rec.Body.String() != "GET as " {
		t.Fatalf("a poll through w1: %d %q", rec.Code, rec.Body)
	}
	if got := genuine.carriedCredentials(); len(got) != 0 {
		t.Fatalf("a poll, which needs none, carried the client's credentials to the owner: %v", got)
	}
	if rec := followUp(w1, http.MethodDelete); rec.Code != http.StatusOK || rec.Body.String() != "DELETE as alice" {
		t.Fatalf("a kill through w1 at the proven owner: %d %q; want it run as alice", rec.Code, rec.Body)
	}

	for name, proof := range map[string]string{"no proof": "", "a made-up proof": strings.Repeat("ab", 32)} { //determinism:ok a test's cases
		impostor := &credsOwner{}
		isrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if proof != "" {
				w.Header().Set(HeaderOwnerProof, proof)
			}
			r.Method = http.MethodDelete // asks for credentials whatever the request
			impostor.handler()(w, r)
		}))
		w3, _ := New(Options{Env: testEnv, Name: "w3", Secret: secret, Client: NewClient(nil),
			Directory: peers{{Name: "w2", Healthy: true, Endpoints: map[string]string{Trino: isrv.URL}}}})
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			rec := followUp(w3, method)
			if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "did not prove it holds the fleet's worker secret") {
				t.Errorf("%s, %s: the client got %d %q; want 502 saying the owner was not proven", name, method, rec.Code, rec.Body)
			}
		}
		if got := impostor.carriedCredentials(); len(got) != 0 {
			t.Errorf("%s: the client's credentials reached whoever answers at w2's address: %v", name, got)
		}
		isrv.Close()
	}
}
