package fleettest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/workerapi"
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

// TestMain removes the built queryflux binary after the run.
func TestMain(m *testing.M) { daemontest.Main(m) }

// fleet is a running control plane and what is needed to talk to it.
type fleet struct {
	t        *testing.T
	apiAddr  string
	cpConfig string
	wConfig  string
	cp       *daemontest.Proc
	env      []string // added to the control plane's environment (test hooks)
}

func (f *fleet) startControlPlane() {
	f.cp = daemontest.StartWith(f.t, daemontest.Options{Env: f.env}, "controlplane", "serve", "--config", f.cpConfig, "--allow-short-timeouts",
		"--heartbeat-interval", heartbeat.String(), "--stale-after", staleAfter.String(), "--evict-grace", evictGrace.String())
	daemontest.Eventually(f.t, 15*time.Second, "control plane /health", func() bool {
		code, _, _ := daemontest.Call("GET", "http://"+f.apiAddr+"/health", "", "", nil)
		return code == 200
	})
}

func (f *fleet) startWorker(name, opsAddr string) *daemontest.Proc {
	return daemontest.Start(f.t, name, "serve", "--config", f.wConfig, "--name", name, "--label", "zone=eu",
		"--ops-listen", opsAddr, "--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts")
}

func (f *fleet) workers() map[string]workerapi.WorkerInfo {
	f.t.Helper()
	code, _, body := daemontest.Call("GET", "http://"+f.apiAddr+workerapi.PathAdminWorkers, adminToken, "", nil)
	if code == 0 {
		return nil
	}
	var list []workerapi.WorkerInfo
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		f.t.Fatalf("/admin/workers: %d", code)
	}
	out := map[string]workerapi.WorkerInfo{}
	for _, w := range list {
		out[w.Name] = w
	}
	return out
}

func (f *fleet) post(path, token, mediaType, body string) (int, workerapi.ErrorBody, []byte) {
	f.t.Helper()
	code, _, answer := daemontest.Call("POST", "http://"+f.apiAddr+path, token, body, map[string]string{"Content-Type": mediaType})
	if code == 0 {
		f.t.Fatal(answer)
	}
	var eb workerapi.ErrorBody
	_ = json.Unmarshal([]byte(answer), &eb)
	return code, eb, []byte(answer)
}

func newFleet(t *testing.T) *fleet {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	// Each fleet's daemons keep their files (a worker's last good configuration under
	// queryflux-state-<name>-<control plane>) in a directory of their own: a port an earlier
	// fleet used gives the same names, and its snapshot would start this fleet's worker.
	t.Setenv("TMPDIR", t.TempDir())
	db := migratedDatabase(t)
	f := &fleet{t: t, apiAddr: daemontest.FreeAddr(t)}
	f.cpConfig = daemontest.WriteFile(t, "cp.yaml", f.controlPlaneYAML(db, ""))
	f.wConfig = daemontest.WriteFile(t, "worker.yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: %q, secret: %q}
`, "http://"+f.apiAddr, workerSecret))
	f.startControlPlane()
	return f
}

// controlPlaneYAML is the control plane's configuration on database db: the admin and worker
// APIs on f.apiAddr, then more (YAML at the top level; its queryflux: lines indented by two).
func (f *fleet) controlPlaneYAML(db, more string) string {
	return fmt.Sprintf(`queryflux:
  role: controlPlane
  adminApi: {listen: %q, token: %q}
  workerApi: {enabled: true, secret: %q}
  persistence: {databaseUrl: %q}
`, f.apiAddr, adminToken, workerSecret, db) + more
}

// migratedDatabase is a fresh control-plane database with every migration applied.
func migratedDatabase(t *testing.T) string {
	db := pgtest.NewDatabase(t)
	if out, err := exec.Command(daemontest.Binary(t), "migrate", "--database-url", db).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	return db
}

// engineDatabases are a PostgreSQL database for a cluster to serve and a migrated one for the
// control plane; real-daemon tests skip in -short mode.
func engineDatabases(t *testing.T) (engine *url.URL, controlPlane string) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	engine, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	return engine, migratedDatabase(t)
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	code, _, body := daemontest.Call("GET", url, "", "", nil)
	if code == 0 {
		t.Fatal(body)
	}
	return code, body
}

func TestFleetSurvivesWorkerKillAndControlPlaneRestart(t *testing.T) {
	f := newFleet(t)
	ops1, ops2 := daemontest.FreeAddr(t), daemontest.FreeAddr(t)
	w1 := f.startWorker("w1", ops1)
	w2 := f.startWorker("w2", ops2)
	daemontest.Eventually(t, 15*time.Second, "both workers healthy with heartbeats", func() bool {
		ws := f.workers()
		return ws["w1"].State == "healthy" && ws["w2"].State == "healthy" &&
			!ws["w1"].LastHeartbeat.IsZero() && !ws["w2"].LastHeartbeat.IsZero()
	})
	if ws := f.workers(); ws["w1"].Labels["zone"] != "eu" || !ws["w1"].Online {
		t.Fatalf("w1 as listed: %+v", ws["w1"])
	}

	// The ops listener: health, readiness, metrics, status, and never a credential. Healthy in
	// the registry (heartbeats) comes before ready (its configuration revision active).
	daemontest.Eventually(t, 30*time.Second, "w1 /readyz 200", func() bool {
		code, _ := getBody(t, "http://"+ops1+"/readyz")
		return code == 200
	})
	var opsOut strings.Builder
	for _, p := range []string{"/health", "/readyz", "/metrics", "/worker/status"} {
		code, body := getBody(t, "http://"+ops1+p)
		if code != 200 {
			t.Fatalf("w1 %s: %d", p, code)
		}
		opsOut.WriteString(body)
	}
	if !strings.Contains(opsOut.String(), "queryflux_worker_loop_lag_seconds") || !strings.Contains(opsOut.String(), `"registered":true`) {
		t.Fatalf("ops output lacks metrics or status:\n%s", daemontest.Tail(opsOut.String(), 2000))
	}
	for _, secret := range []string{workerSecret, adminToken, "qfw_"} {
		if strings.Contains(opsOut.String(), secret) || strings.Contains(w1.Output(), secret) || strings.Contains(f.cp.Output(), secret) {
			t.Fatalf("credential %q leaked into ops output or logs", secret)
		}
	}

	// SIGKILL w2: offline after timeout + grace, while w1 stays online all along.
	killedAt := time.Now()
	w2.Kill(t)
	daemontest.Eventually(t, 10*time.Second, "w2 offline", func() bool {
		ws := f.workers()
		if !ws["w1"].Online {
			t.Fatalf("w1 went offline while w2 was dying: %+v", ws["w1"])
		}
		return !ws["w2"].Online
	})
	took := time.Since(killedAt)
	w := f.workers()["w2"]
	if w.State != "evicted" || len(w.Warnings) == 0 {
		t.Fatalf("w2 after the kill: %+v", w)
	}
	// Never evicted before timeout+grace after the last beat the registry had (both its own
	// clock's readings: on a loaded machine that beat can be well before the kill).
	if gap := w.StateSince.Sub(w.LastHeartbeat); gap < staleAfter+evictGrace {
		t.Fatalf("w2 evicted %v after its last heartbeat, before timeout+grace (%v): %+v", gap, staleAfter+evictGrace, w)
	}
	t.Logf("w2 offline %v after SIGKILL (stale %v + grace %v)", took.Round(time.Millisecond), staleAfter, evictGrace)

	// The CLI reads the same list.
	out, err := exec.Command(daemontest.Binary(t), "workers", "list", "--admin-url", "http://"+f.apiAddr, "--admin-token", adminToken).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "w1") || !strings.Contains(string(out), "evicted") {
		t.Fatalf("workers list: %v\n%s", err, out)
	}
	show := exec.Command(daemontest.Binary(t), "workers", "show", "w2", "--admin-url", "http://"+f.apiAddr)
	show.Env = append(os.Environ(), "QUERYFLUX_ADMIN_TOKEN="+adminToken)
	if out, err := show.CombinedOutput(); err != nil || !strings.Contains(string(out), "Online:") || !strings.Contains(string(out), "evicted at") {
		t.Fatalf("workers show w2: %v\n%s", err, out)
	}

	// Restart the control plane (SIGTERM drains and flushes), gone for longer than timeout+grace.
	stopAt := time.Now()
	f.cp.Stop(t)
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
	daemontest.Eventually(t, 30*time.Second, "w1 healthy with fresh heartbeats after the restart", func() bool {
		w := f.workers()["w1"]
		return w.State == "healthy" && time.Since(w.LastHeartbeat) < 2*time.Second
	})
	// The session token survived the restart (only its hash is stored): no re-registration.
	_, status := getBody(t, "http://"+ops1+"/worker/status")
	if !strings.Contains(status, `"registrations":1`) {
		t.Fatalf("w1 had to register again after the restart: %s", status)
	}
	if strings.Contains(f.cp.Output(), "to=evicted") {
		t.Fatalf("the restarted control plane evicted someone:\n%s", daemontest.Tail(f.cp.Output(), 3000))
	}
}

func TestBadInputAndTokens(t *testing.T) {
	f := newFleet(t)
	register := func(name string) string {
		code, eb, body := f.post(workerapi.PathRegister, workerSecret, workerapi.MediaWorkerRegister,
			fmt.Sprintf(`{"name":%q,"version":"test"}`, name))
		var ans workerapi.RegisterResponse
		if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Token == "" {
			t.Fatalf("register %s: %d %+v", name, code, eb)
		}
		return ans.Token
	}
	beat := func(token string, seq int) (int, workerapi.ErrorBody) {
		code, eb, _ := f.post(workerapi.PathHeartbeat, token, workerapi.MediaHeartbeat,
			fmt.Sprintf(`{"seq":%d,"sentAt":%q,"health":{"state":"healthy"}}`, seq, time.Now().UTC().Format(time.RFC3339Nano)))
		return code, eb
	}

	// Malformed registration and heartbeat: 400 naming the field.
	cases := []struct {
		path, token, body, field string
	}{
		{workerapi.PathRegister, workerSecret, `{"version":"1"}`, "name"},
		{workerapi.PathRegister, workerSecret, `{"name":"ok","version":"1","labels":{"zone":7}}`, "labels"},
		{workerapi.PathRegister, workerSecret, `{"name":"ok","version":"1","sneaky":true}`, "sneaky"},
	}
	tok := register("probe")
	cases = append(cases,
		struct{ path, token, body, field string }{workerapi.PathHeartbeat, tok, `{"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy"}}`, "seq"},
		struct{ path, token, body, field string }{workerapi.PathHeartbeat, tok, `{"seq":1,"sentAt":"noon","health":{"state":"healthy"}}`, "sentAt"},
		struct{ path, token, body, field string }{workerapi.PathHeartbeat, tok, `{"seq":1,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy","extra":1}}`, "extra"},
	)
	for _, c := range cases {
		media := workerapi.MediaWorkerRegister
		if c.path == workerapi.PathHeartbeat {
			media = workerapi.MediaHeartbeat
		}
		code, eb, body := f.post(c.path, c.token, media, c.body)
		if code != 400 || eb.Field != c.field {
			t.Errorf("%s %s: %d %s, want 400 naming %q", c.path, c.body, code, body, c.field)
		}
	}

	// Wrong secret, wrong token, superseded token, revoked token: 401.
	if code, _, _ := f.post(workerapi.PathRegister, "not-the-secret", workerapi.MediaWorkerRegister, `{"name":"x","version":"1"}`); code != 401 {
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
	if !strings.Contains(f.cp.Output(), "registered again under the same name") {
		t.Errorf("supersede not logged")
	}
	// newer stops beating: stale, then evicted, and its token is revoked.
	daemontest.Eventually(t, 10*time.Second, "probe evicted", func() bool { return f.workers()["probe"].State == "evicted" })
	if code, _ := beat(newer, 1); code != 401 {
		t.Errorf("revoked token: %d", code)
	}
	// The admin API takes only the admin token.
	code, _, body := daemontest.Call("GET", "http://"+f.apiAddr+workerapi.PathAdminWorkers, workerSecret, "", nil)
	if code == 0 {
		t.Fatal(body)
	}
	if code != 401 {
		t.Errorf("admin API with the worker secret: %d", code)
	}
}
