package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/workerapi"
)

const reloadYAML = `queryflux:
  adminApi: {token: reload-admin-token}
clusters:
  - {name: t, engine: trino, endpoint: "http://t:8080", maxRunningQueries: %d, credentials: {user: u, password: reload-cluster-pw}}
clusterGroups: [{name: g, members: [t]}]
routingFallback: g
`

type reloadHarness struct {
	*csHarness
	path    string
	r       *ConfigReloader
	reg     *prometheus.Registry
	applied []int // maxRunningQueries of every config applied
	refuse  error // returned by Apply when set
}

func newReloadHarness(t *testing.T) *reloadHarness {
	t.Helper()
	h := &reloadHarness{csHarness: newCSHarness(t, 10*time.Second), reg: prometheus.NewRegistry()}
	h.path = filepath.Join(t.TempDir(), "queryflux.yaml")
	h.write(3)
	initial := h.load(t)
	var err error
	h.r, err = NewConfigReloader(h.e, h.srv, initial, ReloadOptions{
		Load:       func() (*config.Config, error) { return config.Load(h.path) },
		Registerer: h.reg,
		Apply: func(_ context.Context, cfg *config.Config) error {
			if h.refuse != nil {
				return h.refuse
			}
			h.applied = append(h.applied, cfg.Clusters[0].MaxRunningQueries)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	MountReload(h.cp, h.r, "")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.e.Go(ctx, "config-refresh", func(ctx context.Context) {
		_ = h.srv.RunConfigRefresh(ctx, h.r.Source, h.r.Wake(), time.Second)
	})
	waitFor(t, "first publish", func() bool { return h.srv.Current() != nil })
	return h
}

func (h *reloadHarness) write(maxRunning int) {
	h.writeRaw(strings.Replace(reloadYAML, "%d", itoa(maxRunning), 1))
}

func (h *reloadHarness) writeRaw(s string) {
	if err := os.WriteFile(h.path, []byte(s), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

func (h *reloadHarness) load(t *testing.T) *config.Config {
	cfg, err := config.Load(h.path)
	if err != nil {
		t.Fatal(err)
	}
	config.ApplyDefaults(cfg)
	if err := config.Compile(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (h *reloadHarness) reload() (int, ReloadResult) {
	h.t.Helper()
	code, body := h.get(PathAdminConfigReload, csAdminToken, nil, "POST", "")
	var res ReloadResult
	if err := json.Unmarshal([]byte(body), &res); err != nil && code != http.StatusUnauthorized {
		h.t.Fatalf("reload answer %d %q: %v", code, body, err)
	}
	return code, res
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReloadPublishesAGoodFileAndWakesLongPolls(t *testing.T) {
	h := newReloadHarness(t)
	first := h.srv.Current().Revision

	// A worker parked on the long-poll for the first revision.
	polled := make(chan string, 1)
	go func() {
		code, _, body := h.do(snapshot.PathConfigWait+"?revision="+first, h.token, nil, "GET", "")
		snap, err := snapshot.Decode([]byte(body))
		if code != 200 || err != nil {
			polled <- "error"
			return
		}
		polled <- snap.Revision
	}()
	waitFor(t, "the long-poll to park", func() bool { return h.srv.Waiting() == 1 })

	h.write(7)
	start := time.Now()
	code, res := h.reload()
	if code != 200 || !res.OK || !res.Changed || res.PreviousRevision != first || res.Revision == first {
		t.Fatalf("reload: %d %+v", code, res)
	}
	// Reload returns once the new revision is served, and the parked worker gets it.
	if cur := h.srv.Current().Revision; cur != res.Revision {
		t.Fatalf("served %s after the reload answered %s", cur, res.Revision)
	}
	select {
	case got := <-polled:
		if got != res.Revision {
			t.Fatalf("long-poll answered %s, want %s", got, res.Revision)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the long-poll did not wake")
	}
	t.Logf("reload to long-poll answer: %v", time.Since(start))
	if len(h.applied) != 1 || h.applied[0] != 7 {
		t.Fatalf("the node's query path got %v, want [7]", h.applied)
	}
	if h.cp.CurrentRevision() != res.Revision {
		t.Fatalf("/admin/workers compares against %s", h.cp.CurrentRevision())
	}

	// The same file again: accepted, nothing changes, nobody is woken.
	if code, again := h.reload(); code != 200 || !again.OK || again.Changed || again.Revision != res.Revision {
		t.Fatalf("unchanged reload: %d %+v", code, again)
	}
	if got := testutil.ToFloat64(h.r.metrics.reloads); got != 2 {
		t.Fatalf("queryflux_config_reloads_total = %v", got)
	}
}

func TestReloadRefusesABadFileAndKeepsServing(t *testing.T) {
	h := newReloadHarness(t)
	served := h.srv.Current().Revision

	// Two errors, both named with their paths; nothing is applied or published.
	h.writeRaw(strings.Replace(strings.Replace(reloadYAML, "%d", "3", 1), "members: [t]", "members: [t, nope]", 1) +
		"routers: [{type: tags, tag: x, group: missing}]\n")
	code, res := h.reload()
	if code != http.StatusUnprocessableEntity || res.OK || res.Stage != ReloadStageFile || res.Revision != served {
		t.Fatalf("bad file: %d %+v", code, res)
	}
	paths := map[string]bool{}
	for _, e := range res.Errors {
		paths[e.Path] = true
	}
	if len(res.Errors) != 2 || !paths["clusterGroups[0].members[1]"] && !paths["clusterGroups[0].members"] || !paths["routers[0].group"] {
		t.Fatalf("errors do not name both paths: %+v", res.Errors)
	}
	// Broken YAML and unknown keys are reported with their line.
	h.writeRaw("clusters: [{name: t\nbogus: 1\n")
	if code, res := h.reload(); code != 422 || len(res.Errors) == 0 || res.Errors[0].Line == 0 {
		t.Fatalf("broken YAML: %d %+v", code, res)
	}
	h.writeRaw(strings.Replace(reloadYAML, "%d", "3", 1) + "bogus: 1\n")
	if code, res := h.reload(); code != 422 || len(res.Errors) != 1 || res.Errors[0].Path != "bogus" {
		t.Fatalf("unknown key: %d %+v", code, res)
	}
	// A file that vanished.
	if err := os.Remove(h.path); err != nil {
		t.Fatal(err)
	}
	if code, res := h.reload(); code != 422 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "no such file") {
		t.Fatalf("missing file: %d %+v", code, res)
	}
	if h.srv.Current().Revision != served || len(h.applied) != 0 {
		t.Fatalf("a refused reload changed something: served %s, applied %v", h.srv.Current().Revision, h.applied)
	}
	if got := testutil.ToFloat64(h.r.metrics.failures.WithLabelValues(ReloadStageFile)); got != 4 {
		t.Fatalf("file failures = %v, want 4", got)
	}
}

func TestReloadRefusedByTheQueryPath(t *testing.T) {
	h := newReloadHarness(t)
	served := h.srv.Current().Revision
	h.refuse = errors.New("engine t: cannot open")
	h.write(9)
	code, res := h.reload()
	if code != 422 || res.Stage != ReloadStageApply || res.Revision != served || h.srv.Current().Revision != served {
		t.Fatalf("refused apply: %d %+v", code, res)
	}
	if got := testutil.ToFloat64(h.r.metrics.failures.WithLabelValues(ReloadStageApply)); got != 1 {
		t.Fatalf("apply failures = %v", got)
	}
	// Fixed: the same file goes through.
	h.refuse = nil
	if code, res := h.reload(); code != 200 || !res.OK || res.Revision == served {
		t.Fatalf("after the fix: %d %+v", code, res)
	}
}

func TestReloadKeepsNodeLocalSettings(t *testing.T) {
	h := newReloadHarness(t)
	h.writeRaw(strings.Replace(strings.Replace(reloadYAML, "%d", "4", 1), "reload-admin-token", "another-token", 1))
	code, res := h.reload()
	if code != 200 || !res.OK || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "next restart") {
		t.Fatalf("changed queryflux section: %d %+v", code, res)
	}
	if tok := h.r.Current().QueryFlux.AdminAPI.Token.Reveal(); tok != "reload-admin-token" {
		t.Fatal("the running admin token was replaced by the file's")
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "another-token") {
			t.Fatal("a warning shows a token")
		}
	}
}

func TestReloadNeedsTheAdminTokenAndAFile(t *testing.T) {
	h := newReloadHarness(t)
	if code, _ := h.get(PathAdminConfigReload, csSecret, nil, "POST", ""); code != http.StatusUnauthorized {
		t.Fatalf("with the worker secret: %d", code)
	}
	other := newCSHarness(t, time.Second)
	MountReload(other.cp, nil, "the configuration comes from Postgres")
	code, body := other.get(PathAdminConfigReload, csAdminToken, nil, "POST", "")
	var eb workerapi.ErrorBody
	_ = json.Unmarshal([]byte(body), &eb)
	if code != http.StatusConflict || !strings.Contains(eb.Error, "Postgres") {
		t.Fatalf("no file: %d %s", code, body)
	}
}

// Reloads crossing each other (SIGHUP and HTTP) run one at a time and end on the file's content.
func TestConcurrentReloadsTakeTurns(t *testing.T) {
	h := newReloadHarness(t)
	h.write(5)
	done := make(chan ReloadResult, 8)
	for range 8 {
		go func() { done <- h.r.Reload(context.Background()) }()
	}
	var rev string
	for range 8 {
		res := <-done
		if !res.OK {
			t.Fatalf("concurrent reload: %+v", res)
		}
		rev = res.Revision
	}
	if h.srv.Current().Revision != rev {
		t.Fatalf("served %s, reloads answered %s", h.srv.Current().Revision, rev)
	}
}
