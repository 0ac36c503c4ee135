package trinohttp

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestRefusedLoginsStayInTheSourcesShare: a connection leaves its source's share of the
// listener only once a request on it logged in. A request the login policy refuses before any
// password (403: a refused user, a password over plain HTTP where TLS is required) keeps its
// connection open, and one source keeping such connections holds its share and no more: its
// next connection is refused 503. With as many connections that logged in, it gets in.
func TestRefusedLoginsStayInTheSourcesShare(t *testing.T) {
	opts := Options{Auth: passwords{"alice": "pw"}, Gate: fuzzGate{}, Limits: netlimit.Limits{ConnectionsMax: 8}} // a share of 4
	addr := serveOn(t, opts)
	// post sends SELECT 1 from 127.0.0.1 on a connection of its own, kept open and idle.
	post := func(user, password string) int {
		t.Helper()
		tr := &http.Transport{DialContext: frontendtest.DialerFrom("127.0.0.1").DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader("SELECT 1"))
		if password != "" {
			req.SetBasicAuth(user, password)
		} else {
			req.Header.Set("X-Trino-User", user)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	refusedNext := func() bool {
		t.Helper()
		c, err := frontendtest.DialerFrom("127.0.0.1").Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}
	for i, cred := range [][2]string{{"refused", ""}, {"alice", "pw"}, {"refused", ""}, {"alice", "wrong"}} {
		if got := post(cred[0], cred[1]); got != http.StatusForbidden {
			t.Fatalf("refused login %d (%v): %d, want 403", i+1, cred, got)
		}
	}
	if !refusedNext() {
		t.Fatal("a source holding its share in connections that were refused a login got another one")
	}
	addr = serveOn(t, opts)
	for i := range 5 {
		if got := post("trusted", ""); got != http.StatusOK {
			t.Fatalf("login %d of one source, the earlier ones logged in and open: %d", i+1, got)
		}
	}
	if refusedNext() {
		t.Fatal("a source whose open connections all logged in was refused")
	}
}
