package mysqlengine_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/mysqlwire"
	"github.com/queryflux/queryflux/internal/query"
)

// TestTLSToServer connects over TLS to a MySQL-protocol server that requires it (the local
// MariaDB has TLS disabled, so the server is QueryFlux's own MySQL wire frontend) and checks
// the option's parsing.
func TestTLSToServer(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "t"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mysqlwire.NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), mysqlwire.Options{
		AuthMethod: "caching_sha2_password", Users: mysqlwire.StaticUsers{"svc": "pw"},
		TLS: frontendtest.Static(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(l)
	defer srv.Close()

	eng, err := mysqlengine.OpenSpec(engine.Spec{Name: "tls", Kind: "mysql", Endpoint: l.Addr().String(), User: "svc", Password: "pw",
		Options: map[string]string{"tls": "skip-verify"}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rows, err := eng.Execute(context.Background(), &query.Request{SQL: "types"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Arrow → MySQL wire → Arrow keeps every type but bool (MySQL has none: TINYINT).
	want, src := frontendtest.AllTypes()
	defer src.Release()
	for c := 0; c < int(src.NumCols()); c++ {
		gotType, wantType := b.Schema().Field(c).Type, want.Field(c).Type
		if c == 0 {
			wantType = arrow.PrimitiveTypes.Int8
		}
		if !arrow.TypeEqual(gotType, wantType) {
			t.Errorf("column %s: type %s, want %s", want.Field(c).Name, gotType, wantType)
		}
		for r := 0; r < 2; r++ {
			got, exp := b.Column(c).ValueStr(r), src.Column(c).ValueStr(r)
			if c == 0 && r == 0 {
				exp = "1"
			}
			if got != exp {
				t.Errorf("column %s row %d: %q, want %q", want.Field(c).Name, r, got, exp)
			}
		}
	}
	if _, err := rows.Next(context.Background()); err != io.EOF {
		t.Fatal(err)
	}
	rows.Close()
	// Verification on: the self-signed certificate is refused.
	strict, _ := mysqlengine.Open(mysqlengine.Config{Name: "strict", Addr: l.Addr().String(), User: "svc", Password: "pw",
		TLS: &tls.Config{ServerName: "127.0.0.1"}})
	if err := strict.Ping(context.Background()); err == nil {
		t.Fatal("an unverifiable certificate was accepted")
	}
	if _, err := mysqlengine.OpenSpec(engine.Spec{Name: "bad", Kind: "mysql", Endpoint: "x:1", User: "u", Options: map[string]string{"tls": "maybe"}}); err == nil {
		t.Fatal("bad tls option accepted")
	}
}
