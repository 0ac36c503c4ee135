package querytest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// TestHalfOpenAndSlowHeaderConnectionsLeaveTheAPIToOtherSources: one source (127.0.0.1) opens
// 40 connections to a control plane's admin / worker API (maxConnections 16, a source's share 4) that never send a
// byte, and 8 that send a request's headers a byte at a time; while they are held, another
// source (127.0.0.2, where the workers are) is answered, on a new connection each time, and
// the turned-away connections are counted (queryflux_frontend_bound_refusals_total{frontend=
// "api",bound="source_connections"}). Before: the API listener had no per-source share; the
// 40 silent connections held all it allows (twice maxConnections, each for the handshake
// timeout, open again by the attacker as it closes) and every other connection was closed at
// once: no heartbeat reached the control plane. A client of the first source that sends whole
// requests still leaves the share (keep-alive workers behind one NAT address).
func TestHalfOpenAndSlowHeaderConnectionsLeaveTheAPIToOtherSources(t *testing.T) {
	api := daemontest.FreeAddrs(t, 1)[0]
	startDaemon(t, nil, []string{api}, "--config", daemontest.WriteFile(t, "cp.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  limits: {maxConnections: 16, handshakeTimeoutSecs: 60}
`, api, adminToken)))
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	}
	get := func(c *http.Client, path string) (int, string) {
		resp, err := c.Get("http://" + api + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(from("127.0.0.2"), "/health"); code != 200 {
		t.Fatalf("/health before the attack: %d %s", code, body)
	}
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for range 40 {
		c, err := net.Dial("tcp", api)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for range 8 {
		c, err := net.Dial("tcp", api)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		_, _ = c.Write([]byte("GET /health HTTP/1.1\r\nHo"))
	}
	refusals := func() string {
		_, body := get(from("127.0.0.2"), "/metrics")
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, `queryflux_frontend_bound_refusals_total{bound="source_connections",frontend="api"}`) {
				return strings.Fields(l)[1]
			}
		}
		return "none"
	}
	// The listener has taken every attacking connection once the first source's refusals stop growing.
	last := "start"
	daemontest.Eventually(t, 20*time.Second, "the attacking connections accepted", func() bool {
		time.Sleep(200 * time.Millisecond)
		n := refusals()
		settled := n == last
		last = n
		return settled
	})
	for i := range 10 {
		if code, body := get(from("127.0.0.2"), "/health"); code != 200 {
			t.Fatalf("/health from another source while one holds %d connections (try %d): %d %s", len(held), i, code, body)
		}
	}
	if last == "none" || last == "0" {
		t.Errorf("connections turned away counted: %s", last)
	}
	// A third source's keep-alive connections, each past a whole request, are not in its share:
	// its seventh connection is answered as its first.
	d3 := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, Timeout: 5 * time.Second}
	for i := range 7 {
		c, err := d3.Dial("tcp", api)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("keep-alive connection %d of a third source: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
	// The first source's own whole requests: refused while its share is full of silent
	// connections (503, told to retry), answered once they are gone.
	if code, _ := get(from("127.0.0.1"), "/health"); code != 503 && code != 0 {
		t.Errorf("/health from the attacking source while its share is full: %d, want 503 or a close", code)
	}
	for _, c := range held {
		c.Close()
	}
	held = nil
	daemontest.Eventually(t, 10*time.Second, "the first source answered again", func() bool {
		code, _ := get(from("127.0.0.1"), "/health")
		return code == 200
	})
}
