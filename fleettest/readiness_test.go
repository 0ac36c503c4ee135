package fleettest

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// A standalone node is ready once configured, and after SIGTERM answers 503 "draining" for
// --drain-delay while it still serves, then exits cleanly.
func TestStandaloneReadinessAndDrainDelay(t *testing.T) {
	addrs := daemontest.FreeAddrs(t, 2)
	admin, pg := addrs[0], addrs[1]
	cfg := daemontest.WriteFile(t, "standalone.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  frontends:
    postgres: {enabled: true, listen: "%s"}
clusters:
  - {name: duck, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 2}
clusterGroups:
  - {name: g, members: [duck]}
routingFallback: g
`, admin, adminToken, pg))
	p := daemontest.StartWith(t, daemontest.Options{Graceful: true, CleanExit: true, ExitLimit: 40 * time.Second}, "standalone",
		"serve", "--config", cfg, "--drain-delay", "10s")
	readyz := func() (int, string) {
		code, _, body := daemontest.Call("GET", "http://"+admin+"/readyz", "", "", nil)
		return code, body
	}
	daemontest.Eventually(t, 20*time.Second, "/readyz 200", func() bool { c, _ := readyz(); return c == 200 })
	p.Signal(syscall.SIGTERM)
	daemontest.Eventually(t, 5*time.Second, "/readyz 503 draining", func() bool {
		c, body := readyz()
		return c == 503 && strings.Contains(body, "draining")
	})
	if code, _, _ := daemontest.Call("GET", "http://"+admin+"/health", "", "", nil); code != 200 {
		t.Fatalf("/health during the drain delay: %d (the node must still serve)", code)
	}
	p.Wait(t)
}

// A node whose frontends are on is not ready until it has clusters to send queries to.
func TestReadinessNeedsClustersWhenFrontendsAreOn(t *testing.T) {
	addrs := daemontest.FreeAddrs(t, 2)
	admin, pg := addrs[0], addrs[1]
	cfg := daemontest.WriteFile(t, "cp.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  workerApi: {enabled: true, secret: "%s"}
  frontends:
    postgres: {enabled: true, listen: "%s"}
`, admin, adminToken, workerSecret, pg))
	daemontest.Start(t, "cp", "serve", "--config", cfg)
	daemontest.Eventually(t, 20*time.Second, "/readyz 503 naming the missing configuration", func() bool {
		code, _, body := daemontest.Call("GET", "http://"+admin+"/readyz", "", "", nil)
		return code == 503 && strings.Contains(body, "no configuration with clusters")
	})
}
