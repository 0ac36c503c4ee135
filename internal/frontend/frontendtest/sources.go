package frontendtest

import (
	"net"
	"testing"
	"time"
)

// DialerFrom dials from the loopback address src: 127.0.0.1 and 127.0.0.2 are two sources to a
// listener on loopback.
func DialerFrom(src string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
}

// IdleSockets opens n connections to addr from the loopback address src and sends nothing on
// them, as a client that fills a listener's connection limit does; they close when t ends.
// It returns once the listener has had each for a moment (a refused one may already be closed).
func IdleSockets(t testing.TB, src, addr string, n int) {
	t.Helper()
	for range n {
		c, err := DialerFrom(src).Dial("tcp", addr)
		if err != nil {
			t.Fatalf("idle socket from %s: %v", src, err)
		}
		t.Cleanup(func() { c.Close() })
	}
	// The listener accepts (and counts or refuses) in its own time: a one-byte read from a
	// fresh socket from src tells when it has come to them, whatever it answers.
	probe, err := DialerFrom(src).Dial("tcp", addr)
	if err == nil {
		_ = probe.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = probe.Read(make([]byte, 1))
		probe.Close()
	}
}
