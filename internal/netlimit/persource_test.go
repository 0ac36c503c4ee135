package netlimit

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// dialFrom dials addr from the loopback address src (127.0.0.x: one source each).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPerSourceShare: a source holds at most its share of connections not yet authenticated:
// its next is refused (the refusal written, the source reported once, not once a socket),
// while another source's is accepted; a connection authenticated or closed gives its place
// back.
func TestPerSourceShare(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reports []string
	l := PerSource(raw, 2, func(c net.Conn) { _, _ = io.WriteString(c, "too many") }, func(src string, first bool) {
		mu.Lock()
		defer mu.Unlock()
		if first {
			reports = append(reports, src)
		}
	})
	accepted := serve(t, Listener(l, 100, nil))
	addr := raw.Addr().String()
	refusedFrom := func(src string) string {
		got, _ := io.ReadAll(dialFrom(t, src, addr))
		return string(got)
	}
	a1, _ := dialFrom(t, "127.0.0.1", addr), <-accepted
	dialFrom(t, "127.0.0.1", addr)
	a2 := <-accepted
	for range 3 {
		if got := refusedFrom("127.0.0.1"); got != "too many" {
			t.Fatalf("a third connection from one source read %q, want the refusal", got)
		}
	}
	dialFrom(t, "127.0.0.2", addr)
	<-accepted // another source gets in
	Authenticated(a2)
	dialFrom(t, "127.0.0.1", addr)
	a3 := <-accepted // an authenticated connection's place is free
	if got := refusedFrom("127.0.0.1"); got != "too many" {
		t.Fatalf("over the share again: %q", got)
	}
	a3.Close()
	a3.Close() // counted once
	dialFrom(t, "127.0.0.1", addr)
	<-accepted
	_ = a1
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 2 || reports[0] != "127.0.0.1" || reports[1] != "127.0.0.1" {
		t.Errorf("reported %q, want the source once each time it went over its share", reports)
	}
}
