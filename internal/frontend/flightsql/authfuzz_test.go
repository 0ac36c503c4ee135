package flightsql

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

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

// FuzzFlightAuth identifies calls with arbitrary authorization and x-queryflux-user
// metadata, from loopback or not, over TLS or not: no panic, and a call is let in only as a
// trusted user or as alice with her password over TLS.
func FuzzFlightAuth(f *testing.F) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	f.Add("Basic "+b64("alice:pw"), "", true, true)
	f.Add("Basic "+b64("alice:pw"), "", false, false)
	f.Add("Basic "+b64("trusted:"), "", true, false)
	f.Add("Basic "+b64("trusted:whatever"), "", true, false)
	f.Add("Basic "+b64(":"), "trusted", true, true)
	f.Add("Basic %%%", "", true, true)
	f.Add("Bearer nope", "trusted", true, true)
	f.Add("", "trusted", true, false)
	f.Add("", "", true, false)
	f.Add("basic "+b64("refused:pw"), "", true, true)
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{Gate: fuzzGate{}, Auth: fuzzAuth{}})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, authorization, user string, loopback, secure bool) {
		p := &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5}}
		if loopback {
			p.Addr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5}
		}
		if secure {
			p.AuthInfo = credentials.TLSInfo{}
		}
		md := metadata.MD{}
		if authorization != "" {
			md.Set("authorization", authorization)
		}
		if user != "" {
			md.Set("x-queryflux-user", user)
		}
		ctx := peer.NewContext(metadata.NewIncomingContext(context.Background(), md), p)
		got, err := s.identify(ctx, md)
		if err != nil {
			return
		}
		if got != "alice" && !(got == "trusted" && loopback) {
			t.Fatalf("identified as %q from authorization %q, user %q (loopback %v, TLS %v)", got, authorization, user, loopback, secure)
		}
		if got == "alice" && !secure {
			t.Fatalf("alice's password accepted without TLS (authorization %q)", authorization)
		}
	})
}

func (fuzzGate) Verified(query.Login) error { return nil }
