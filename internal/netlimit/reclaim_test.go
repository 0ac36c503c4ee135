package netlimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHTTPReclaimsQuietConnectionsAtTheLimit: a client fills the listener with connections it
// leaves idle after one request (any client can: /health needs no credentials) and with
// connections on which it never sends anything. Rather than refuse every other client 503
// until those idle out (2 minutes), a new connection at the limit takes the place of the
// one quiet longest, once it has been quiet for reclaimQuietAfter. A connection with a request
// in progress (a long-poll) is never taken.
func TestHTTPReclaimsQuietConnectionsAtTheLimit(t *testing.T) {
	reclaimQuietAfter = 50 * time.Millisecond
	t.Cleanup(func() { reclaimQuietAfter = ReclaimQuietAfter })
	release := make(chan struct{})
	arrived := make(chan struct{}, 8)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	HTTP(srv.Config, 4)
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	addr := srv.Listener.Addr().String()
	send := func(c net.Conn, path string) {
		t.Helper()
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	awaitArrival := func() {
		t.Helper()
		select {
		case <-arrived:
		case <-time.After(30 * time.Second): // a safety net, not a measure
			t.Fatal("a long-poll never reached the handler")
		}
	}
	status := func(c net.Conn) int {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// Two long-polls in progress, one idle keep-alive connection, one silent connection.
	held := []net.Conn{dial(t, addr), dial(t, addr)}
	for _, c := range held {
		send(c, "/hold")
		awaitArrival()
	}
	idle := dial(t, addr)
	send(idle, "/")
	if s := status(idle); s != 200 {
		t.Fatalf("first request: %d", s)
	}
	silent := dial(t, addr)
	time.Sleep(2 * reclaimQuietAfter) // both quiet long enough

	for i := range 2 {
		c := dial(t, addr)
		send(c, "/")
		if s := status(c); s != 200 {
			t.Fatalf("new connection %d at the limit with quiet ones to take: %d, want 200", i, s)
		}
		c.Close()
	}
	for _, c := range []net.Conn{idle, silent} {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a safety net, not a measure
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Fatalf("a quiet connection was not closed: read %d, %v", n, err)
		}
	}
	// Nothing quiet is left to take (the two taken slots were freed by their clients' closes,
	// so fill them with fresh connections): a new one is refused as before.
	for range 2 {
		time.Sleep(2 * reclaimQuietAfter) // a closed one not yet seen closed is quiet enough to take
		send(dial(t, addr), "/hold")
		awaitArrival()
	}
	over := dial(t, addr)
	send(over, "/")
	if s := status(over); s != http.StatusServiceUnavailable {
		t.Fatalf("at the limit with only requests in progress: %d, want 503", s)
	}
}
