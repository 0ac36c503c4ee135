package fleettest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/node/workerapi"
)

// The real control plane, on PostgreSQL, sends each worker only the clusters its labels select:
// the raw bytes a zone=eu worker receives hold the eu engine's password and nothing of the us
// cluster, and the other way round; a real worker with zone=us runs the us groups only.
func TestWorkerSnapshotHoldsOnlyItsSelectedCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	db := migratedDatabase(t)
	f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
	f.cpConfig = daemontest.WriteFile(t, "cp.yaml", f.controlPlaneYAML(db, `clusters:
  - {name: pg-eu, engine: postgres, endpoint: "127.0.0.1:5432", database: eu_db, maxRunningQueries: 2,
     credentials: {user: postgres, password: eu-engine-pw-1}, workerSelector: {zone: eu}}
  - {name: pg-us, engine: postgres, endpoint: "localhost:5432", database: us_db, maxRunningQueries: 2,
     credentials: {user: postgres, password: us-engine-pw-2}, workerSelector: {zone: us}}
clusterGroups:
  - {name: eu, members: [pg-eu]}
  - {name: us, members: [pg-us], workerSelector: {zone: us}}
routingFallback: eu
`))
	f.startControlPlane()

	raw := map[string]string{}
	for _, zone := range []string{"eu", "us"} {
		code, _, body := daemontest.Call("POST", "http://"+f.apiAddr+workerapi.PathRegister, workerSecret,
			fmt.Sprintf(`{"name":"probe-%s","version":"1","labels":{"zone":%q},"frontends":[]}`, zone, zone),
			map[string]string{"Content-Type": workerapi.MediaWorkerRegister})
		var reg workerapi.RegisterResponse
		if code != 200 || json.Unmarshal([]byte(body), &reg) != nil {
			t.Fatalf("register %s: %d %s", zone, code, body)
		}
		daemontest.Eventually(t, 15*time.Second, zone+" snapshot served", func() bool {
			code, _, body = daemontest.Call("GET", "http://"+f.apiAddr+snapshot.PathConfig, reg.Token, "", nil)
			return code == 200
		})
		raw[zone] = body
	}
	for zone, rules := range map[string]struct{ has, lacks []string }{
		"eu": {has: []string{"eu-engine-pw-1", "pg-eu"}, lacks: []string{"us-engine-pw-2", "pg-us", "localhost:5432", "us_db"}},
		"us": {has: []string{"us-engine-pw-2", "pg-us"}, lacks: []string{"eu-engine-pw-1", "pg-eu", "eu_db"}},
	} {
		for _, s := range rules.has {
			if !strings.Contains(raw[zone], s) {
				t.Errorf("the %s worker's snapshot lacks %q", zone, s)
			}
		}
		for _, s := range rules.lacks {
			if strings.Contains(raw[zone], s) {
				t.Errorf("the %s worker's snapshot holds %q:\n%s", zone, s, raw[zone])
			}
		}
	}

	// A real worker labelled zone=us runs its own filtered revision and serves the us group.
	ops := daemontest.FreeAddr(t)
	wConfig := daemontest.WriteFile(t, "worker.yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: "http://%s", secret: %q}
  labels: {zone: eu}
`, f.apiAddr, workerSecret))
	daemontest.Start(t, "w-us", "serve", "--config", wConfig, "--name", "w-us", "--label", "zone=us",
		"--ops-listen", ops, "--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts")
	daemontest.Eventually(t, 30*time.Second, "w-us runs its current revision", func() bool {
		w := f.workers()["w-us"]
		return w.Current && w.Revision != ""
	})
	w := f.workers()["w-us"]
	if w.Labels["zone"] != "us" || !slices.Equal(w.Groups, []string{"us"}) {
		t.Fatalf("w-us as listed: labels %v groups %v", w.Labels, w.Groups)
	}
	if eu := f.workers()["probe-eu"]; !slices.Equal(eu.Groups, []string{"eu"}) {
		t.Fatalf("probe-eu as listed: groups %v", eu.Groups)
	}
}
