package querytest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// TestWorkerFlushesHistoryOnShutdown: with a flush interval far longer than the test, a query
// run on a worker reaches the control plane's history only through the final flush on SIGTERM.
func TestWorkerFlushesHistoryOnShutdown(t *testing.T) {
	cpAdmin := daemontest.FreeAddr(t)
	cpCfg := daemontest.WriteFile(t, "cp.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  workerApi: {enabled: true, secret: "%s"}
clusters:
  - {name: demo, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 4, options: {dataset: demo}}
clusterGroups:
  - {name: demo, members: [demo]}
routingFallback: demo
settings: {security: {trustLoopback: true}}
`, cpAdmin, adminToken, workerSecret))
	startDaemon(t, nil, []string{cpAdmin}, "--config", cpCfg)
	wPG, _, w := startWorker(t, cpAdmin, "w-shutdown", 3600)

	url := "postgres://queryflux@" + wPG + "/demo?sslmode=disable"
	daemontest.EventuallyNil(t, 20*time.Second, func() error { return countOrders(url) })
	w.Stop(t)
	body := daemontest.Get(t, "http://"+cpAdmin+"/admin/queries?worker=w-shutdown", adminToken)
	if !strings.Contains(body, "from orders") {
		t.Fatalf("the worker's query did not reach the control plane's history on shutdown: %.500s\nworker log:\n%s", body, w.Output())
	}
}
