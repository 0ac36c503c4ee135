package configtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/transport"
)

// The credentials every test configures; none may appear in a log or a status answer.
const (
	workerSecret    = "cfgtest-worker-secret-5f1e2d3c4b"
	adminToken      = "cfgtest-admin-token-9a8b7c6d5e"
	clusterPassword = "cfgtest-cluster-pw-1029384756"
	heartbeat       = 200 * time.Millisecond
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/queryflux once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(file))
		dir, err := os.MkdirTemp("", "queryflux-configtest-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "queryflux")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/queryflux")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is one daemon process with its output kept in a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// procs are every process a test started, for the credential scan.
type procs struct {
	mu  sync.Mutex
	all []*proc
}

func (ps *procs) start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); out.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("--- %s log ---\n%s", name, tail(p.output(), 3000))
		}
	})
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
		noSecrets(t, p.name+" log", p.output())
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

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func (p *proc) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit after SIGTERM", p.name)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) output() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
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

func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", limit, what)
}

// call makes one HTTP request and returns the status, headers and body (status 0: no answer).
func call(method, url, token, body string, header map[string]string) (int, http.Header, string) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err.Error()
	}
	if token != "" {
		transport.SetBearer(req, token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

// controlPlane is a running control plane process and its API address.
type controlPlane struct {
	*proc
	api, file string
}

func startControlPlane(t *testing.T, ps *procs, name, api, file string) *controlPlane {
	t.Helper()
	p := ps.start(t, name, "serve", "--config", file, "--allow-short-timeouts",
		"--heartbeat-interval", heartbeat.String(), "--stale-after", "3s", "--evict-grace", "10s")
	cp := &controlPlane{proc: p, api: api, file: file}
	eventually(t, 20*time.Second, name+" serving a configuration", func() bool {
		if p.exited() {
			t.Fatalf("%s exited:\n%s", name, tail(p.output(), 3000))
		}
		code, _, _ := call("GET", "http://"+api+"/admin/config", adminToken, "", nil)
		return code == 200
	})
	return cp
}

// revision is the revision the control plane serves (GET /admin/config).
func (cp *controlPlane) revision(t *testing.T) string {
	t.Helper()
	code, _, body := call("GET", "http://"+cp.api+"/admin/config", adminToken, "", nil)
	var ans struct {
		Revision string `json:"revision"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &ans) != nil {
		t.Fatalf("%s GET /admin/config: %d %s", cp.name, code, body)
	}
	return ans.Revision
}

// workers lists the control plane's registry (GET /admin/workers).
func (cp *controlPlane) workers(t *testing.T) map[string]transport.WorkerInfo {
	t.Helper()
	code, _, body := call("GET", "http://"+cp.api+transport.PathAdminWorkers, adminToken, "", nil)
	var list []transport.WorkerInfo
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		return nil
	}
	out := map[string]transport.WorkerInfo{}
	for _, w := range list {
		out[w.Name] = w
	}
	return out
}

// waitAllCurrent waits until every named worker reports revision and /admin/workers marks it current.
func (cp *controlPlane) waitAllCurrent(t *testing.T, revision string, names ...string) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, 15*time.Second, fmt.Sprintf("%v current at %s on %s", names, revision, cp.name), func() bool {
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
	code, _, body := call("POST", "http://"+cp.api+transport.PathRegister, workerSecret,
		fmt.Sprintf(`{"name":%q,"version":"test"}`, probe), map[string]string{"Content-Type": transport.MediaWorkerRegister})
	var reg transport.RegisterResponse
	if code != 200 || json.Unmarshal([]byte(body), &reg) != nil {
		t.Fatalf("%s register %s: %d %s", cp.name, probe, code, body)
	}
	code, h, body := call("GET", "http://"+cp.api+snapshot.PathConfig, reg.Token, "", nil)
	if code != 200 {
		t.Fatalf("%s GET %s: %d %s", cp.name, snapshot.PathConfig, code, body)
	}
	return h.Get("ETag")
}

// worker is a running worker process and its ops listener.
type worker struct {
	*proc
	ops string
}

func startWorker(t *testing.T, ps *procs, name, file string) *worker {
	t.Helper()
	ops := freeAddr(t)
	p := ps.start(t, name, "serve", "--config", file, "--name", name, "--ops-listen", ops,
		"--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts")
	return &worker{proc: p, ops: ops}
}

func (w *worker) ready() bool {
	code, _, _ := call("GET", "http://"+w.ops+"/readyz", "", "", nil)
	return code == 200
}

// status is the worker's /worker/status, raw and decoded.
func (w *worker) status(t *testing.T) (string, workerStatus) {
	t.Helper()
	code, _, body := call("GET", "http://"+w.ops+transport.PathWorkerStatus, "", "", nil)
	var st workerStatus
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("%s /worker/status: %d %s", w.name, code, body)
	}
	return body, st
}

type workerStatus struct {
	Ready    bool                     `json:"ready"`
	Revision transport.RevisionStatus `json:"revision"`
	Config   transport.ConfigStatus   `json:"config"`
}

// metric returns the value of the first /metrics line starting with series (or "").
func metric(t *testing.T, url, series string) string {
	t.Helper()
	_, _, body := call("GET", url, "", "", nil)
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
`, clusterPassword, maxRunning)
}
