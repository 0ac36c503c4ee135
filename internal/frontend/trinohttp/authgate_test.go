package trinohttp

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/query"
)

// TestGateIsToldWhatEachTrinoLoginIs: what a login policy is told of each Trino request's
// login (the user, the client's address, TLS, whether a password came in the clear), when
// (Admit before any password, Verified once the credentials were right and with the user they
// named, Failed for wrong ones), what the client gets when it refuses, and whom the statement
// then runs as.
func TestGateIsToldWhatEachTrinoLoginIs(t *testing.T) {
	gate := &frontendtest.RecordingGate{
		Trust: map[string]bool{"trusted": true},
		Refuse: map[string]error{
			"banned": &query.Error{Code: query.CodeAuthRefused, Message: "banned from here"},
			"closed": &query.Error{Code: query.CodeNotConfigured, Message: "not configured yet"},
		},
		RefuseVerified: map[string]error{"carol": &query.Error{Code: query.CodeAuthRefused, Message: "carol must use TLS"}},
	}
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	s, err := NewServer(backend, Options{Gate: gate, Auth: passwords{"alice": "pw", "carol": "pw2", "token:t0k": "t0k"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.routes()
	// post submits SELECT 1 from remote, over TLS or not; it returns the status, the answer's
	// text, and the user the statement ran as ("" when none ran).
	post := func(authorization, user, remote string, secure bool) (int, string, string) {
		t.Helper()
		before := len(backend.Requests())
		req := httptest.NewRequest(http.MethodPost, "/v1/statement", strings.NewReader("SELECT 1"))
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		if user != "" {
			req.Header.Set("X-Trino-User", user)
		}
		req.RemoteAddr = remote
		if secure {
			req.TLS = &tls.ConnectionState{HandshakeComplete: true}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		ran := ""
		if w.Code == http.StatusOK {
			for deadline := time.Now().Add(10 * time.Second); len(backend.Requests()) == before && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			ran = backend.LastRequest(t).User
		}
		return w.Code, w.Body.String(), ran
	}
	basic := func(user, password string) string {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.SetBasicAuth(user, password)
		return r.Header.Get("Authorization")
	}
	type told struct{ admits, verifies, fails []query.Login }
	login := func(user, addr string, tls, cleartext bool) query.Login {
		return query.Login{Protocol: query.ProtocolTrino, User: user, ClientAddr: addr, TLS: tls, Cleartext: cleartext}
	}
	const far, near = "10.1.2.3:5000", "127.0.0.1:5001"
	for _, tc := range []struct {
		what                string
		authorization, user string
		remote              string
		secure              bool
		status              int
		text, ran           string
		told                told
	}{
		{"Basic over TLS", basic("alice", "pw"), "", far, true, 200, "", "alice",
			told{[]query.Login{login("alice", far, true, true)}, []query.Login{login("alice", far, true, true)}, nil}},
		{"Basic naming its user in X-Trino-User, in the clear", basic("alice", "pw"), "alice", near, false, 200, "", "alice",
			told{[]query.Login{login("alice", near, false, true)}, []query.Login{login("alice", near, false, true)}, nil}},
		{"Basic without a user, naming it in X-Trino-User", basic("", "pw"), "alice", far, true, 200, "", "alice",
			told{[]query.Login{login("alice", far, true, true)}, []query.Login{login("alice", far, true, true)}, nil}},
		{"Basic claiming another user", basic("alice", "pw"), "root", far, true, 403, `"alice" may not run queries as "root"`, "", told{}},
		{"a wrong password", basic("alice", "nope"), "", far, true, 401, "authentication failed", "",
			told{[]query.Login{login("alice", far, true, true)}, nil, []query.Login{login("alice", far, true, true)}}},
		{"a wrong token", "Bearer nope", "alice", far, true, 401, "authentication failed", "",
			told{[]query.Login{login("alice", far, true, false)}, nil, []query.Login{login("alice", far, true, false)}}},
		{"refused before its password", basic("banned", "pw"), "", far, true, 403, "banned from here", "",
			told{[]query.Login{login("banned", far, true, true)}, nil, nil}},
		{"refused while not configured", "", "closed", far, true, 503, "not configured yet", "",
			told{[]query.Login{login("closed", far, true, false)}, nil, nil}},
		{"refused once its password was right", basic("carol", "pw2"), "", far, false, 403, "carol must use TLS", "",
			told{[]query.Login{login("carol", far, false, true)}, []query.Login{login("carol", far, false, true)}, nil}},
		{"carol's wrong password is only that", basic("carol", "nope"), "", far, false, 401, "authentication failed", "",
			told{[]query.Login{login("carol", far, false, true)}, nil, []query.Login{login("carol", far, false, true)}}},
		{"trusted by name", "", "trusted", near, false, 200, "", "trusted", told{[]query.Login{login("trusted", near, false, false)}, nil, nil}},
		{"trusted by a Basic name without a password", basic("trusted", ""), "", near, false, 200, "", "trusted",
			told{[]query.Login{login("trusted", near, false, false)}, nil, nil}},
		{"a name without credentials", "", "alice", far, true, 401, "authentication required", "", told{[]query.Login{login("alice", far, true, false)}, nil, nil}},
		{"another scheme", "Token t0k", "alice", far, true, 401, "authentication required", "", told{[]query.Login{login("alice", far, true, false)}, nil, nil}},
		{"a token", "Bearer t0k", "", far, true, 200, "", "token-user",
			told{[]query.Login{login("", far, true, false)}, []query.Login{login("token-user", far, true, false)}, nil}},
		{"a token naming its user", "Bearer t0k", "token-user", far, true, 200, "", "token-user",
			told{[]query.Login{login("token-user", far, true, false)}, []query.Login{login("token-user", far, true, false)}, nil}},
		{"a token claiming another user", "Bearer t0k", "root", far, true, 403, `"token-user" may not run queries as "root"`, "",
			told{[]query.Login{login("root", far, true, false)}, []query.Login{login("token-user", far, true, false)}, nil}},
	} {
		gate.Reset()
		status, text, ran := post(tc.authorization, tc.user, tc.remote, tc.secure)
		if status != tc.status || !strings.Contains(text, tc.text) || ran != tc.ran {
			t.Errorf("%s: %d %q, ran as %q; want %d %q, ran as %q", tc.what, status, strings.TrimSpace(text), ran, tc.status, tc.text, tc.ran)
		}
		if status == http.StatusUnauthorized && strings.Contains(text, "pw") {
			t.Errorf("%s: the answer %q shows a password", tc.what, text)
		}
		admits, verifies, fails := gate.Reset()
		for _, c := range []struct {
			step      string
			got, want []query.Login
		}{{"Admit", admits, tc.told.admits}, {"Verified", verifies, tc.told.verifies}, {"Failed", fails, tc.told.fails}} {
			if len(c.got) != len(c.want) || (len(c.got) > 0 && c.got[0] != c.want[0]) {
				t.Errorf("%s: %s was told %+v, want %+v", tc.what, c.step, c.got, c.want)
			}
		}
	}

	// Without an Authenticator the Gate's trust or the named user decides; a request naming
	// nobody is refused.
	open, err := NewServer(backend, Options{Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	h = open.routes()
	if status, text, _ := post("", "", far, true); status != http.StatusBadRequest || !strings.Contains(text, "X-Trino-User header is required") {
		t.Errorf("no user, no Authenticator: %d %q", status, text)
	}
	if status, _, ran := post("", "bob", far, true); status != http.StatusOK || ran != "bob" {
		t.Errorf("bob, no Authenticator: %d, ran as %q", status, ran)
	}
	if status, text, _ := post("", "banned", far, true); status != http.StatusForbidden || !strings.Contains(text, "banned from here") {
		t.Errorf("banned, no Authenticator: %d %q", status, text)
	}
}

// TestAQueryIsFollowedByItsLink: a query's nextUri is what lets its client follow it: a
// follow-up naming no user, or its own by X-Trino-User alone or by Basic credentials, is
// served; one naming another user is answered as an unknown query.
func TestAQueryIsFollowedByItsLink(t *testing.T) {
	ts := startServer(t, frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{Auth: passwords{"alice": "pw"}})
	for _, follow := range []func(r *http.Request){
		func(r *http.Request) {},
		func(r *http.Request) { r.Header.Set("X-Trino-User", "alice") },
		func(r *http.Request) { r.SetBasicAuth("alice", "pw") },
		func(r *http.Request) { r.SetBasicAuth("", "") },
		func(r *http.Request) { r.Header.Set("Authorization", "Bearer whatever") },
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ts.addr+"/v1/statement", strings.NewReader("types"))
		req.SetBasicAuth("alice", "pw")
		resp, qr := do(t, req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("alice's POST: %d", resp.StatusCode)
		}
		var rows int
		for uri := qr.NextURI; uri != ""; {
			get, _ := http.NewRequest(http.MethodGet, uri, nil)
			follow(get)
			resp, page := do(t, get)
			if resp.StatusCode != http.StatusOK || page.Error != nil {
				t.Fatalf("following %v: %d %+v", get.Header, resp.StatusCode, page.Error)
			}
			rows += len(page.Data)
			uri = page.NextURI
		}
		if rows == 0 {
			t.Fatal("no rows followed")
		}
		req, _ = http.NewRequest(http.MethodPost, "http://"+ts.addr+"/v1/statement", strings.NewReader("types"))
		req.SetBasicAuth("alice", "pw")
		_, qr = do(t, req)
		get, _ := http.NewRequest(http.MethodGet, qr.NextURI, nil)
		get.SetBasicAuth("bob", "x")
		if resp, _ := do(t, get); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("bob following alice's query: %d, want 404", resp.StatusCode)
		}
	}
}

// TestAGateThatFailsTellsTheClientNothingOfIt: a Gate that fails at Admit or at Verified (an
// error that is not a query.Error: here one naming its store's address and password) refuses
// the request 403 "authentication failed"; its text reaches the log, the store's password
// hidden, and never the client.
func TestAGateThatFailsTellsTheClientNothingOfIt(t *testing.T) {
	failure := errors.New("policy store postgres://qf:s3cretpw@10.9.8.7/policy: connection refused")
	gate := &frontendtest.RecordingGate{Refuse: map[string]error{"bob": failure}, RefuseVerified: map[string]error{"alice": failure}}
	var log logbuf.Buffer
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{Gate: gate,
		Auth: passwords{"alice": "pw", "bob": "pw"}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, user := range []string{"bob", "alice"} { // refused at Admit, at Verified
		req := httptest.NewRequest(http.MethodPost, "/v1/statement", strings.NewReader("SELECT 1"))
		req.SetBasicAuth(user, "pw")
		req.TLS = &tls.ConnectionState{HandshakeComplete: true}
		w := httptest.NewRecorder()
		s.routes().ServeHTTP(w, req)
		if body := w.Body.String(); w.Code != http.StatusForbidden || strings.TrimSpace(body) != "28000: authentication failed" {
			t.Errorf("%s, the Gate failing: %d %q; want 403 \"28000: authentication failed\" and nothing of the failure", user, w.Code, body)
		}
	}
	if got := log.String(); strings.Count(got, "10.9.8.7") != 2 || strings.Contains(got, "s3cretpw") {
		t.Errorf("the log: %s; want the Gate's failure twice, without the store's password", got)
	}
}
