package configtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/policy"
	nodeworker "github.com/queryflux/queryflux/node/worker"
)

// Recognisable secrets, each configured in one of the ways a secret can be: a literal in an
// admin PUT, an ${env:...} or ${file:...} reference, inside an endpoint URL or the database URL.
const (
	scanAdminToken   = "scan-admin-token-7d1f04"
	scanWorkerSecret = "scan-worker-secret-3c9a71"
	scanEnginePW     = "scan-engine-pw-8b4d22"
	scanURLPW        = "scan-url-pw-1a6e93"
	scanMySQLPW      = "scan-mysql-pw-4d2a58"
	scanUnreachPW    = "scan-unreach-pw-6c1b07"
	scanDBPW         = "scan-db-pw-5e2b66"
	scanRefPW        = "scan-ref-pw-0f8e31"
	scanAlicePW      = "scan-alice-pw-0e7d45"
	scanConfigKey    = "5ca75ca75ca75ca75ca75ca75ca75ca75ca75ca75ca75ca75ca75ca75ca75ca7"
)

// scanned collects everything a daemon showed: answers, client errors and logs.
type scanned struct {
	mu    sync.Mutex
	texts map[string]string
}

func (s *scanned) add(where, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.texts[where] += text + "\n"
}

// call makes one HTTP request and keeps its status line, headers and body.
func (s *scanned) call(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	code, hdr, answer := daemontest.Call(method, url, token, body, nil)
	s.add(method+" "+url, fmt.Sprintf("%d %v %s", code, hdr, answer))
	return code, answer
}

// TestSecretsNeverShown starts a control plane (configuration in Postgres), a worker and a
// standalone node with recognisable secrets configured every way one can be, exercises the
// admin API, /metrics, /worker/status and the worker's other ops pages, queries that fail on a bad engine password and on an
// unreachable engine, and then requires that no secret appears in any answer, client error or
// log line.
func TestSecretsNeverShown(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	stateDB := migratedDatabase(t)
	dataDB := pgtest.NewDatabase(t)
	du, err := url.Parse(dataDB)
	if err != nil {
		t.Fatal(err)
	}
	dataName := strings.TrimPrefix(du.Path, "/")
	su, err := url.Parse(stateDB)
	if err != nil {
		t.Fatal(err)
	}
	su.User = url.UserPassword(su.User.Username(), scanDBPW)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "worker-secret")
	writeFile(t, secretFile, scanWorkerSecret+"\n")
	aliceHash, err := policy.SCRAMHash(scanAlicePW, []byte("0123456789abcdef"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	hashes := []string{aliceHash, policy.NativeHash(scanAlicePW)}
	env := []string{"QF_SCAN_ADMIN_TOKEN=" + scanAdminToken, "QF_SCAN_CONFIG_KEY=" + scanConfigKey, "QF_SCAN_REF_PW=" + scanRefPW}
	s := &scanned{texts: map[string]string{}}
	ps := &procs{}
	logLevel := logLevelArgs(t)

	// The control plane: every secret of its own file is a reference; the database URL carries
	// a password (trust auth ignores it).
	api, cpPG := daemontest.FreeAddr(t), daemontest.FreeAddr(t)
	cpFile := filepath.Join(dir, "cp.yaml")
	writeFile(t, cpFile, fmt.Sprintf(`queryflux:
  role: controlPlane
  adminApi: {listen: %q, token: "${env:QF_SCAN_ADMIN_TOKEN}"}
  workerApi: {enabled: true, secret: "${file:%s}"}
  persistence: {databaseUrl: %q, configKey: "${env:QF_SCAN_CONFIG_KEY}"}
  frontends: {postgres: {enabled: true, listen: %q}}
`, api, secretFile, su.String(), cpPG))
	cp := ps.startEnv(t, env, "cp-scan", append([]string{"serve", "--config", cpFile, "--allow-short-timeouts",
		"--heartbeat-interval", heartbeat.String()}, logLevel...)...)
	daemontest.Eventually(t, 20*time.Second, "the control plane serving", func() bool {
		if cp.Exited() {
			t.Fatalf("control plane exited:\n%s", daemontest.Tail(cp.Output(), 3000))
		}
		code, _, _ := daemontest.Call("GET", "http://"+api+"/admin/config", scanAdminToken, "", nil)
		return code == 200
	})

	// The shared configuration, stored through the admin API: a literal engine password, one
	// inside an endpoint, a MySQL cluster with a wrong password, an unreachable one, users.
	shared := fmt.Sprintf(`clusters:
  ok: {engine: postgres, endpoint: "127.0.0.1:5432", database: %q, credentials: {user: postgres, password: %q}, maxRunningQueries: 4}
  url: {engine: postgres, endpoint: "postgres://postgres:%s@127.0.0.1:5432/%s", maxRunningQueries: 4}
  ref: {engine: postgres, endpoint: "127.0.0.1:5432", database: %q, credentials: {user: postgres, password: "${env:QF_SCAN_REF_PW}"}, maxRunningQueries: 4}
  badpw: {engine: mysql, endpoint: "127.0.0.1:3306", credentials: {user: root, password: %q}, maxRunningQueries: 2}
  down: {engine: postgres, endpoint: "postgres://postgres:%s@127.0.0.1:1/x", maxRunningQueries: 2}
clusterGroups:
  - {name: ok, members: [ok]}
  - {name: url, members: [url]}
  - {name: ref, members: [ref]}
  - {name: badpw, members: [badpw]}
  - {name: down, members: [down]}
routers:
  - type: queryRegex
    rules:
      - {regex: "via_url", group: url}
      - {regex: "via_ref", group: ref}
      - {regex: "via_badpw", group: badpw}
      - {regex: "via_down", group: down}
routingFallback: ok
settings:
  security:
    users:
      - {name: alice, passwordHash: %q}
      - {name: bob, passwordHash: %q}
`, dataName, scanEnginePW, scanURLPW, dataName, dataName, scanMySQLPW, scanUnreachPW, hashes[0], hashes[1])
	// badpw and down cannot be opened: the check says so (its answer is scanned like the rest),
	// and the edit is stored only when forced.
	if code, body := s.call(t, "POST", "http://"+api+"/admin/config/check", scanAdminToken, shared); code != 422 ||
		!strings.Contains(body, `cluster \"badpw\"`) || !strings.Contains(body, `cluster \"down\"`) {
		t.Fatalf("check: %d %s, want 422 naming badpw and down", code, body)
	}
	if code, body := s.call(t, "PUT", "http://"+api+"/admin/config?force=true", scanAdminToken, shared); code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	// Refused edits answer with errors that must not quote a secret either.
	s.call(t, "PUT", "http://"+api+"/admin/config", scanAdminToken, strings.Replace(shared, "routingFallback: ok", "routingFallback: nowhere", 1))
	if code, _ := s.call(t, "PUT", "http://"+api+"/admin/config", scanAdminToken, strings.Replace(shared, `endpoint: "127.0.0.1:3306"`, `endpoint: "root:`+scanMySQLPW+`@127.0.0.1:3306"`, 1)); code != 422 {
		t.Errorf("a MySQL endpoint with a password: %d, want 422", code)
	}
	s.call(t, "PUT", "http://"+api+"/admin/config", scanAdminToken, strings.Replace(shared, "QF_SCAN_REF_PW", "QF_SCAN_MISSING", 1))

	// A worker whose control plane secret is a file reference.
	wFile, wPG := filepath.Join(dir, "worker.yaml"), daemontest.FreeAddr(t)
	writeFile(t, wFile, fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: %q, secret: "${file:%s}"}
  frontends: {postgres: {enabled: true, listen: %q}}
  stateDir: %q
`, "http://"+api, secretFile, wPG, filepath.Join(dir, "state")))
	wOps := daemontest.FreeAddr(t)
	w := ps.startEnv(t, nil, "w-scan", append([]string{"serve", "--config", wFile, "--name", "w-scan", "--ops-listen", wOps,
		"--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts"}, logLevel...)...)
	daemontest.Eventually(t, 20*time.Second, "the worker ready", func() bool {
		if w.Exited() {
			t.Fatalf("worker exited:\n%s", daemontest.Tail(w.Output(), 3000))
		}
		code, _, _ := daemontest.Call("GET", "http://"+wOps+"/readyz", "", "", nil)
		return code == 200
	})

	// The standalone node: its own file, secrets as references.
	saAPI, saPG := daemontest.FreeAddr(t), daemontest.FreeAddr(t)
	saFile := filepath.Join(dir, "standalone.yaml")
	writeFile(t, saFile, fmt.Sprintf(`queryflux:
  adminApi: {listen: %q, token: "${env:QF_SCAN_ADMIN_TOKEN}"}
  frontends: {postgres: {enabled: true, listen: %q}}
clusters:
  ok: {engine: postgres, endpoint: "127.0.0.1:5432", database: %q, credentials: {user: postgres, password: "${env:QF_SCAN_REF_PW}"}, maxRunningQueries: 2}
  down: {engine: postgres, endpoint: "postgres://postgres:%s@127.0.0.1:1/x", maxRunningQueries: 2}
clusterGroups: [{name: ok, members: [ok]}, {name: down, members: [down]}]
routers: [{type: queryRegex, regex: via_down, group: down}]
routingFallback: ok
settings: {security: {trustLoopback: true}}
`, saAPI, saPG, dataName, scanUnreachPW))
	sa := ps.startEnv(t, env, "sa-scan", append([]string{"serve", "--config", saFile}, logLevel...)...)
	daemontest.Eventually(t, 20*time.Second, "the standalone serving", func() bool {
		if sa.Exited() {
			t.Fatalf("standalone exited:\n%s", daemontest.Tail(sa.Output(), 3000))
		}
		code, _, _ := daemontest.Call("GET", "http://"+saAPI+"/admin/config", scanAdminToken, "", nil)
		return code == 200
	})

	// Queries: the good paths must work (so the secrets were resolved), the bad ones fail.
	for _, q := range []struct {
		node, addr, user, pw, sql string
		ok                        bool
	}{
		{"worker", wPG, "alice", scanAlicePW, "select 1 as plain", true},
		{"worker", wPG, "alice", scanAlicePW, "select 1 as via_url", true},
		{"worker", wPG, "alice", scanAlicePW, "select 1 as via_ref", true},
		{"worker", wPG, "alice", scanAlicePW, "select 1 as via_badpw", false},
		{"worker", wPG, "alice", scanAlicePW, "select 1 as via_down", false},
		{"worker", wPG, "alice", "wrong-password", "select 1", false},
		{"control plane", cpPG, "alice", scanAlicePW, "select 1 as via_down", false},
		{"standalone", saPG, "queryflux", "", "select 1 as plain", true},
		{"standalone", saPG, "queryflux", "", "select 1 as via_down", false},
	} {
		err := pgQuery(q.addr, q.user, q.pw, dataName, q.sql)
		if (err == nil) != q.ok {
			t.Errorf("%s %q as %s: %v (want ok=%v)", q.node, q.sql, q.user, err, q.ok)
		}
		if err != nil {
			s.add("client error "+q.node+" "+q.sql, err.Error())
		}
	}

	// Every admin and status answer.
	for _, base := range []string{"http://" + api, "http://" + saAPI} {
		for _, path := range []string{"/admin/config", "/admin/config/history", "/admin/workers", "/metrics", "/health", "/admin/queries"} {
			s.call(t, "GET", base+path, scanAdminToken, "")
		}
		s.call(t, "POST", base+"/admin/config/reload", scanAdminToken, "")
	}
	for _, path := range []string{"/worker/status", "/metrics", "/health", "/readyz"} {
		s.call(t, "GET", "http://"+wOps+path, "", "")
	}
	// The worker's other ops pages: the peer copy of its snapshot (sealed, even to a holder of
	// the worker secret), asked with no token, a wrong one and the secret; a forwarded query
	// that is not one; a page that does not exist.
	for _, token := range []string{"", "not-the-secret", scanWorkerSecret} {
		if code, _ := s.call(t, "GET", "http://"+wOps+nodeworker.PathPeerConfig, token, ""); (code == 200) != (token == scanWorkerSecret) {
			t.Errorf("the peer copy asked with token %q: %d", token, code)
		}
		s.call(t, "POST", "http://"+wOps+forward.PathQuery, token, `{"sql":"select 1","user":"alice"`)
	}
	s.call(t, "GET", "http://"+wOps+"/worker/nothing-here", "", "")
	// The CLI: history lists the stored edit; rolling back to it (by id) serves it again;
	// a rollback that would remove every cluster, or name an engine that cannot be opened, needs
	// --force.
	hist := cli(t, s, "config", "history", "--admin-url", "http://"+api)
	if !strings.Contains(hist, "ID") || !strings.Contains(hist, "edit") || strings.Count(hist, "\n") != 2 {
		t.Fatalf("config history:\n%s", hist)
	}
	id := strings.Fields(strings.Split(hist, "\n")[1])[0]
	// Its engines badpw and down still cannot be opened, so the rollback is forced.
	if out := cli(t, s, "config", "rollback", id, "--force", "--admin-url", "http://"+api); !strings.Contains(out, "rolled back to "+id) {
		t.Fatalf("config rollback: %s", out)
	}
	for _, p := range []*daemontest.Proc{cp, w, sa} {
		p.Stop(t)
		s.add(p.Name+" log", p.Output())
	}
	// The worker's last good snapshot is sealed on disk: the file is scanned with the rest, and
	// the worker, started again while the control plane is down, runs from it.
	state, err := os.ReadFile(filepath.Join(dir, "state", "config-snapshot.json"))
	if err != nil {
		t.Fatalf("the worker kept no last good snapshot: %v", err)
	}
	s.add("the worker's state file", string(state))
	again := ps.startEnv(t, nil, "w-scan-again", append([]string{"serve", "--config", wFile, "--name", "w-scan", "--ops-listen", wOps,
		"--heartbeat-interval", heartbeat.String(), "--allow-short-timeouts"}, logLevel...)...)
	daemontest.Eventually(t, 30*time.Second, "the worker running its last good snapshot", func() bool {
		if again.Exited() {
			t.Fatalf("worker exited:\n%s", daemontest.Tail(again.Output(), 3000))
		}
		code, _, body := daemontest.Call("GET", "http://"+wOps+"/worker/status", "", "", nil)
		return code == 200 && strings.Contains(body, `"source":"cache"`)
	})
	again.Stop(t)
	s.add(again.Name+" log", again.Output())
	total := 0
	for where, text := range s.texts {
		total += len(text)
		if strings.HasPrefix(where, "client error") {
			t.Logf("%s: %s", where, strings.TrimSpace(text))
		}
	}
	t.Logf("scanned %d answers, errors and logs, %d bytes", len(s.texts), total)
	secrets := append([]string{scanAdminToken, scanWorkerSecret, scanEnginePW, scanURLPW, scanMySQLPW, scanUnreachPW,
		scanDBPW, scanRefPW, scanAlicePW, scanConfigKey}, hashes...)
	for where, text := range s.texts {
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				i := strings.Index(text, secret)
				t.Errorf("secret %q shown in %s: ...%s...", secret, where, text[max(0, i-200):min(len(text), i+len(secret)+50)])
			}
		}
	}
}

// cli runs the queryflux CLI with the admin token in its environment and keeps its output.
func cli(t *testing.T, s *scanned, args ...string) string {
	t.Helper()
	cmd := exec.Command(daemontest.Binary(t), args...)
	cmd.Env = append(os.Environ(), "QUERYFLUX_ADMIN_TOKEN="+scanAdminToken)
	out, err := cmd.CombinedOutput()
	s.add(fmt.Sprint("cli ", args), string(out))
	if err != nil {
		t.Fatalf("queryflux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// startEnv is start with extra environment variables.
func (ps *procs) startEnv(t *testing.T, env []string, name string, args ...string) *daemontest.Proc {
	t.Helper()
	p := daemontest.StartWith(t, daemontest.Options{Env: env}, name, args...)
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	return p
}

// logLevelArgs runs the daemons at debug level when the binary has --log-level.
func logLevelArgs(t *testing.T) []string {
	out, _ := exec.Command(daemontest.Binary(t), "serve", "--help").CombinedOutput()
	if strings.Contains(string(out), "--log-level") {
		return []string{"--log-level", "debug"}
	}
	t.Log("serve has no --log-level: scanning at the default level")
	return nil
}

func pgQuery(addr, user, password, db, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", user, password, addr, db)
	if password == "" {
		dsn = fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", user, addr, db)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var v int
	return conn.QueryRow(ctx, sql).Scan(&v)
}
