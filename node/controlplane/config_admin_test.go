package controlplane

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/pgconfig"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/migrations/migratedtest"
)

const csYAML = `
clusters:
  - {name: t, engine: trino, endpoint: "http://t:8080", maxRunningQueries: 3, credentials: {user: u, password: very-secret-pw}}
clusterGroups: [{name: g, members: [t]}]
routingFallback: g
`

func decodeAnswer(t *testing.T, body string) adminConfigAnswer {
	t.Helper()
	var a adminConfigAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	return a
}

func TestAdminConfigCheck(t *testing.T) {
	h := newCSHarness(t, time.Second)
	h.srv.MountAdmin(h.cp, nil)
	code, body := h.get(PathAdminConfigCheck, csAdminToken, nil, "POST", csYAML)
	if a := decodeAnswer(t, body); code != 200 || !a.OK || len(a.Revision) != 16 {
		t.Fatalf("valid config: %d %s", code, body)
	}
	code, body = h.get(PathAdminConfigCheck, csAdminToken, nil, "POST",
		"clusters: [{name: t, engine: oracle, maxRunningQueries: 1}]\nrouters: [{type: tags, tag: x, group: nope}]\nbogus: 1\n")
	a := decodeAnswer(t, body)
	if code != http.StatusUnprocessableEntity || len(a.Errors) != 1 || a.Errors[0].Path != "bogus" || a.Errors[0].Line != 3 {
		t.Fatalf("unknown key: %d %s", code, body)
	}
	code, body = h.get(PathAdminConfigCheck, csAdminToken, nil, "POST",
		"clusters: [{name: t, engine: oracle, maxRunningQueries: 1}]\nrouters: [{type: tags, tag: x, group: nope}]\n")
	a = decodeAnswer(t, body)
	if code != http.StatusUnprocessableEntity || len(a.Errors) != 2 || a.Errors[0].Path != "clusters[0].engine" || a.Errors[1].Path != "routers[0].group" {
		t.Fatalf("invalid config: %d %s", code, body)
	}
	if code, _ := h.get(PathAdminConfigCheck, csSecret, nil, "POST", csYAML); code != http.StatusUnauthorized {
		t.Fatalf("without the admin token: %d", code)
	}
}

func TestAdminConfigGetRedactsCredentials(t *testing.T) {
	h := newCSHarness(t, time.Second)
	h.srv.MountAdmin(h.cp, nil) // no store: the configuration comes from a file
	cfg, err := config.Parse([]byte(csYAML))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Build(cfg, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = h.srv.Publish(snap)
	code, body := h.get(PathAdminConfig, csAdminToken, nil, "", "")
	if code != 200 || strings.Contains(body, "very-secret-pw") || !strings.Contains(body, "[redacted]") {
		t.Fatalf("GET /admin/config: %d %s", code, body)
	}
	if a := decodeAnswer(t, body); a.Revision != snap.Revision || a.Snapshot.Clusters[0].Credentials.User != "u" {
		t.Fatalf("answer %+v", a)
	}
	if h.srv.Current().Clusters[0].Credentials.Password != "very-secret-pw" {
		t.Fatal("redacting the answer changed the served snapshot")
	}
	if code, _ := h.get(PathAdminConfig, csAdminToken, nil, "PUT", csYAML); code != http.StatusConflict {
		t.Fatalf("PUT without a store: %d, want 409", code)
	}
}

// TestAdminConfigPutIntoPostgres: PUT stores the configuration in Postgres, the refresh loop
// (woken by NOTIFY) serves it to workers, and an invalid PUT changes nothing.
func TestAdminConfigPutIntoPostgres(t *testing.T) {
	url := migratedtest.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key, err := pgconfig.ParseKey(strings.Repeat("5a", pgconfig.KeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	store, err := pgconfig.Open(ctx, url, pgconfig.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h := newCSHarness(t, time.Second)
	h.srv.MountAdmin(h.cp, store)
	wake := h.e.NewSignal()
	h.e.Go(ctx, "listen", func(ctx context.Context) { _ = store.Listen(ctx, wake.Notify) })
	h.e.Go(ctx, "refresh", func(ctx context.Context) {
		_ = h.srv.RunConfigRefresh(ctx, func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error) {
			return store.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{})
		}, wake, 5*time.Second)
	})
	code, body := h.get(PathAdminConfig, csAdminToken, nil, "PUT", csYAML)
	a := decodeAnswer(t, body)
	if code != 200 || !a.OK {
		t.Fatalf("PUT: %d %s", code, body)
	}
	h.waitFor(func() bool { c := h.srv.Current(); return c != nil && c.Revision == a.Revision })
	if h.srv.Current().Clusters[0].Credentials.Password != "very-secret-pw" {
		t.Fatal("the stored configuration lost the password")
	}
	code, _ = h.get(PathAdminConfig, csAdminToken, nil, "PUT", strings.Replace(csYAML, "members: [t]", "members: [x]", 1))
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("invalid PUT: %d", code)
	}
	// The refusal is answered after the store was (not) written: what it holds now is final.
	stored, err := store.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{})
	if err != nil || stored.Revision != a.Revision {
		t.Fatalf("after an invalid PUT the store holds %v (%v), want revision %s", stored, err, a.Revision)
	}
	if h.srv.Current().Revision != a.Revision {
		t.Fatal("an invalid PUT changed the served configuration")
	}
}
