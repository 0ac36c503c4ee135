package fleettest

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

	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/transport"
)

const (
	workerSecret = "fleet-worker-secret-0123456789"
	adminToken   = "fleet-admin-token-9876543210"
	heartbeat    = 200 * time.Millisecond
	// Short, but with room for a loaded CI machine: a live worker must never go silent for
	// staleAfter + evictGrace just because the machine is busy.
	staleAfter = 800 * time.Millisecond
	evictGrace = 800 * time.Millisecond
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
		dir, err := os.MkdirTemp("", "queryflux-fleettest-")
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

func start(t *testing.T, name string, args ...string) *proc {
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
			data, _ := os.ReadFile(logPath)
			t.Logf("--- %s log ---\n%s", name, tail(string(data), 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func (p *proc) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

func (p *proc) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit", p.name)
	}
}

func (p *proc) output() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", limit, what)
}

// fleet is a running control plane and what is needed to talk to it.
type fleet struct {
	t        *testing.T
	apiAddr  string
	cpConfig string
	wConfig  string
	cp       *proc
}

func (f *fleet) startControlPlane() {
	f.cp = start(f.t, "controlplane", "serve", "--config", f.cpConfig, "--allow-short-timeouts",
		"--heartbeat-interval", heartbeat.String(), "--stale-after", staleAfter.String(), "--evict-grace", evictGrace.String())
	eventually(f.t, 15*time.Second, "control plane /health", func() bool {
		resp, err := http.Get("http://" + f.apiAddr + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func (f *fleet) startWorker(name, opsAddr string) *proc {
	return start(f.t, name, "serve", "--config", f.wConfig, "--name", name, "--label", "zone=eu",
		"--ops-listen", opsAddr, "--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts")
}

func (f *fleet) workers() map[string]transport.WorkerInfo {
	f.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+f.apiAddr+transport.PathAdminWorkers, nil)
	transport.SetBearer(req, adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var list []transport.WorkerInfo
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&list) != nil {
		f.t.Fatalf("/admin/workers: %d", resp.StatusCode)
	}
	out := map[string]transport.WorkerInfo{}
	for _, w := range list {
		out[w.Name] = w
	}
	return out
}

func (f *fleet) post(path, token, mediaType, body string) (int, transport.ErrorBody, []byte) {
	f.t.Helper()
	req, _ := http.NewRequest("POST", "http://"+f.apiAddr+path, strings.NewReader(body))
	req.Header.Set("Content-Type", mediaType)
	if token != "" {
		transport.SetBearer(req, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var eb transport.ErrorBody
	_ = json.Unmarshal(data, &eb)
	return resp.StatusCode, eb, data
}

func newFleet(t *testing.T) *fleet {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	db := pgtest.NewDatabase(t)
	mig := exec.Command(binary(t), "migrate", "--database-url", db)
	if out, err := mig.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	f := &fleet{t: t, apiAddr: freeAddr(t)}
	f.cpConfig = writeFile(t, "cp.yaml", fmt.Sprintf(`queryflux:
  role: controlPlane
  adminApi: {listen: %q, token: %q}
  workerApi: {enabled: true, secret: %q}
  persistence: {databaseUrl: %q}
`, f.apiAddr, adminToken, workerSecret, db))
	f.wConfig = writeFile(t, "worker.yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: %q, secret: %q}
`, "http://"+f.apiAddr, workerSecret))
	f.startControlPlane()
	return f
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func TestFleetSurvivesWorkerKillAndControlPlaneRestart(t *testing.T) {
	f := newFleet(t)
	ops1, ops2 := freeAddr(t), freeAddr(t)
	w1 := f.startWorker("w1", ops1)
	w2 := f.startWorker("w2", ops2)
	eventually(t, 15*time.Second, "both workers healthy with heartbeats", func() bool {
		ws := f.workers()
		return ws["w1"].State == "healthy" && ws["w2"].State == "healthy" &&
			!ws["w1"].LastHeartbeat.IsZero() && !ws["w2"].LastHeartbeat.IsZero()
	})
	if ws := f.workers(); ws["w1"].Labels["zone"] != "eu" || !ws["w1"].Online {
		t.Fatalf("w1 as listed: %+v", ws["w1"])
	}

	// The ops listener: health, readiness, metrics, status, and never a credential.
	if code, _ := getBody(t, "http://"+ops1+"/readyz"); code != 200 {
		t.Fatalf("w1 /readyz: %d", code)
	}
	var opsOut strings.Builder
	for _, p := range []string{"/health", "/readyz", "/metrics", "/worker/status"} {
		code, body := getBody(t, "http://"+ops1+p)
		if code != 200 {
			t.Fatalf("w1 %s: %d", p, code)
		}
		opsOut.WriteString(body)
	}
	if !strings.Contains(opsOut.String(), "queryflux_worker_loop_lag_seconds") || !strings.Contains(opsOut.String(), `"registered":true`) {
		t.Fatalf("ops output lacks metrics or status:\n%s", tail(opsOut.String(), 2000))
	}
	for _, secret := range []string{workerSecret, adminToken, "qfw_"} {
		if strings.Contains(opsOut.String(), secret) || strings.Contains(w1.output(), secret) || strings.Contains(f.cp.output(), secret) {
			t.Fatalf("credential %q leaked into ops output or logs", secret)
		}
	}

	// SIGKILL w2: offline after timeout + grace, while w1 stays online all along.
	killedAt := time.Now()
	w2.signal(syscall.SIGKILL)
	w2.wait(t)
	eventually(t, 10*time.Second, "w2 offline", func() bool {
		ws := f.workers()
		if !ws["w1"].Online {
			t.Fatalf("w1 went offline while w2 was dying: %+v", ws["w1"])
		}
		return !ws["w2"].Online
	})
	took := time.Since(killedAt)
	if w := f.workers()["w2"]; w.State != "evicted" || len(w.Warnings) == 0 {
		t.Fatalf("w2 after the kill: %+v", w)
	}
	// Its last beat was at most one interval before the kill.
	if min := staleAfter + evictGrace - heartbeat; took < min {
		t.Fatalf("w2 went offline %v after the kill, before timeout+grace (%v)", took, min)
	}
	t.Logf("w2 offline %v after SIGKILL (stale %v + grace %v)", took.Round(time.Millisecond), staleAfter, evictGrace)

	// The CLI reads the same list.
	out, err := exec.Command(binary(t), "workers", "list", "--admin-url", "http://"+f.apiAddr, "--admin-token", adminToken).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "w1") || !strings.Contains(string(out), "evicted") {
		t.Fatalf("workers list: %v\n%s", err, out)
	}
	show := exec.Command(binary(t), "workers", "show", "w2", "--admin-url", "http://"+f.apiAddr)
	show.Env = append(os.Environ(), "QUERYFLUX_ADMIN_TOKEN="+adminToken)
	if out, err := show.CombinedOutput(); err != nil || !strings.Contains(string(out), "Online:") || !strings.Contains(string(out), "evicted at") {
		t.Fatalf("workers show w2: %v\n%s", err, out)
	}

	// Restart the control plane (SIGTERM drains and flushes), gone for longer than timeout+grace.
	stopAt := time.Now()
	f.cp.signal(syscall.SIGTERM)
	f.cp.wait(t)
	t.Logf("control plane stopped %v after SIGTERM", time.Since(stopAt).Round(time.Millisecond))
	time.Sleep(2 * (staleAfter + evictGrace))
	f.startControlPlane()
	watchUntil := time.Now().Add(3 * (staleAfter + evictGrace))
	for time.Now().Before(watchUntil) {
		ws := f.workers()
		if w := ws["w1"]; !w.Online {
			t.Fatalf("w1 evicted after the control plane restarted: %+v", w)
		}
		if ws["w2"].Online {
			t.Fatalf("w2 came back from the dead: %+v", ws["w2"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	eventually(t, 5*time.Second, "w1 healthy with fresh heartbeats after the restart", func() bool {
		w := f.workers()["w1"]
		return w.State == "healthy" && time.Since(w.LastHeartbeat) < 2*time.Second
	})
	// The session token survived the restart (only its hash is stored): no re-registration.
	_, status := getBody(t, "http://"+ops1+"/worker/status")
	if !strings.Contains(status, `"registrations":1`) {
		t.Fatalf("w1 had to register again after the restart: %s", status)
	}
	if strings.Contains(f.cp.output(), "to=evicted") {
		t.Fatalf("the restarted control plane evicted someone:\n%s", tail(f.cp.output(), 3000))
	}
}

func TestBadInputAndTokens(t *testing.T) {
	f := newFleet(t)
	register := func(name string) string {
		code, eb, body := f.post(transport.PathRegister, workerSecret, transport.MediaWorkerRegister,
			fmt.Sprintf(`{"name":%q,"version":"test"}`, name))
		var ans transport.RegisterResponse
		if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Token == "" {
			t.Fatalf("register %s: %d %+v", name, code, eb)
		}
		return ans.Token
	}
	beat := func(token string, seq int) (int, transport.ErrorBody) {
		code, eb, _ := f.post(transport.PathHeartbeat, token, transport.MediaHeartbeat,
			fmt.Sprintf(`{"seq":%d,"sentAt":%q,"health":{"state":"healthy"}}`, seq, time.Now().UTC().Format(time.RFC3339Nano)))
		return code, eb
	}

	// Malformed registration and heartbeat: 400 naming the field.
	cases := []struct {
		path, token, body, field string
	}{
		{transport.PathRegister, workerSecret, `{"version":"1"}`, "name"},
		{transport.PathRegister, workerSecret, `{"name":"ok","version":"1","labels":{"zone":7}}`, "labels"},
		{transport.PathRegister, workerSecret, `{"name":"ok","version":"1","sneaky":true}`, "sneaky"},
	}
	tok := register("probe")
	cases = append(cases,
		struct{ path, token, body, field string }{transport.PathHeartbeat, tok, `{"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy"}}`, "seq"},
		struct{ path, token, body, field string }{transport.PathHeartbeat, tok, `{"seq":1,"sentAt":"noon","health":{"state":"healthy"}}`, "sentAt"},
		struct{ path, token, body, field string }{transport.PathHeartbeat, tok, `{"seq":1,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy","extra":1}}`, "extra"},
	)
	for _, c := range cases {
		media := transport.MediaWorkerRegister
		if c.path == transport.PathHeartbeat {
			media = transport.MediaHeartbeat
		}
		code, eb, body := f.post(c.path, c.token, media, c.body)
		if code != 400 || eb.Field != c.field {
			t.Errorf("%s %s: %d %s, want 400 naming %q", c.path, c.body, code, body, c.field)
		}
	}

	// Wrong secret, wrong token, superseded token, revoked token: 401.
	if code, _, _ := f.post(transport.PathRegister, "not-the-secret", transport.MediaWorkerRegister, `{"name":"x","version":"1"}`); code != 401 {
		t.Errorf("wrong worker secret: %d", code)
	}
	if code, _ := beat("qfw_wrong", 1); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
	if code, _ := beat(workerSecret, 1); code != 401 {
		t.Errorf("the shared secret as a session token: %d", code)
	}
	if code, _ := beat(tok, 1); code != 200 {
		t.Fatalf("valid token: %d", code)
	}
	newer := register("probe")
	if code, eb := beat(tok, 2); code != 401 || eb.Field != "Authorization" {
		t.Errorf("superseded token: %d %+v", code, eb)
	}
	if !strings.Contains(f.cp.output(), "registered again under the same name") {
		t.Errorf("supersede not logged")
	}
	// newer stops beating: stale, then evicted, and its token is revoked.
	eventually(t, 10*time.Second, "probe evicted", func() bool { return f.workers()["probe"].State == "evicted" })
	if code, _ := beat(newer, 1); code != 401 {
		t.Errorf("revoked token: %d", code)
	}
	// The admin API takes only the admin token.
	req, _ := http.NewRequest("GET", "http://"+f.apiAddr+transport.PathAdminWorkers, nil)
	transport.SetBearer(req, workerSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("admin API with the worker secret: %d", resp.StatusCode)
	}
}
