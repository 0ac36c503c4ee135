package studio_test

// Studio in a real headless Chromium (Debian's chromium, driven over the DevTools protocol by
// chromedp) against a real standalone node with a real worker registered to it.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/testlong"
	"github.com/queryflux/queryflux/node/workerapi"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

// hostileLabel is markup in a worker label: the page must show it as text.
const hostileLabel = `<img src=x onerror="console.error('xss')">`

const (
	adminToken   = "studio-admin-token-5d1e0c7a9b"
	workerSecret = "studio-worker-secret-31f2"
)

// node is a standalone node (admin API, worker API, PostgreSQL wire on DuckDB) and one worker.
type node struct {
	admin, pg string
	daemon    *daemontest.Proc
	worker    *daemontest.Proc
}

func startNode(t *testing.T) *node {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	addrs := daemontest.FreeAddrs(t, 3)
	n := &node{admin: addrs[0], pg: addrs[1]}
	cfg := daemontest.WriteFile(t, "standalone.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  workerApi: {enabled: true, secret: "%s"}
  frontends:
    postgres: {enabled: true, listen: "%s"}
clusters:
  - {name: duck, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 3}
clusterGroups:
  - {name: g, members: [duck]}
  - {name: eu-only, members: [duck], workerSelector: {zone: eu}}
  - {name: us-only, members: [duck], workerSelector: {zone: us}}
routingFallback: g
settings: {security: {trustLoopback: true}}
`, n.admin, adminToken, workerSecret, n.pg))
	wcfg := daemontest.WriteFile(t, "worker.yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: "http://%s", secret: "%s"}
`, n.admin, workerSecret))
	n.daemon = daemontest.Start(t, "standalone", "serve", "--config", cfg, "--allow-short-timeouts", "--heartbeat-interval", "500ms")
	n.daemon.WaitListening(t, 60*time.Second, n.admin, n.pg)
	n.worker = daemontest.Start(t, "worker-eu-1", "serve", "--config", wcfg, "--name", "worker-eu-1", "--label", "zone=eu",
		"--ops-listen", addrs[2], "--allow-short-timeouts", "--heartbeat-interval", "500ms")
	return n
}

// browser is a fresh headless Chromium; errors collects every console error, uncaught exception
// and non-network browser-log error (a CSP violation is one). Requests the test has refused on
// purpose log as network entries and are left out.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
	shots  string
}

func newBrowser(t *testing.T) *browser {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (make test-deps installs Debian's chromium; it failed or was not run): ", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	b := &browser{ctx: ctx, shots: artifactDir(t)}
	messages := chromedp.Console(ctx) // starts the browser; subscribed from here on
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.IsException()) && m.Source != "network" {
				b.fail(m.String())
			}
		}
	}()
	b.run(t, "starting chromium "+path, chromedp.Navigate("about:blank"))
	return b
}

func (b *browser) fail(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors = append(b.errors, msg)
}

func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// artifactDir is $QUERYFLUX_TEST_ARTIFACTS/studio when set (kept after the run), else a
// temporary directory.
func artifactDir(t *testing.T) string {
	dir := os.Getenv("QUERYFLUX_TEST_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "studio")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// do runs one action with a limit (a safety net for a hung browser, not a measure).
func do[T any](t *testing.T, b *browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v (console errors: %q)\n%s", what, err, b.consoleErrors(), b.lastWords())
	}
	return v
}

// lastWords saves a screenshot of a failed step and returns the page's text.
func (b *browser) lastWords() string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(filepath.Join(b.shots, "failure.png"), png, 0o644)
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	return "page text: " + text
}

func (b *browser) run(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	do(t, b, what, chromedp.Steps(steps...))
}

func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png := do(t, b, "screenshot "+name, chromedp.CaptureScreenshot())
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// fetchStatus runs fetch(url, init) in the page and returns the answer's status.
func (b *browser) fetchStatus(t *testing.T, url, init string) int {
	t.Helper()
	return do(t, b, "fetch "+url, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%q, %s).then(r => r.status)`, url, init), chromedp.EvalAwaitPromise))
}

func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	return do(t, b, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

func (b *browser) waitText(t *testing.T, sel, want string) {
	t.Helper()
	do(t, b, fmt.Sprintf("waiting for %q in %s", want, sel), chromedp.Poll[bool](fmt.Sprintf(
		`(() => { const n = document.querySelector(%q); return !!n && n.textContent.includes(%q); })()`, sel, want),
		chromedp.WithPollingTimeout(30*time.Second)))
}

func (b *browser) show(t *testing.T, hash string) {
	t.Helper()
	do(t, b, "navigating to "+hash, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, hash)))
}

func runQuery(t *testing.T, pg, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://studio-analyst@"+pg+"/g?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil || n != 42 {
		t.Fatalf("%s: %d %v", sql, n, err)
	}
}

func TestStudioInChromiumAgainstALiveNode(t *testing.T) {
	n := startNode(t)
	b := newBrowser(t)
	base := "http://" + n.admin + "/studio/"

	// A wrong token is refused on the page and leaves no session.
	b.run(t, "opening Studio", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"), chromedp.Click(chromedp.CSS("#login-form button")))
	b.waitText(t, "#login-error", "wrong admin token")
	if code := b.fetchStatus(t, "api/admin/workers", "{}"); code != 401 {
		t.Fatalf("admin API through Studio after a refused login: %d, want 401", code)
	}
	b.screenshot(t, "login-refused")

	// The right token logs in and the Fleet page shows the live worker, refreshed by polling.
	b.run(t, "logging in", chromedp.Evaluate[chromedp.Void](`document.getElementById("token").value = ""`), chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS("#login-form button")))
	b.waitText(t, `tr[data-worker="worker-eu-1"]`, "healthy")
	row := b.text(t, `tr[data-worker="worker-eu-1"]`)
	for _, want := range []string{"zone=eu", "current"} {
		if !strings.Contains(row, want) {
			t.Fatalf("fleet row %q lacks %q", row, want)
		}
	}
	b.waitText(t, `tr[data-worker="worker-eu-1"] td:nth-child(9)`, "s ago")
	// The groups its labels select, and not the one they do not.
	groups := do(t, b, "reading groups", chromedp.Evaluate[string](
		`[...document.querySelectorAll('tr[data-worker="worker-eu-1"] td.groups .group')].map(n => n.textContent).join(",")`))
	if groups != "eu-only,g" {
		t.Fatalf("groups served by worker-eu-1: %q, want eu-only,g (not us-only)", groups)
	}
	// Workers check their own labels; one that registers markup anyway (it holds the worker
	// secret) either is refused or has it shown as text.
	labels, _ := json.Marshal(map[string]string{"note": hostileLabel})
	code, _, body := daemontest.Call("POST", "http://"+n.admin+workerapi.PathRegister, workerSecret,
		`{"name":"hostile-1","version":"1","labels":`+string(labels)+`}`, map[string]string{"Content-Type": workerapi.MediaWorkerRegister})
	if code == 200 {
		b.waitText(t, `tr[data-worker="hostile-1"]`, "note="+hostileLabel)
	} else if code != 400 && code != 422 {
		t.Fatalf("registering a worker with markup in a label: %d %s", code, body)
	}
	if do(t, b, "looking for markup from a label", chromedp.Evaluate[bool](`!!document.querySelector("#page img")`)) {
		t.Fatalf("a label's markup was not shown as text: %q", row)
	}
	b.screenshot(t, "fleet")

	// The session cookie: HttpOnly, SameSite=Strict, not the token; the token is nowhere in the page.
	cookies := do(t, b, "reading cookies", func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{base}})
		return res.Cookies, err
	})
	html := do(t, b, "reading the page", chromedp.OuterHTML(chromedp.CSS("html")))
	jsCookie := do(t, b, "document.cookie", chromedp.Evaluate[string](`document.cookie`))
	if len(cookies) != 1 || !cookies[0].HTTPOnly || cookies[0].SameSite != network.CookieSameSiteStrict ||
		strings.Contains(cookies[0].Value, adminToken) || jsCookie != "" {
		t.Fatalf("session cookie: %+v (document.cookie %q)", cookies, jsCookie)
	}
	if strings.Contains(html, adminToken) {
		t.Fatal("the admin token is in the page")
	}

	// A query run through the proxy shows on the Queries page, its literal masked.
	runQuery(t, n.pg, "select 42 as studio_probe where 'studio-literal' <> ''")
	daemontest.Eventually(t, 30*time.Second, "the query in /admin/queries", func() bool {
		return strings.Contains(daemontest.Get(t, "http://"+n.admin+"/admin/queries", adminToken), "studio_probe")
	})
	b.show(t, "#/queries")
	b.waitText(t, "#page", "studio_probe")
	q := b.text(t, "#page")
	if strings.Contains(q, "studio-literal") || !strings.Contains(q, "studio-analyst") || !strings.Contains(q, "succeeded") {
		t.Fatalf("queries page: %q", q)
	}
	b.run(t, "filtering by user", chromedp.SendKeys(chromedp.CSS(`#query-filters input[name="user"]`), "nobody-such"),
		chromedp.Click(chromedp.CSS(`#query-filters button`)))
	b.waitText(t, "#page td.muted", "none")
	b.screenshot(t, "queries-filtered")
	b.show(t, "#/queries?user=studio-analyst&window=1h")
	b.waitText(t, "#page", "studio_probe")
	b.screenshot(t, "queries")
	b.run(t, "opening the query", chromedp.Click(chromedp.CSS(`tr[data-query] a`)))
	b.waitText(t, "#page", "Routing trace")
	if q := b.text(t, "#page"); !strings.Contains(q, "studio_probe") || !strings.Contains(q, "postgres") || strings.Contains(q, "studio-literal") {
		t.Fatalf("query page: %q", q)
	}
	b.screenshot(t, "query")

	b.show(t, "#/worker/worker-eu-1")
	b.waitText(t, "#page h1", "worker-eu-1")
	b.waitText(t, "#page", "controlPlane") // where its configuration came from
	if facts := b.text(t, "#page table"); !strings.Contains(facts, "zone=eu") || !strings.Contains(facts, "eu-only") || strings.Contains(facts, "us-only") {
		t.Fatalf("worker page facts lack its labels and groups: %q", facts)
	}
	b.screenshot(t, "worker")
	b.show(t, "#/capacity")
	b.waitText(t, "#page h1", "Capacity")
	b.run(t, "capacity loaded", chromedp.WaitVisible(chromedp.CSS(`#page[data-loaded="capacity"]`)))
	b.screenshot(t, "capacity")
	b.show(t, "#/config")
	b.waitText(t, "#page", "Current revision")
	b.run(t, "config loaded", chromedp.WaitVisible(chromedp.CSS(`#page[data-loaded="config"]`)))
	b.screenshot(t, "config")

	// Planning: an upload without a workload and a sweep too big are refused with the reason; a
	// small sweep of a built-in scenario runs on the node, its progress followed to the plot and
	// the knee.
	b.show(t, "#/planning")
	b.run(t, "planning loaded", chromedp.WaitVisible(chromedp.CSS(`#page[data-loaded="planning"] #plan-form`)))
	b.run(t, "uploading a scenario without a workload", chromedp.SetValue(chromedp.CSS("#plan-scenario"), ""),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("plan-scenario").dispatchEvent(new Event("change"))`),
		chromedp.SetValue(chromedp.CSS("#plan-yaml"), "duration: 5s\n"), chromedp.Click(chromedp.CSS("#plan-form button")))
	b.waitText(t, "#status", "no workload")
	b.run(t, "a sweep too big", chromedp.SetValue(chromedp.CSS("#plan-scenario"), "plan-leases"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("plan-scenario").dispatchEvent(new Event("change"))`),
		chromedp.SetValue(chromedp.CSS("#plan-sweep"), "workers=10..200"), chromedp.Click(chromedp.CSS("#plan-form button")))
	b.waitText(t, "#status", "too big")
	b.run(t, "a small sweep", chromedp.SetValue(chromedp.CSS("#plan-sweep"), "cap=1,6"), chromedp.Click(chromedp.CSS("#plan-form button")))
	b.waitText(t, "#plan-job h2", "plan-leases")
	do(t, b, "waiting for the job", chromedp.Poll[bool](`(() => { const n = document.getElementById("plan-state"); return !!n && !n.textContent.startsWith("running"); })()`,
		chromedp.WithPollingTimeout(5*time.Minute)))
	b.waitText(t, "#plan-state", "done · 2 of 2 runs")
	reason := do(t, b, "the job's knee", chromedp.Evaluate[string](`fetch("api/plan/jobs").then(r => r.json()).then(j => j.plan.knees[0].reason)`, chromedp.EvalAwaitPromise))
	b.waitText(t, "#plan-knees", reason)
	do(t, b, "the plot drawn", chromedp.Poll[bool](`(() => { const i = document.getElementById("plan-plot"); return !!i && i.complete && i.naturalWidth > 0; })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if v := do(t, b, "progress", chromedp.Evaluate[float64](`document.getElementById("plan-progress").position`)); v != 1 {
		t.Fatalf("progress bar at %v after the job, want 1", v)
	}
	b.screenshot(t, "planning")

	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %q", errs)
	}

	// A change without the CSRF token is refused; with it, it reaches the admin API.
	revoke := `{method: "POST", headers: {"Content-Type": "application/json"%s}, body: JSON.stringify({lease: "duck#999999"})}`
	if code := b.fetchStatus(t, "api/admin/leases/revoke", fmt.Sprintf(revoke, "")); code != 403 {
		t.Fatalf("POST without the CSRF token: %d, want 403", code)
	}
	if code := b.fetchStatus(t, "api/admin/leases/revoke", fmt.Sprintf(revoke, `, "X-CSRF-Token": state.csrf`)); code == 403 || code == 401 {
		t.Fatalf("POST with the CSRF token: %d, want it past the session checks", code)
	}

	// Logout ends the session: the page asks for the token and the API answers 401.
	b.run(t, "logging out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	if code := b.fetchStatus(t, "api/admin/workers", "{}"); code != 401 {
		t.Fatalf("admin API through Studio after logout: %d, want 401", code)
	}
	for _, p := range []*daemontest.Proc{n.daemon, n.worker} {
		if strings.Contains(p.Output(), adminToken) {
			t.Fatal("the admin token is in a daemon's log")
		}
	}
}

// controlPlane is a control plane whose configuration lives in a fresh PostgreSQL database
// (so it keeps revisions), with one worker process.
func startControlPlane(t *testing.T) (api string) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	db := pgtest.NewDatabase(t)
	if out, err := exec.Command(daemontest.Binary(t), "migrate", "--database-url", db).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	addrs := daemontest.FreeAddrs(t, 2)
	api = addrs[0]
	cfg := daemontest.WriteFile(t, "cp.yaml", fmt.Sprintf(`queryflux:
  role: controlPlane
  adminApi: {listen: %q, token: %q}
  workerApi: {enabled: true, secret: %q}
  persistence: {databaseUrl: %q}
  coordination: {queue: ordered, weights: {holder-1: 2}}
`, api, adminToken, workerSecret, db))
	wcfg := daemontest.WriteFile(t, "worker.yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: "http://%s", secret: "%s"}
`, api, workerSecret))
	cp := daemontest.Start(t, "controlplane", "serve", "--config", cfg, "--allow-short-timeouts", "--heartbeat-interval", "500ms")
	cp.WaitListening(t, 60*time.Second, api)
	daemontest.Start(t, "worker-1", "serve", "--config", wcfg, "--name", "worker-1", "--ops-listen", addrs[1],
		"--allow-short-timeouts", "--heartbeat-interval", "500ms")
	return api
}

func duckConfig(cap int) string {
	return fmt.Sprintf(`clusters:
  - {name: duck, engine: duckdb, endpoint: ":memory:", maxRunningQueries: %d}
clusterGroups:
  - {name: g, members: [duck]}
routingFallback: g
`, cap)
}

// adminRevision is the control plane's current configuration revision.
func adminRevision(t *testing.T, api string) string {
	var cur struct {
		Revision string `json:"revision"`
	}
	daemontest.GetJSON(t, "http://"+api+"/admin/config", adminToken, &cur)
	return cur.Revision
}

// A config rollback and a lease revoke, each confirmed in the page, go through to the admin API.
func TestStudioRollsBackConfigAndRevokesALease(t *testing.T) {
	testlong.Skip(t, "TestStudioInChromiumAgainstALiveNode")
	api := startControlPlane(t)
	put := func(body string) string {
		code, _, answer := daemontest.Call("PUT", "http://"+api+"/admin/config", adminToken, body, nil)
		var stored struct {
			Revision string `json:"revision"`
		}
		if code != 200 || json.Unmarshal([]byte(answer), &stored) != nil {
			t.Fatalf("PUT /admin/config: %d %s", code, answer)
		}
		// A PUT sent while the control plane still publishes its first configuration may be
		// answered as that one appears; wait for this edit's own revision.
		deadline := time.Now().Add(30 * time.Second)
		for adminRevision(t, api) != stored.Revision {
			if time.Now().After(deadline) {
				t.Fatalf("revision %s never served", stored.Revision)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return stored.Revision
	}
	first := put(duckConfig(2))
	second := put(duckConfig(5))
	if code, _, answer := daemontest.Call("PUT", "http://"+api+"/admin/config", adminToken, duckConfig(-1), nil); code != 422 {
		t.Fatalf("PUT of a negative cap: %d %s", code, answer)
	}

	b := newBrowser(t)
	b.run(t, "logging in", chromedp.Navigate("http://"+api+"/studio/"), chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken), chromedp.Click(chromedp.CSS("#login-form button")))
	b.waitText(t, `tr[data-worker="worker-1"]`, "healthy")

	// Workers of our own (taken late: a lease lives for the cluster's lease TTL): holder-1 holds
	// a lease on duck; holder-2, asking for a cap of 1, waits in the ordered queue and is denied.
	holder1, holder2 := registerWorker(t, api, "holder-1"), registerWorker(t, api, "holder-2")
	acq := acquire(t, api, holder1, `{"cluster":"duck","cap":5,"ttlMillis":600000}`)
	if !acq.Granted {
		t.Fatalf("holder-1's acquire denied: %+v", acq)
	}
	leaseID := acq.Lease.ID

	b.show(t, "#/capacity")
	row := fmt.Sprintf(`tr[data-lease=%q]`, leaseID)
	b.waitText(t, row, "holder-1")
	b.waitText(t, "#page svg", "1 / 5")
	waited := make(chan capacity.AcquireResponse, 1)
	go func() {
		waited <- acquire(t, api, holder2, `{"cluster":"duck","cap":1,"ttlMillis":600000,"waitMillis":6000}`)
	}()
	b.waitText(t, `tr[data-cluster="duck"] td:nth-child(4)`, "1") // waiting, as the control plane samples it
	if got := <-waited; got.Granted {
		t.Fatalf("holder-2's acquire at cap 1 granted: %+v", got)
	}
	b.waitText(t, `tr[data-cluster="duck"] td:nth-child(7)`, "1") // denied
	waitP99 := b.text(t, `tr[data-cluster="duck"] td:nth-child(5)`)
	if ms, err := strconv.ParseFloat(strings.TrimSuffix(waitP99, " ms"), 64); err != nil || ms < 6000 {
		t.Fatalf("p99 wait %q, want >= 6000 ms (holder-2 waited 6 s)", waitP99)
	}
	// holder-1 (weight 2) got its one grant, holder-2 none: Jain's index (2/2+0)²/(2·1) = 0.5.
	b.waitText(t, `tr[data-cluster="duck"] td:nth-child(10)`, "0.50")
	if share := b.text(t, `tr[data-share="duck/holder-2"]`); !regexp.MustCompile(`^holder-2\s+1\s+0\s+0\s+1$`).MatchString(share) {
		t.Fatalf("holder-2's share row: %q, want weight 1, none held, none granted, 1 denied", share)
	}
	if share := b.text(t, `tr[data-share="duck/holder-1"]`); !regexp.MustCompile(`^holder-1\s+2\s+1\s+1\s+0$`).MatchString(share) {
		t.Fatalf("holder-1's share row: %q, want weight 2, 1 held, 1 granted, 0 denied", share)
	}
	b.run(t, "two samples over time", chromedp.WaitVisible(chromedp.CSS(`#page section[data-cluster="duck"] svg polyline[points*=" "]`)))
	b.screenshot(t, "capacity-held")
	b.run(t, "revoking", chromedp.Click(chromedp.CSS(row+" button.revoke")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	b.waitText(t, "#confirm-text", leaseID)
	b.run(t, "confirming", chromedp.Click(chromedp.CSS("#confirm-yes")))
	b.waitText(t, "#status", "revoked")
	var leases []capacity.Lease
	daemontest.GetJSON(t, "http://"+api+"/admin/leases", adminToken, &leases)
	for _, l := range leases {
		if l.ID == leaseID && !l.Revoked {
			t.Fatalf("lease %s still held after the revoke: %+v", leaseID, l)
		}
	}
	// The sweeper fences the revoked lease on DuckDB (nothing runs under it) and frees it.
	b.waitText(t, `tr[data-cluster="duck"] td:nth-child(8)`, "1")
	b.waitText(t, `tr[data-cluster="duck"] td:nth-child(2)`, "0 / 5")
	b.screenshot(t, "capacity-fenced")

	b.show(t, "#/config")
	b.waitText(t, "#current-revision", second)
	b.waitText(t, "#page tr[data-rejection]", "maxRunningQueries") // the refused edit and its reason
	b.run(t, "diffing", chromedp.Click(chromedp.CSS("#page button.diff")))
	b.waitText(t, "#config-diff pre.diff", `-      "maxRunningQueries": 2`)
	b.waitText(t, "#config-diff pre.diff", `+      "maxRunningQueries": 5`)
	b.screenshot(t, "config-history")
	older := "#page button.rollback" // the newest stored revision before the current one
	b.run(t, "rolling back", chromedp.Click(chromedp.CSS(older)), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	b.run(t, "cancelling", chromedp.Click(chromedp.CSS("#confirm-no")))
	if rev := adminRevision(t, api); rev != second {
		t.Fatalf("a cancelled rollback changed the revision to %s", rev)
	}
	b.run(t, "rolling back", chromedp.Click(chromedp.CSS(older)), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm-yes")))
	b.waitText(t, "#status", "Rolled back")
	b.waitText(t, "#current-revision", first)
	if rev := adminRevision(t, api); rev != first {
		t.Fatalf("revision after the rollback: %s, want %s", rev, first)
	}
	b.screenshot(t, "config-rolled-back")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %q", errs)
	}
}

// registerWorker registers a worker through the worker API and returns its session token.
func registerWorker(t *testing.T, api, name string) string {
	code, _, body := daemontest.Call("POST", "http://"+api+workerapi.PathRegister, workerSecret, `{"name":"`+name+`","version":"1"}`,
		map[string]string{"Content-Type": workerapi.MediaWorkerRegister})
	var reg workerapi.RegisterResponse
	if code != 200 || json.Unmarshal([]byte(body), &reg) != nil {
		t.Errorf("register %s: %d %s", name, code, body)
	}
	return reg.Token
}

// acquire asks the control plane for a lease as the worker whose token it is (errors through
// t.Errorf: it also runs outside the test's goroutine).
func acquire(t *testing.T, api, token, req string) capacity.AcquireResponse {
	code, _, body := daemontest.Call("POST", "http://"+api+capacity.PathAcquire, token, req,
		map[string]string{"Content-Type": capacity.MediaJSON})
	var acq capacity.AcquireResponse
	if code != 200 || json.Unmarshal([]byte(body), &acq) != nil {
		t.Errorf("acquire %s: %d %s", req, code, body)
	}
	return acq
}
