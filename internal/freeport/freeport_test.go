package freeport

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestLoopbackBelowEphemeralAndNeverTwice: every port is bindable, below the ephemeral range,
// and handed out once.
func TestLoopbackBelowEphemeralAndNeverTwice(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		addr, err := Loopback()
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		if port, _ := strconv.Atoi(p); port < low || port >= high || port >= 32768 {
			t.Fatalf("port %d outside [%d, %d)", port, low, high)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		l.Close()
	}
}

// TestClosedRefuses: a dial to Closed is refused.
func TestClosedRefuses(t *testing.T) {
	c, err := net.Dial("tcp", Closed)
	if err == nil {
		c.Close()
		t.Fatalf("%s accepted a connection", Closed)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("dial %s: %v, want connection refused", Closed, err)
	}
}
