package configtest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// TestAdminCannotSendTheControlPlanesOwnSecretsToAnEngine: whoever holds the admin token writes
// the shared sections, and the control plane resolves their references with its own environment
// and files and logs in to the engine they name. A check naming an engine the attacker listens
// on, with a password reference to the control plane's configuration file, its config key's
// file, a QUERYFLUX_ variable, its admin token's variable or a file outside
// queryflux.sharedSecrets.fileDirs, is refused with the rule named, and nothing connects to the
// engine. A reference inside fileDirs does reach it (the listener would see a dial).
func TestAdminCannotSendTheControlPlanesOwnSecretsToAnEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("real-daemon test skipped in -short mode")
	}
	stateDB := migratedDatabase(t)
	dir := t.TempDir()
	allowed := filepath.Join(dir, "engine-secrets")
	keyFile := filepath.Join(allowed, "config-key") // inside fileDirs, yet the node's own
	if err := os.Mkdir(allowed, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(allowed, "engine-pw"), "engine-pw\n")
	writeFile(t, keyFile, scanConfigKey+"\n")
	outside := filepath.Join(dir, "elsewhere")
	writeFile(t, outside, "not-for-engines\n")

	attacker, dials := listenCounting(t)
	api := daemontest.FreeAddr(t)
	cpFile := filepath.Join(dir, "cp.yaml")
	writeFile(t, cpFile, fmt.Sprintf(`queryflux:
  role: controlPlane
  adminApi: {listen: %q, token: "${env:QF_REFS_ADMIN_TOKEN}"}
  persistence: {databaseUrl: %q, configKey: "${file:%s}"}
  sharedSecrets: {fileDirs: [%q]}
`, api, stateDB, keyFile, allowed))
	ps := &procs{}
	cp := ps.startEnv(t, []string{"QF_REFS_ADMIN_TOKEN=" + adminToken, "QUERYFLUX_OWN=own-value", "ENGINE_PW=engine-pw"},
		"cp-refs", "serve", "--config", cpFile)
	daemontest.Eventually(t, 20*time.Second, "the control plane serving", func() bool {
		if cp.Exited() {
			t.Fatalf("control plane exited:\n%s", daemontest.Tail(cp.Output(), 3000))
		}
		code, _, _ := daemontest.Call("GET", "http://"+api+"/admin/config", adminToken, "", nil)
		return code == 200
	})

	check := func(ref string) (int, string) {
		doc := fmt.Sprintf(`clusters:
  x: {engine: postgres, endpoint: %q, credentials: {user: u, password: %q}, maxRunningQueries: 1}
clusterGroups: [{name: g, members: [x]}]
routingFallback: g
`, attacker, ref)
		code, _, body := daemontest.Call("POST", "http://"+api+"/admin/config/check", adminToken, doc, nil)
		return code, body
	}
	for ref, rule := range map[string]string{
		"${file:" + cpFile + "}":               "own section",
		"${file:" + keyFile + "}":              "own section",
		"${env:QUERYFLUX_OWN}":                 "QUERYFLUX_",
		"${env:QF_REFS_ADMIN_TOKEN}":           "own section",
		"${file:" + outside + "}":              "sharedSecrets.fileDirs",
		"${file:" + allowed + "/../elsewhere}": "sharedSecrets.fileDirs",
	} {
		code, body := check(ref)
		if code != 422 || !strings.Contains(body, rule) {
			t.Errorf("check with %s: %d %s, want 422 naming %q", ref, code, body, rule)
		}
		for _, secret := range []string{adminToken, scanConfigKey, "own-value", "not-for-engines"} {
			if strings.Contains(body, secret) {
				t.Errorf("check with %s answered a secret: %s", ref, body)
			}
		}
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("the engine was dialled %d times with a refused reference", n)
	}
	for _, ref := range []string{"${file:" + allowed + "/engine-pw}", "${env:ENGINE_PW}"} {
		before := dials.Load()
		check(ref)
		if dials.Load() == before {
			t.Fatalf("check with %s never reached the engine: the listener sees no dial", ref)
		}
	}
	ps.scanLogs(t)
}

// listenCounting is a TCP listener that counts connections and closes them.
func listenCounting(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), &n
}
