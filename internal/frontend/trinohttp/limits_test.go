package trinohttp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// serveOn runs the server's own Serve (its limits included) on a loopback port.
func serveOn(t *testing.T, opts Options) string {
	t.Helper()
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
	return nc
}

// TestConnectionsMax: beyond ConnectionsMax open connections, a client gets 503 with
// Retry-After and the connection closes; once one leaves, requests are served again.
func TestConnectionsMax(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{ConnectionsMax: 2}})
	held := []net.Conn{rawConn(t, addr), rawConn(t, addr)}
	for _, nc := range held { // both accepted: each answers a request
		if _, err := io.WriteString(nc, "GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("held connection: %v %v", resp, err)
		}
	}
	resp, err := http.Get("http://" + addr + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "too many connections") {
		t.Fatalf("third connection: %d %q", resp.StatusCode, body)
	}
	held[0].Close()
	for { // the server sees the close, then frees the slot
		resp, err := http.Get("http://" + addr + "/v1/info")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
	}
}

// TestHandshakeDeadline: a client that opens a connection and sends no request headers is
// disconnected at the deadline.
func TestHandshakeDeadline(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{HandshakeTimeout: 100 * time.Millisecond}})
	nc := rawConn(t, addr)
	if _, err := io.WriteString(nc, "POST /v1/statement HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("the server kept unfinished headers open: %v", err)
	}
}

// TestBodyReadOnlyAfterAuth: an unauthenticated client announcing a huge statement is
// refused without the server reading it; an authenticated one over BodyBytesMax gets 413.
func TestBodyReadOnlyAfterAuth(t *testing.T) {
	addr := serveOn(t, Options{Auth: passwords{"alice": "pw"}, BodyBytesMax: 1 << 10})
	nc := rawConn(t, addr)
	if _, err := io.WriteString(nc, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Trino-User: alice\r\nContent-Length: 1073741824\r\n\r\nSELECT"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated: %v %v", resp, err)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/statement", strings.NewReader("SELECT '"+strings.Repeat("x", 2<<10)+"'"))
	req.SetBasicAuth("alice", "pw")
	req.Header.Set("X-Trino-User", "alice")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("authenticated, over BodyBytesMax: %d", resp.StatusCode)
	}
}

// TestQueriesMax: with QueriesMax queries held (queued behind the backend), the trino-go-client
// gets QUERY_QUEUE_FULL naming the bound at once and a refusal is counted; once the held
// queries' clients read their last page, statements run again.
func TestQueriesMax(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	waiting, release := backend.Hold()
	defer release()
	reg := prometheus.NewRegistry()
	ts := startServer(t, backend, Options{QueriesMax: 2, Registerer: reg})
	var held []QueryResults
	for range 2 {
		_, qr := post(t, ts.addr, "SELECT 1")
		held = append(held, qr)
	}
	<-waiting
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net: unbounded, the query waits for ever
	defer cancel()
	_, err := db.QueryContext(ctx, "SELECT 1")
	var qf *trino.ErrQueryFailed
	var et *trino.ErrTrino
	if !errors.As(err, &qf) || !errors.As(qf.Reason, &et) || et.ErrorName != "QUERY_QUEUE_FULL" || !strings.Contains(et.Message, "holds 2 queries") {
		t.Fatalf("third query: %v, want QUERY_QUEUE_FULL naming the bound", err)
	}
	if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("trinohttp", "queries")); got != 1 {
		t.Fatalf("refusals counted %v, want 1", got)
	}
	release()
	for _, qr := range held {
		for qr.NextURI != "" {
			_, qr = get(t, qr.NextURI)
		}
	}
	rows, err := db.Query("SELECT 1")
	if err != nil {
		t.Fatalf("after the held queries ended: %v", err)
	}
	scanAll(t, rows)
}
