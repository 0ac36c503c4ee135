package trinohttp

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// fuzzGate is a login policy in miniature: "trusted" needs no password from loopback,
// "refused" is refused, and a password needs TLS.
type fuzzGate struct{}

func (fuzzGate) Admit(l query.Login) (bool, error) {
	switch {
	case l.User == "trusted" && strings.HasPrefix(l.ClientAddr, "127.0.0.1:"):
		return true, nil
	case l.User == "refused", l.Cleartext && !l.TLS:
		return false, &query.Error{Code: query.CodeAuthRefused, Message: "refused"}
	}
	return false, nil
}

// fuzzAuth knows alice, password "pw".
type fuzzAuth struct{}

func (fuzzAuth) Authenticate(_ context.Context, c Credentials) (string, error) {
	if c.Token == "" && c.User == "alice" && c.Password == "pw" {
		return "alice", nil
	}
	return "", errors.New("authentication failed")
}

// FuzzTrinoAuth submits a statement with arbitrary Authorization and X-Trino-User headers,
// from loopback or not, over TLS or not (without the panic guard, so a panic fails the fuzz).
// A statement may start only as a trusted user, or as alice with her password over TLS.
func FuzzTrinoAuth(f *testing.F) {
	f.Add("Basic YWxpY2U6cHc=", "alice", true, true)   // alice:pw
	f.Add("Basic YWxpY2U6cHc=", "alice", false, false) // over plain http
	f.Add("Basic dHJ1c3RlZDo=", "", true, false)       // trusted: (empty password)
	f.Add("Basic dHJ1c3RlZDp4", "trusted", true, false)
	f.Add("Basic Og==", "", true, true) // ":"
	f.Add("Basic !!!", "x", true, true)
	f.Add("Bearer abc", "alice", true, true)
	f.Add("", "trusted", true, false)
	f.Add("", "refused", true, true)
	f.Add("", strings.Repeat("a", 5000), true, true)
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{Gate: fuzzGate{}, Auth: fuzzAuth{}})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.routes()
	f.Fuzz(func(t *testing.T, authorization, user string, loopback, secure bool) {
		req := httptest.NewRequest(http.MethodPost, "/v1/statement", strings.NewReader("select 1"))
		req.Header.Set("Authorization", authorization)
		req.Header.Set("X-Trino-User", user)
		req.RemoteAddr = "10.1.2.3:5"
		if loopback {
			req.RemoteAddr = "127.0.0.1:5"
		}
		if secure {
			req.TLS = &tls.ConnectionState{HandshakeComplete: true}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			return
		}
		basicUser, password, _ := req.BasicAuth()
		trusted := loopback && (basicUser == "trusted" || (basicUser == "" && user == "trusted"))
		alice := secure && basicUser == "alice" && password == "pw" && (user == "" || user == "alice")
		if !trusted && !alice {
			t.Fatalf("a statement started for Authorization %q, X-Trino-User %q (loopback %v, TLS %v)", authorization, user, loopback, secure)
		}
	})
}

func (fuzzGate) Verified(query.Login) error { return nil }
