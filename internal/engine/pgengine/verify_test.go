package pgengine_test

import (
	"context"
	"errors"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
)

// TestSSLModeVerification: the options sslmode and sslrootcert reach pgx. Against a server
// whose certificate a test CA issued for "localhost" only, reached as 127.0.0.1, verify-full
// refuses (the name does not match) and verify-ca accepts; without the CA both refuse. The
// server is QueryFlux's own frontend (the local PostgreSQL has no TLS): past TLS, an answer
// from it (even an error) counts as connected.
func TestSSLModeVerification(t *testing.T) {
	ca := frontendtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "engine", "localhost")
	cfg, err := certs.Server(certFile, keyFile, "", false)
	if err != nil {
		t.Fatal(err)
	}
	srv := pgwire.NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), pgwire.Options{
		TrustUsers: []string{"svc"}, TLS: frontendtest.Static(cfg)})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	for _, c := range []struct {
		mode, root string
		ok         bool
	}{
		{"verify-full", ca.CertFile, false},
		{"verify-ca", ca.CertFile, true},
		{"verify-ca", "", false},
		{"require", "", true},
	} {
		opts := map[string]string{"sslmode": c.mode}
		if c.root != "" {
			opts["sslrootcert"] = c.root
		}
		e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: "postgres", Endpoint: l.Addr().String(), User: "svc", Database: "d", Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		err = e.(interface{ Ping(context.Context) error }).Ping(context.Background())
		e.Close()
		var answered *pgconn.PgError
		if errors.As(err, &answered) {
			err = nil
		}
		if (err == nil) != c.ok {
			t.Errorf("sslmode=%s sslrootcert=%q: %v, want success %v", c.mode, c.root, err, c.ok)
		}
	}
}
