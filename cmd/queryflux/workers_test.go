package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCommand()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestWorkersListAndShow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp := controlplane.New(env.Real(nil), controlplane.Config{WorkerSecret: "sec", AdminToken: "adm"}, registry.NewMemory())
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cp.SetServedView(func(labels map[string]string) (string, []string) {
		if labels["zone"] == "eu" {
			return "rev-2", []string{"bi", "eu"}
		}
		return "rev-other", nil
	})
	srv := httptest.NewServer(cp.Handler())
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+workerapi.PathRegister,
		strings.NewReader(`{"name":"edge-1","version":"1.4","labels":{"zone":"eu","tier":"a"}}`))
	req.Header.Set("Content-Type", workerapi.MediaWorkerRegister)
	workerapi.SetBearer(req, "sec")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("register: %v %v", err, resp)
	}
	var ans struct{ Token string }
	_ = jsonDecode(resp, &ans)
	hb, _ := http.NewRequest("POST", srv.URL+workerapi.PathHeartbeat, strings.NewReader(
		`{"seq":1,"sentAt":"`+time.Now().UTC().Format(time.RFC3339Nano)+`","revision":{"active":"rev-1"},"history":{"dropped":3},"health":{"state":"healthy"}}`))
	hb.Header.Set("Content-Type", workerapi.MediaHeartbeat)
	workerapi.SetBearer(hb, ans.Token)
	if resp, err := http.DefaultClient.Do(hb); err != nil || resp.StatusCode != 200 {
		t.Fatalf("heartbeat: %v %v", err, resp)
	}

	out, err := runCLI(t, "workers", "list", "--admin-url", srv.URL, "--admin-token", "adm")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("table:\n%s", out)
	}
	for _, want := range []string{"edge-1", "healthy", "yes", "rev-1", "no", "tier=a,zone=eu", "bi,eu", "ago"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row lacks %q: %s", want, lines[1])
		}
	}

	out, err = runCLI(t, "workers", "show", "edge-1", "--admin-url", srv.URL, "--admin-token", "adm")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Name:", "edge-1", "Version:", "1.4", "rev-1 (current: no)", "bi,eu", "dropped 3", "Warnings:", `the control plane's current revision for it is "rev-2"`} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}

	if out, err := runCLI(t, "workers", "show", "nobody", "--admin-url", srv.URL, "--admin-token", "adm"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown worker: %v %s", err, out)
	}
	if _, err := runCLI(t, "workers", "list", "--admin-url", srv.URL, "--admin-token", "wrong"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v", err)
	}
}

func jsonDecode(resp *http.Response, into any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(into)
}
