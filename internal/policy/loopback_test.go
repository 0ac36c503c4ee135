package policy

import (
	"net"
	"net/netip"
	"testing"

	"pgregory.net/rapid"
)

// isLoopback answers as net.ParseIP of the host did (the reference below), for any address a
// client may be named by: IPv4, IPv6 (with an IPv4 inside, a zone, brackets and a port), and
// any text at all.
func TestLoopbackIsWhatParseIPSays(t *testing.T) {
	reference := func(addr string) bool {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	rapid.Check(t, func(t *rapid.T) {
		var host string
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			b := rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "v4")
			if rapid.Bool().Draw(t, "loopback") {
				b[0] = 127
			}
			host = netip.AddrFrom4([4]byte(b)).String()
		case 1:
			b := rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "v6")
			switch rapid.IntRange(0, 3).Draw(t, "v6kind") {
			case 0:
				b = append(make([]byte, 15), 1) // ::1
			case 1:
				copy(b, append(make([]byte, 10), 0xff, 0xff, 127)) // ::ffff:127.x.y.z
			}
			host = netip.AddrFrom16([16]byte(b)).String()
			if rapid.Bool().Draw(t, "zone") {
				host += "%" + rapid.StringMatching(`[a-z0-9]{1,4}`).Draw(t, "zoneName")
			}
		case 2:
			// What a local client is named by, and what is near it: a port of any text.
			addr := "127.0.0.1:" + rapid.StringMatching(`[0-9:\[\]a%]{0,6}`).Draw(t, "rest")
			if got, want := isLoopback(addr), reference(addr); got != want {
				t.Fatalf("isLoopback(%q) = %v, net.ParseIP says %v", addr, got, want)
			}
			host = rapid.SampledFrom([]string{"::1", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1", "127.1", "127.0.0.01",
				"::127.0.0.1", "localhost", "", "1::", "[::1]", "::1%lo"}).Draw(t, "odd")
		default:
			host = rapid.StringMatching(`[0-9a-fA-F:.%\[\]]{0,20}`).Draw(t, "text")
		}
		addr := host
		if rapid.Bool().Draw(t, "port") {
			addr = net.JoinHostPort(host, rapid.StringMatching(`[0-9]{0,5}`).Draw(t, "portNumber"))
		}
		if got, want := isLoopback(addr), reference(addr); got != want {
			t.Fatalf("isLoopback(%q) = %v, net.ParseIP says %v", addr, got, want)
		}
	})
}
