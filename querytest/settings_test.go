package querytest

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

var healthFailuresRe = regexp.MustCompile(`(?m)^queryflux_cluster_health_check_failures_total\{cluster="down"\} (\d+)`)

// TestOperatorSettingsReachTheDaemon: queryflux.healthCheck and frontends.flightsql.resultTtlSecs
// set in a standalone's file pace what the daemon does. A cluster whose endpoint refuses
// connections is checked every 2 s (the default, 10 s, would not have checked it once within
// the wait); an executed Flight SQL statement whose ticket waits past its 1 s TTL is gone
// (NotFound), its slot of a one-slot cluster free for the next client.
func TestOperatorSettingsReachTheDaemon(t *testing.T) {
	addrs := daemontest.FreeAddrs(t, 3)
	flight, admin, closed := addrs[0], addrs[1], addrs[2]
	cfg := daemontest.WriteFile(t, "standalone.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  healthCheck: {everySecs: 2, timeoutSecs: 1}
  frontends:
    flightsql: {enabled: true, listen: "%s", resultTtlSecs: 1}
clusters:
  - {name: duck, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 1}
  - {name: down, engine: postgres, endpoint: "%s", database: nowhere, credentials: {user: nobody}, maxRunningQueries: 1}
clusterGroups:
  - {name: main, members: [duck], maxQueuedQueries: 10, capacityWaitTimeoutSecs: 30}
  - {name: other, members: [down]}
routingFallback: main
settings: {security: {trustLoopback: true}}
`, admin, adminToken, flight, closed))
	startDaemon(t, nil, []string{flight, admin}, "--config", cfg)

	t.Run("healthCheck", func(t *testing.T) {
		start := time.Now()
		daemontest.Eventually(t, 9*time.Second, "three failed checks of the cluster that refuses connections", func() bool {
			m := healthFailuresRe.FindStringSubmatch(daemontest.Get(t, "http://"+admin+"/metrics", ""))
			n := 0
			if m != nil {
				n, _ = strconv.Atoi(m[1])
			}
			return n >= 3
		})
		t.Logf("three failed health checks within %s", time.Since(start).Round(100*time.Millisecond))
	})

	t.Run("resultTtlSecs", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := frontendtest.DialFlight(t, flight)
		info, err := c.Execute(ctx, "SELECT 42")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // past the 1 s TTL and the sweep after it
		r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err == nil {
			for r.Next() {
			}
			err = r.Err()
			r.Release()
		}
		if status.Code(err) != codes.NotFound {
			t.Fatalf("a ticket fetched 3 s after its statement, with resultTtlSecs 1: %v, want NotFound", err)
		}
		// The expired result's slot (the cluster has one) went with it.
		rows, err := frontendtest.FlightRows(ctx, c, "SELECT 7", frontendtest.ValueStr)
		if err != nil || fmt.Sprint(rows) != "[[7]]" {
			t.Fatalf("a query after the expired result: %v %v", rows, err)
		}
	})
}
