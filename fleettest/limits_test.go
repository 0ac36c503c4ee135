package fleettest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// TestLimitsOnARealDaemon attacks a running standalone node as the security review did: 50
// MySQL connections that each announce a 16 MiB packet and hold (they took a worker from 42 to
// 844 MB), a deeply nested document to /admin/config/check (23 GB), an oversized body, and
// more admin connections than queryflux.limits allows. Its logs are JSON at debug level.
func TestLimitsOnARealDaemon(t *testing.T) {
	addrs := daemontest.FreeAddrs(t, 2)
	admin, my := addrs[0], addrs[1]
	cfg := daemontest.WriteFile(t, "limits.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  frontends:
    mysql: {enabled: true, listen: "%s"}
  limits: {maxConnections: 60}
clusters:
  - {name: duck, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 2}
clusterGroups:
  - {name: g, members: [duck]}
routingFallback: g
`, admin, adminToken, my))
	p := daemontest.Start(t, "standalone", "serve", "--config", cfg, "--log-format", "json", "--log-level", "debug")
	p.WaitListening(t, 30*time.Second, admin, my)
	before := p.RSSBytes(t)

	for range 50 {
		nc, err := net.Dial("tcp", my)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
		r := bufio.NewReader(nc)
		head := make([]byte, 4)
		if _, err := io.ReadFull(r, head); err != nil {
			t.Fatalf("greeting: %v", err)
		}
		if _, err := r.Discard(int(head[0]) | int(head[1])<<8 | int(head[2])<<16); err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(append([]byte{0xfe, 0xff, 0xff, 1}, make([]byte, 100)...)); err != nil {
			t.Fatal(err)
		}
		if rest, _ := io.ReadAll(r); !strings.Contains(string(rest), "larger than the limit") {
			t.Fatalf("a 16 MiB packet before login: answered %q, want the limit named and the connection closed", rest)
		}
	}
	grew := p.RSSBytes(t) - before
	t.Logf("RSS %d MB before, +%d KB after 50 held 16 MiB MySQL headers", before>>20, grew>>10)
	if grew > 64<<20 {
		t.Fatalf("50 hostile MySQL headers grew the daemon by %d MB", grew>>20)
	}

	deep := strings.Repeat("[", 200<<10) + strings.Repeat("]", 200<<10)
	code, _, body := daemontest.Call("POST", "http://"+admin+"/admin/config/check", adminToken, deep, nil)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "deeper than the limit") {
		t.Fatalf("400 KB of nesting: %d %s", code, body)
	}
	code, _, _ = daemontest.Call("POST", "http://"+admin+"/admin/config/check", adminToken, strings.Repeat("#", 2<<20), nil)
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 2 MiB configuration: %d, want 413", code)
	}
	grew = p.RSSBytes(t) - before
	t.Logf("RSS +%d KB after 400 KB of nesting and a 2 MiB body to /admin/config/check", grew>>10)
	if grew > 128<<20 {
		t.Fatalf("the hostile configurations grew the daemon by %d MB", grew>>20)
	}

	// 70 connections held open at once: at most 60 are served (a few may already be taken by
	// the requests above, kept alive), the rest get 503 with Retry-After.
	served, refused := 0, 0
	for range 70 {
		nc, err := net.Dial("tcp", admin)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(nc, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		switch {
		case err != nil:
			t.Fatal(err)
		case resp.StatusCode == http.StatusOK:
			served++
		case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
			refused++
		default:
			t.Fatalf("admin connection: %s", resp.Status)
		}
	}
	if served > 60 || served < 55 || refused != 70-served {
		t.Fatalf("70 held admin connections: %d served, %d refused; want at most 60 served", served, refused)
	}

	lines := strings.Split(strings.TrimSpace(p.Output()), "\n")
	debug := false
	for _, l := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(l), &entry); err != nil {
			t.Fatalf("--log-format json wrote a line that is not JSON: %q", l)
		}
		debug = debug || entry["level"] == "DEBUG"
	}
	if !debug {
		t.Fatalf("--log-level debug wrote no debug line:\n%s", p.Output())
	}
}
