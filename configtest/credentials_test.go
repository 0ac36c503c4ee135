package configtest

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/node/workerapi"
)

// workerPassword is the Postgres password only the worker's own YAML carries.
const workerPassword = "cfgtest-worker-local-pg-pw-5647382910"

// TestStrippedCredentials: a control plane with queryflux.workerApi.credentials: stripped
// serves /worker/config without the cluster password; a worker whose local YAML names the
// cluster's credentials activates it and answers psql; a worker without them refuses the
// revision (not ready, the revision seen but not active, the log naming the cluster). No
// password appears in any log or status.
func TestStrippedCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	db := migratedDatabase(t)
	ps := &procs{}
	api := daemontest.FreeAddr(t)
	file := filepath.Join(t.TempDir(), "cp.yaml")
	writeFile(t, file, fmt.Sprintf(`queryflux:
  role: controlPlane
  adminApi: {listen: %q, token: %q}
  workerApi: {enabled: true, secret: %q, credentials: stripped}
  persistence: {databaseUrl: %q}
`, api, adminToken, workerSecret, db)+clusters(3))
	cp := startControlPlane(t, ps, "cp-stripped", api, file)
	rev := cp.revision(t)

	// The snapshot served to workers carries no password.
	body := workerConfigBody(t, cp, "probe-stripped")
	if strings.Contains(body, clusterPassword) {
		t.Fatal("a stripped /worker/config carries the cluster password")
	}
	snap, err := snapshot.Decode([]byte(body))
	if err != nil || snap.Credentials != snapshot.Stripped || snap.Revision != rev {
		t.Fatalf("GET /worker/config: %v mode %q revision %q (want %s)", err, snap.Credentials, snap.Revision, rev)
	}

	// A worker with its own credentials for pg runs the revision and answers psql.
	pgAddr := daemontest.FreeAddr(t)
	withCreds := filepath.Join(t.TempDir(), "worker-creds.yaml")
	writeFile(t, withCreds, fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: %q, secret: %q, pollTimeoutSecs: 20}
  frontends: {postgres: {enabled: true, listen: %q}}
  clusterCredentials:
    pg: {user: postgres, password: %q}
`, "http://"+api, workerSecret, pgAddr, workerPassword))
	good := startWorker(t, ps, "sc-good", withCreds)
	bad := startWorker(t, ps, "sc-bare", workerFile(t, api))
	cp.waitAllCurrent(t, rev, "sc-good")
	host, port, _ := strings.Cut(pgAddr, ":")
	daemontest.Eventually(t, 10*time.Second, "psql through the worker with local credentials", func() bool {
		out, err := exec.Command("psql", "-h", host, "-p", port, "-U", "queryflux", "-d", "postgres", "-At", "-c", "select 40+2").CombinedOutput()
		return err == nil && strings.TrimSpace(string(out)) == "42"
	})

	// The worker without them refuses the revision, says which cluster, and stays unready.
	daemontest.Eventually(t, 10*time.Second, "the bare worker refusing the stripped revision", func() bool {
		return strings.Contains(bad.Output(), "queryflux.clusterCredentials has no entry for cluster")
	})
	if !strings.Contains(bad.Output(), "pg") {
		t.Fatal("the refusal does not name the cluster")
	}
	raw, st := bad.status(t)
	if st.Ready || st.Revision.Active != "" || st.Revision.LastSeen != rev || bad.ready() {
		t.Fatalf("the bare worker's status after the refusal: %s", raw)
	}
	if w := cp.workers(t)["sc-bare"]; w.Current {
		t.Fatalf("/admin/workers marks the refusing worker current: %+v", w)
	}
	for _, w := range []*worker{good, bad} {
		raw, _ := w.status(t)
		noSecrets(t, w.Name+" /worker/status", raw)
		if strings.Contains(raw, workerPassword) {
			t.Errorf("%s /worker/status shows the local password", w.Name)
		}
		metrics := metricsBody(t, "http://"+w.ops+"/metrics")
		if strings.Contains(metrics, workerPassword) || strings.Contains(metrics, clusterPassword) {
			t.Errorf("%s /metrics shows a password", w.Name)
		}
	}
	for _, p := range ps.all {
		if strings.Contains(p.Output(), workerPassword) {
			t.Errorf("the local password leaked into %s's log", p.Name)
		}
	}
	ps.scanLogs(t)
}

// workerConfigBody registers a probe worker with cp and returns GET /worker/config's body.
func workerConfigBody(t *testing.T, cp *controlPlane, probe string) string {
	t.Helper()
	code, _, body := daemontest.Call("POST", "http://"+cp.api+workerapi.PathRegister, workerSecret,
		fmt.Sprintf(`{"name":%q,"version":"test"}`, probe), map[string]string{"Content-Type": workerapi.MediaWorkerRegister})
	var reg workerapi.RegisterResponse
	if code != 200 || json.Unmarshal([]byte(body), &reg) != nil {
		t.Fatalf("%s register %s: %d %s", cp.Name, probe, code, body)
	}
	code, _, body = daemontest.Call("GET", "http://"+cp.api+snapshot.PathConfig, reg.Token, "", nil)
	if code != 200 {
		t.Fatalf("%s GET %s: %d %s", cp.Name, snapshot.PathConfig, code, body)
	}
	return body
}

func metricsBody(t *testing.T, url string) string {
	t.Helper()
	_, _, body := daemontest.Call("GET", url, "", "", nil)
	return body
}
