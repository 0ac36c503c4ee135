package configtest

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestPostgresConfigDelivery: a control plane serving the configuration stored in Postgres and
// three workers. (a) an edit through PUT /admin/config reaches all three; (c) a second control
// plane on the same database serves the same revision; (d) with the control plane down, a new
// worker borrows a ready worker's config (stale), and the flag clears once the control plane
// is back. No credential appears in any log or /worker/status.
func TestPostgresConfigDelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	db := migratedDatabase(t)
	ps := &procs{}
	cpFile := func(api, pgAddr string) string {
		path := filepath.Join(t.TempDir(), "cp.yaml")
		writeFile(t, path, fmt.Sprintf(`queryflux:
  role: controlPlane
  adminApi: {listen: %q, token: %q}
  workerApi: {enabled: true, secret: %q}
  persistence: {databaseUrl: %q, configKey: %q}
  frontends: {postgres: {enabled: true, listen: %q}}
`, api, adminToken, workerSecret, db, configKey, pgAddr))
		return path
	}
	api1, api2, cpPG := daemontest.FreeAddr(t), daemontest.FreeAddr(t), daemontest.FreeAddr(t)
	cp1 := startControlPlane(t, ps, "cp1", api1, cpFile(api1, cpPG))
	cp2 := startControlPlane(t, ps, "cp2", api2, cpFile(api2, daemontest.FreeAddr(t)))
	wfile := workerFile(t, api1)
	names := []string{"w1", "w2", "w3"}
	ws := map[string]*worker{}
	for _, n := range names {
		ws[n] = startWorker(t, ps, n, wfile)
	}
	first := cp1.revision(t)
	cp1.waitAllCurrent(t, first, names...)

	// (a) An edit through the admin API reaches all three workers.
	start := time.Now()
	code, _, body := daemontest.Call("PUT", "http://"+api1+"/admin/config", adminToken, clusters(4), nil)
	var put struct {
		OK       bool   `json:"ok"`
		Revision string `json:"revision"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &put) != nil || !put.OK || put.Revision == first {
		t.Fatalf("PUT /admin/config: %d %s", code, body)
	}
	cp1.waitAllCurrent(t, put.Revision, names...)
	t.Logf("PUT /admin/config to 3 workers current in /admin/workers: %v", time.Since(start).Round(time.Millisecond))
	// The control plane's own frontend serves the stored config too.
	host, port, _ := strings.Cut(cpPG, ":")
	daemontest.Eventually(t, 10*time.Second, "the control plane's own frontend answers from the stored config", func() bool {
		out, err := exec.Command("psql", "-h", host, "-p", port, "-U", "queryflux", "-d", "postgres", "-At", "-c", "select 40+2").CombinedOutput()
		return err == nil && strings.TrimSpace(string(out)) == "42"
	})
	for _, n := range names {
		raw, st := ws[n].status(t)
		if st.Revision.Active != put.Revision || st.Config.Source != "controlPlane" || st.Config.Stale {
			t.Fatalf("%s status after the edit: %s", n, raw)
		}
		noSecrets(t, n+" /worker/status", raw)
	}
	// A rejected edit names the error and changes nothing.
	code, _, body = daemontest.Call("PUT", "http://"+api1+"/admin/config", adminToken,
		strings.Replace(clusters(4), "members: [pg]", "members: [pg, ghost]", 1), nil)
	if code != 422 || !strings.Contains(body, "clusterGroups[0].members") {
		t.Fatalf("invalid PUT: %d %s", code, body)
	}
	if rev := cp1.revision(t); rev != put.Revision {
		t.Fatalf("an invalid PUT changed the revision to %s", rev)
	}

	// With the configuration in Postgres, the reload endpoint says where to edit, and SIGHUP
	// re-reads the database without harm.
	code, _, body = daemontest.Call("POST", "http://"+api1+"/admin/config/reload", adminToken, "", nil)
	if code != 409 || !strings.Contains(body, "PUT /admin/config") {
		t.Fatalf("POST reload on a Postgres-configured control plane: %d %s", code, body)
	}
	cp1.Signal(syscall.SIGHUP)
	daemontest.Eventually(t, 30*time.Second, "SIGHUP logged", func() bool {
		return strings.Contains(cp1.Output(), "SIGHUP: re-reading the configuration stored in Postgres")
	})
	if cp1.Exited() || cp1.revision(t) != put.Revision {
		t.Fatal("SIGHUP stopped the control plane or changed its revision")
	}

	// (c) The replica on the same database serves the same revision (NOTIFY woke it).
	daemontest.Eventually(t, 10*time.Second, "cp2 at the edited revision", func() bool { return cp2.revision(t) == put.Revision })
	e1, e2 := cp1.workerConfigETag(t, "probe-1"), cp2.workerConfigETag(t, "probe-2")
	if e1 != e2 || e1 != `"`+put.Revision+`"` {
		t.Fatalf("replicas disagree: cp1 ETag %s, cp2 ETag %s, want %q", e1, e2, put.Revision)
	}
	cp2.Stop(t)

	// (d) Peer bootstrap: with the control plane down, w4 borrows w1's config.
	cp1.Stop(t)
	w4 := startWorker(t, ps, "w4", workerFile(t, api1, ws["w1"].ops))
	// (A failClosed worker is not ready while its control plane is down: watch its config.)
	daemontest.Eventually(t, 15*time.Second, "w4 running a peer's config", func() bool {
		code, _, body := daemontest.Call("GET", "http://"+w4.ops+"/worker/status", "", "", nil)
		return code == 200 && strings.Contains(body, put.Revision)
	})
	raw, st := w4.status(t)
	if st.Config.Source != "peer" || !st.Config.Stale || st.Revision.Active != put.Revision {
		t.Fatalf("w4 status while the control plane is down: %s", raw)
	}
	noSecrets(t, "w4 /worker/status", raw)
	if v := metric(t, "http://"+w4.ops+"/metrics", "queryflux_worker_config_stale"); v != "1" {
		t.Fatalf("queryflux_worker_config_stale = %q while stale", v)
	}
	// The control plane returns: w4 gets the revision confirmed and the flag clears.
	cp1 = startControlPlane(t, ps, "cp1-restarted", api1, cp1.file)
	daemontest.Eventually(t, 30*time.Second, "w4's stale flag cleared", func() bool {
		_, st := w4.status(t)
		return !st.Config.Stale && st.Config.Source == "controlPlane"
	})
	if v := metric(t, "http://"+w4.ops+"/metrics", "queryflux_worker_config_stale"); v != "0" {
		t.Fatalf("queryflux_worker_config_stale = %q after the control plane came back", v)
	}
	cp1.waitAllCurrent(t, put.Revision, "w1", "w2", "w3", "w4")

	// No credential in any status, metrics page, admin answer or log.
	for _, w := range []*worker{ws["w1"], ws["w2"], ws["w3"], w4} {
		raw, _ := w.status(t)
		noSecrets(t, w.Name+" /worker/status", raw)
		_, _, page := daemontest.Call("GET", "http://"+w.ops+"/metrics", "", "", nil)
		noSecrets(t, w.Name+" /metrics", page)
	}
	for _, path := range []string{"/admin/workers", "/admin/config", "/metrics"} {
		_, _, body := daemontest.Call("GET", "http://"+api1+path, adminToken, "", nil)
		noSecrets(t, "cp1 "+path, body)
	}
	ps.scanLogs(t)
}

// TestFileConfigReload: a control plane whose configuration is its YAML file, and its workers.
// An edited file reaches them on SIGHUP and on POST /admin/config/reload; a broken file keeps
// the old revision, the answer names the error, and the failure is counted.
func TestFileConfigReload(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	db := migratedDatabase(t)
	ps := &procs{}
	api := daemontest.FreeAddr(t)
	file := filepath.Join(t.TempDir(), "cp.yaml")
	// The file defines clusters, so it (not Postgres) is the configuration's source.
	local := fmt.Sprintf(`queryflux:
  role: controlPlane
  adminApi: {listen: %q, token: %q}
  workerApi: {enabled: true, secret: %q}
  persistence: {databaseUrl: %q}
`, api, adminToken, workerSecret, db)
	writeFile(t, file, local+clusters(2))
	cp := startControlPlane(t, ps, "cp-file", api, file)
	wfile := workerFile(t, api)
	names := []string{"f1", "f2", "f3"}
	for _, n := range names {
		startWorker(t, ps, n, wfile)
	}
	first := cp.revision(t)
	cp.waitAllCurrent(t, first, names...)

	// SIGHUP after an edit.
	writeFile(t, file, local+clusters(5))
	start := time.Now()
	cp.Signal(syscall.SIGHUP)
	daemontest.Eventually(t, 10*time.Second, "a new revision after SIGHUP", func() bool { return cp.revision(t) != first })
	second := cp.revision(t)
	cp.waitAllCurrent(t, second, names...)
	// The control plane's own query node took the new configuration too.
	if n := strings.Count(cp.Output(), "query configuration active"); n != 2 {
		t.Fatalf("the control plane's query node was applied %d times, want 2 (start, SIGHUP)", n)
	}
	t.Logf("edit + SIGHUP to 3 workers current: %v", time.Since(start).Round(time.Millisecond))

	// POST /admin/config/reload after another edit.
	writeFile(t, file, local+clusters(7))
	code, _, body := daemontest.Call("POST", "http://"+api+"/admin/config/reload", adminToken, "", nil)
	var res struct {
		OK               bool   `json:"ok"`
		Revision         string `json:"revision"`
		PreviousRevision string `json:"previousRevision"`
		Changed          bool   `json:"changed"`
		Errors           []struct {
			Path, Message string
			Line          int
		} `json:"errors"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &res) != nil || !res.OK || !res.Changed || res.PreviousRevision != second {
		t.Fatalf("POST reload: %d %s", code, body)
	}
	if cp.revision(t) != res.Revision {
		t.Fatalf("the reload answered %s but %s is served", res.Revision, cp.revision(t))
	}
	cp.waitAllCurrent(t, res.Revision, names...)
	third := res.Revision

	// A broken file: refused with the path of every error, the old revision stays.
	writeFile(t, file, local+strings.Replace(clusters(7), "routingFallback: main", "routingFallback: nowhere", 1)+"routers: [{type: tags, tag: x, group: missing}]\n")
	code, _, body = daemontest.Call("POST", "http://"+api+"/admin/config/reload", adminToken, "", nil)
	res.Errors = nil
	if code != 422 || json.Unmarshal([]byte(body), &res) != nil || res.OK || res.Revision != third {
		t.Fatalf("broken file: %d %s", code, body)
	}
	paths := []string{}
	for _, e := range res.Errors {
		paths = append(paths, e.Path)
	}
	if len(paths) != 2 || !strings.Contains(strings.Join(paths, " "), "routingFallback") || !strings.Contains(strings.Join(paths, " "), "routers[0].group") {
		t.Fatalf("the answer does not name both errors: %s", body)
	}
	// SIGHUP with the broken file: the daemon lives on, logs why, and still serves the old revision.
	cp.Signal(syscall.SIGHUP)
	daemontest.Eventually(t, 10*time.Second, "the refused SIGHUP reload logged", func() bool {
		return strings.Count(cp.Output(), "config reload refused") >= 2
	})
	if cp.Exited() || cp.revision(t) != third {
		t.Fatal("a broken file on SIGHUP stopped the daemon or changed the revision")
	}
	if v := metric(t, "http://"+api+"/metrics", `queryflux_config_reload_failures_total{stage="file"}`); v != "2" {
		t.Fatalf(`queryflux_config_reload_failures_total{stage="file"} = %q, want 2`, v)
	}
	cp.waitAllCurrent(t, third, names...)
	// The CLI says the same, and fails.
	cli := exec.Command(daemontest.Binary(t), "config", "reload", "--admin-url", "http://"+api)
	cli.Env = append(cli.Environ(), "QUERYFLUX_ADMIN_TOKEN="+adminToken)
	out, err := cli.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "routers[0].group") || !strings.Contains(string(out), third) {
		t.Fatalf("queryflux config reload with a broken file: %v\n%s", err, out)
	}
	noSecrets(t, "config reload output", string(out))
	if n := strings.Count(cp.Output(), "query configuration active"); n != 3 {
		t.Fatalf("the control plane's query node was applied %d times, want 3 (broken files never)", n)
	}
	// Workers ignore SIGHUP instead of dying of it.
	for _, p := range ps.all[1:] {
		p.Signal(syscall.SIGHUP)
	}
	for _, p := range ps.all[1:] {
		daemontest.Eventually(t, 10*time.Second, p.Name+" logged the SIGHUP it ignored", func() bool {
			return strings.Contains(p.Output(), "SIGHUP ignored") || p.Exited()
		})
		if p.Exited() {
			t.Fatalf("%s exited on SIGHUP", p.Name)
		}
	}
	ps.scanLogs(t)
}

// migratedDatabase is a fresh PostgreSQL database with queryflux's migrations applied.
func migratedDatabase(t *testing.T) string {
	t.Helper()
	db := pgtest.NewDatabase(t)
	if out, err := exec.Command(daemontest.Binary(t), "migrate", "--database-url", db).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	return db
}
