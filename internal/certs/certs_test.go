package certs_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A File serves the pair on disk: rewritten, the new one from the next handshake; rewritten
// half way (certificate without its key), still the last good one.
func TestFileRereadsChangedPair(t *testing.T) {
	ca, next := frontendtest.NewCA(t), frontendtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "a")
	f, err := certs.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	issuer := func() string {
		c, err := f.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(c.Certificate[0])
	}
	first := issuer()
	newCert, newKey := next.Issue(t, "b")
	copyFile(t, newCert, certFile) // the key is still the old one: the pair does not load
	if got := issuer(); got != first {
		t.Fatalf("a half-written rotation replaced the certificate: %s", got)
	}
	copyFile(t, newKey, keyFile)
	if got := issuer(); got == first {
		t.Fatal("the rotated pair is not served")
	}
	if _, err := certs.Load(certFile, keyFile+".missing"); err == nil || !strings.Contains(err.Error(), ".missing") {
		t.Fatalf("a missing key file: %v", err)
	}
}

// A Switch is off until Set, keeps its pair for the same paths, and refuses a bad pair
// without changing what it serves.
func TestSwitch(t *testing.T) {
	var s certs.Switch
	if s.Config() != nil {
		t.Fatal("a fresh Switch offers TLS")
	}
	ca := frontendtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "a")
	if err := s.Set(certFile, keyFile); err != nil || s.Config() == nil {
		t.Fatalf("Set: %v", err)
	}
	cfg := s.Config()
	if err := s.Set(certFile, keyFile); err != nil || s.Config() != cfg {
		t.Fatal("the same paths replaced the configuration")
	}
	if err := s.Set(certFile, certFile); err == nil || s.Config() != cfg {
		t.Fatalf("a bad pair: %v", err)
	}
	if err := s.Set("", ""); err != nil || s.Config() != nil {
		t.Fatal("Set(\"\", \"\") does not turn TLS off")
	}
}

// OptionalTLS serves https and http on one port, Request.TLS telling them apart.
func TestOptionalTLS(t *testing.T) {
	ca := frontendtest.NewCA(t)
	cfg := ca.ServerTLS(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, map[bool]string{true: "tls", false: "plain"}[r.TLS != nil])
	})}
	go srv.Serve(certs.OptionalTLS(l, func() *tls.Config { return cfg }))
	t.Cleanup(func() { srv.Close() })
	get := func(c *http.Client, url string) string {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	secure := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientTLS()}}
	if got := get(secure, "https://"+l.Addr().String()); got != "tls" {
		t.Fatalf("https: %q", got)
	}
	if got := get(http.DefaultClient, "http://"+l.Addr().String()); got != "plain" {
		t.Fatalf("http: %q", got)
	}
}
