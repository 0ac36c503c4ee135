package trinohttp

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestOneSourceCannotFillTheListener: a source (127.0.0.1) opening idle sockets up to the
// connection limit holds only its share of it (HTTP logs in per request: a connection
// counts until a request on it logged in); another source's client (127.0.0.2) posts a query meanwhile (before:
// 503 for each request until the first source's sockets closed). The first source's extra
// sockets are answered 503.
func TestOneSourceCannotFillTheListener(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{ConnectionsMax: 8}})
	frontendtest.IdleSockets(t, "127.0.0.1", addr, 8)
	resp, err := postFrom(t, addr, "127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var qr QueryResults
	if err := json.NewDecoder(resp.Body).Decode(&qr); resp.StatusCode != http.StatusOK || err != nil || qr.ID == "" {
		t.Fatalf("another source's query, with the first source's sockets open: %s, %v", resp.Status, err)
	}
	// The refusal is written as the connection is accepted, maybe before a request is sent (net/http's
	// client then reports "unsolicited response" instead of the status): read it off the socket.
	c, err := frontendtest.DialerFrom("127.0.0.1").Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n")
	refused, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || refused.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the first source's next connection: %v, %v; want 503", refused, err)
	}
}

// postFrom posts SELECT 1 to addr as carol on a connection of its own from the loopback address
// src, which stays open (idle, once the answer is read) until t ends.
func postFrom(t *testing.T, addr, src string) (*http.Response, error) {
	tr := &http.Transport{DialContext: frontendtest.DialerFrom(src).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Trino-User", "carol")
	return (&http.Client{Transport: tr}).Do(req)
}

// TestLoggedInConnectionsLeaveTheSourcesShare: a source's share bounds its connections before
// login only. One source (a sidecar's application, all on loopback) keeps more connections
// than its share (4 of 8) open, each after a query that logged in, and each gets in.
func TestLoggedInConnectionsLeaveTheSourcesShare(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{ConnectionsMax: 8}})
	for i := range 7 {
		resp, err := postFrom(t, addr, "127.0.0.1")
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // kept open and idle in its transport
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d of one source, the earlier ones logged in and open: %s", i+1, resp.Status)
		}
	}
}
