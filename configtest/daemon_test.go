package configtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/node/workerapi"
)

// The credentials every test configures; none may appear in a log or a status answer.
const (
	workerSecret    = "cfgtest-worker-secret-5f1e2d3c4b"
	adminToken      = "cfgtest-admin-token-9a8b7c6d5e"
	clusterPassword = "cfgtest-cluster-pw-1029384756"
	// configKey seals the engine passwords a control plane stores in Postgres.
	configKey = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
	heartbeat = 200 * time.Millisecond
)

// TestMain removes the built queryflux binary after the run.
func TestMain(m *testing.M) { daemontest.Main(m) }

// procs are every process a test started, for the credential scan.
type procs struct {
	mu  sync.Mutex
	all []*daemontest.Proc
}

func (ps *procs) start(t *testing.T, name string, args ...string) *daemontest.Proc {
	t.Helper()
	p := daemontest.Start(t, name, args...)
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	return p
}

// scanLogs fails the test if any configured credential appears in any process's output.
func (ps *procs) scanLogs(t *testing.T) {
	t.Helper()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.all {
		noSecrets(t, p.Name+" log", p.Output())
	}
}

func noSecrets(t *testing.T, where, text string) {
	t.Helper()
	for _, secret := range []string{workerSecret, adminToken, clusterPassword} {
		if strings.Contains(text, secret) {
			t.Errorf("a configured credential leaked into %s", where)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Write then rename: a reload never reads a half-written file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// controlPlane is a running control plane process and its API address.
type controlPlane struct {
	*daemontest.Proc
	api, file string
}

func startControlPlane(t *testing.T, ps *procs, name, api, file string) *controlPlane {
	t.Helper()
	p := ps.start(t, name, "serve", "--config", file, "--allow-short-timeouts",
		"--heartbeat-interval", heartbeat.String(), "--stale-after", "3s", "--evict-grace", "10s")
	cp := &controlPlane{Proc: p, api: api, file: file}
	daemontest.Eventually(t, 20*time.Second, name+" serving a configuration", func() bool {
		if p.Exited() {
			t.Fatalf("%s exited:\n%s", name, daemontest.Tail(p.Output(), 3000))
		}
		code, _, _ := daemontest.Call("GET", "http://"+api+"/admin/config", adminToken, "", nil)
		return code == 200
	})
	return cp
}

// revision is the revision the control plane serves (GET /admin/config).
func (cp *controlPlane) revision(t *testing.T) string {
	t.Helper()
	code, _, body := daemontest.Call("GET", "http://"+cp.api+"/admin/config", adminToken, "", nil)
	var ans struct {
		Revision string `json:"revision"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &ans) != nil {
		t.Fatalf("%s GET /admin/config: %d %s", cp.Name, code, body)
	}
	return ans.Revision
}

// workers lists the control plane's registry (GET /admin/workers).
func (cp *controlPlane) workers(t *testing.T) map[string]workerapi.WorkerInfo {
	t.Helper()
	code, _, body := daemontest.Call("GET", "http://"+cp.api+workerapi.PathAdminWorkers, adminToken, "", nil)
	var list []workerapi.WorkerInfo
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		return nil
	}
	out := map[string]workerapi.WorkerInfo{}
	for _, w := range list {
		out[w.Name] = w
	}
	return out
}

// waitAllCurrent waits until every named worker reports revision and /admin/workers marks it current.
func (cp *controlPlane) waitAllCurrent(t *testing.T, revision string, names ...string) time.Duration {
	t.Helper()
	start := time.Now()
	daemontest.Eventually(t, 15*time.Second, fmt.Sprintf("%v current at %s on %s", names, revision, cp.Name), func() bool {
		ws := cp.workers(t)
		for _, n := range names {
			if w, ok := ws[n]; !ok || !w.Current || w.Revision != revision {
				return false
			}
		}
		return true
	})
	return time.Since(start)
}

// workerConfigETag registers a probe worker with cp and returns the ETag of GET /worker/config.
func (cp *controlPlane) workerConfigETag(t *testing.T, probe string) string {
	t.Helper()
	code, _, body := daemontest.Call("POST", "http://"+cp.api+workerapi.PathRegister, workerSecret,
		fmt.Sprintf(`{"name":%q,"version":"test"}`, probe), map[string]string{"Content-Type": workerapi.MediaWorkerRegister})
	var reg workerapi.RegisterResponse
	if code != 200 || json.Unmarshal([]byte(body), &reg) != nil {
		t.Fatalf("%s register %s: %d %s", cp.Name, probe, code, body)
	}
	code, h, body := daemontest.Call("GET", "http://"+cp.api+snapshot.PathConfig, reg.Token, "", nil)
	if code != 200 {
		t.Fatalf("%s GET %s: %d %s", cp.Name, snapshot.PathConfig, code, body)
	}
	return h.Get("ETag")
}

// worker is a running worker process and its ops listener.
type worker struct {
	*daemontest.Proc
	ops string
}

func startWorker(t *testing.T, ps *procs, name, file string) *worker {
	t.Helper()
	ops := daemontest.FreeAddr(t)
	p := ps.start(t, name, "serve", "--config", file, "--name", name, "--ops-listen", ops,
		"--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts")
	return &worker{Proc: p, ops: ops}
}

func (w *worker) ready() bool {
	code, _, _ := daemontest.Call("GET", "http://"+w.ops+"/readyz", "", "", nil)
	return code == 200
}

// status is the worker's /worker/status, raw and decoded.
func (w *worker) status(t *testing.T) (string, workerStatus) {
	t.Helper()
	code, _, body := daemontest.Call("GET", "http://"+w.ops+workerapi.PathWorkerStatus, "", "", nil)
	var st workerStatus
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("%s /worker/status: %d %s", w.Name, code, body)
	}
	return body, st
}

type workerStatus struct {
	Ready    bool                     `json:"ready"`
	Revision workerapi.RevisionStatus `json:"revision"`
	Config   workerapi.ConfigStatus   `json:"config"`
}

// metric returns the value of the first /metrics line starting with series (or "").
func metric(t *testing.T, url, series string) string {
	t.Helper()
	_, _, body := daemontest.Call("GET", url, "", "", nil)
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, series+" ") {
			return strings.TrimPrefix(line, series+" ")
		}
	}
	return ""
}

func workerFile(t *testing.T, api string, peers ...string) string {
	t.Helper()
	peer := ""
	if len(peers) > 0 {
		b, _ := json.Marshal(peers)
		peer = fmt.Sprintf(", peerBootstrap: {address: %s, maxAgeSecs: 600}", b)
	}
	path := filepath.Join(t.TempDir(), "worker.yaml")
	writeFile(t, path, fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: %q, secret: %q, pollTimeoutSecs: 20%s}
`, "http://"+api, workerSecret, peer))
	return path
}

// clusters is the shared part of a configuration: one PostgreSQL cluster (with a password, to
// check it never leaks) whose cap is maxRunning.
func clusters(maxRunning int) string {
	return fmt.Sprintf(`clusters:
  pg:
    engine: postgres
    endpoint: 127.0.0.1:5432
    database: postgres
    credentials: {user: postgres, password: %q}
    maxRunningQueries: %d
clusterGroups:
  - {name: main, members: [pg]}
routingFallback: main
settings: {security: {trustLoopback: true}}
`, clusterPassword, maxRunning)
}
