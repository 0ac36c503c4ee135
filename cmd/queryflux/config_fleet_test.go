package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

const zonedYAML = `
clusters:
  - {name: duck-eu, engine: duckdb, maxRunningQueries: 1, workerSelector: {zone: eu-1}}
  - {name: duck-any, engine: duckdb, maxRunningQueries: 1}
clusterGroups:
  - {name: eu, members: [duck-eu]}
  - {name: bi, members: [duck-any], workerSelector: {team: bi}}
  - {name: all, members: [duck-any]}
routingFallback: all
`

// `config check FILE --admin-url` warns about the groups no online worker of that control plane
// serves, still exits 0, and says so when it cannot reach it.
func TestConfigCheckWarnsAboutSelectorsNoOnlineWorkerMatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp := controlplane.New(env.Real(nil), controlplane.Config{WorkerSecret: "sec", AdminToken: "adm"}, registry.NewMemory())
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(cp.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+workerapi.PathRegister,
		strings.NewReader(`{"name":"edge-1","version":"1","labels":{"zone":"eu-1"}}`))
	req.Header.Set("Content-Type", workerapi.MediaWorkerRegister)
	workerapi.SetBearer(req, "sec")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("register: %v %v", err, resp)
	}
	file := t.TempDir() + "/zoned.yaml"
	if err := os.WriteFile(file, []byte(zonedYAML), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := runCLI(t, "config", "check", file, "--admin-url", srv.URL, "--admin-token", "adm")
	if err != nil {
		t.Fatalf("config check: %v\n%s", err, out)
	}
	if !strings.Contains(out, "warning: clusterGroups.bi: none of the 1 online workers at "+srv.URL+" has labels {team=bi}") {
		t.Fatalf("no warning for the bi group:\n%s", out)
	}
	if strings.Contains(out, "clusterGroups.eu") || strings.Contains(out, "clusterGroups.all") || strings.Contains(out, "adm") {
		t.Fatalf("a served group is warned about, or the token shows:\n%s", out)
	}

	srv.Close()
	out, err = runCLI(t, "config", "check", file, "--admin-url", srv.URL, "--admin-token", "adm")
	if err != nil || !strings.Contains(out, "note: workerSelectors not checked against the live fleet at "+srv.URL) {
		t.Fatalf("unreachable control plane: %v\n%s", err, out)
	}
}
