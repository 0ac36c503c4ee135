package mysqlengine_test

import (
	"context"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"net"
	"testing"

	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/mysqlwire"
)

// TestTLSVerificationModes: against a server whose certificate a test CA issued for
// "localhost" only, reached as 127.0.0.1, verify-full refuses (the name does not match),
// verify-ca accepts (the chain is the CA's), and both refuse without the CA file; a
// certificate naming 127.0.0.1 passes verify-full.
func TestTLSVerificationModes(t *testing.T) {
	ca := frontendtest.NewCA(t)
	serve := func(hosts ...string) string {
		certFile, keyFile := ca.Issue(t, "engine-"+hosts[0], hosts...)
		cfg, err := certs.Server(certFile, keyFile, "", false)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := mysqlwire.NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), mysqlwire.Options{
			AuthMethod: "caching_sha2_password", Users: mysqlwire.StaticUsers{"svc": "pw"}, TLS: frontendtest.Static(cfg)})
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return l.Addr().String()
	}
	ping := func(addr, mode, caFile string) error {
		e, err := mysqlengine.OpenSpec(engine.Spec{Name: "m", Kind: "mysql", Endpoint: addr, User: "svc", Password: "pw",
			Options: map[string]string{"tls": mode, "tlsCAFile": caFile}})
		if err != nil {
			return err
		}
		defer e.Close()
		return e.(interface{ Ping(context.Context) error }).Ping(context.Background())
	}
	byName, byIP := serve("localhost"), serve("127.0.0.1")
	for _, c := range []struct {
		addr, mode, ca string
		ok             bool
	}{
		{byName, "verify-full", ca.CertFile, false},
		{byName, "verify-ca", ca.CertFile, true},
		{byName, "verify-ca", "", false},
		{byIP, "verify-full", ca.CertFile, true},
		{byIP, "true", ca.CertFile, true},
		{byIP, "verify-full", "", false},
	} {
		if err := ping(c.addr, c.mode, c.ca); (err == nil) != c.ok {
			t.Errorf("tls=%s tlsCAFile=%q against a certificate for %s: %v, want success %v", c.mode, c.ca, c.addr, err, c.ok)
		}
	}
}
