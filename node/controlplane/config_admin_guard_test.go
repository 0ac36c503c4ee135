package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/pgconfig"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/migrations/migratedtest"
)

// A bcrypt hash (of "pw") and a mysql_native_password hash, both of which GET must hide.
const (
	guardBcrypt = "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"
	guardNative = "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"
)

var guardYAML = `
clusters:
  - name: pg
    engine: postgres
    endpoint: "postgres://app:url-secret-pw@db.internal:5432/app"
    maxRunningQueries: 3
    credentials: {user: app, password: cred-secret-pw}
    options: {sslpassword: option-secret-pw, applicationName: "qf"}
clusterGroups: [{name: g, members: [pg]}]
routingFallback: g
settings:
  security:
    users:
      - {name: alice, passwordHash: "` + guardBcrypt + `"}
      - {name: bob, passwordHash: "` + guardNative + `"}
`

// newStoredHarness is a control plane serving a Postgres-stored configuration (sealed with a
// test key) with the admin endpoints and their history, the refresh loop woken by NOTIFY.
func newStoredHarness(t *testing.T) (*csHarness, *pgconfig.Source) {
	t.Helper()
	return storedConfig(t, newCSHarness(t, time.Second))
}

// storedConfig gives h's control plane newStoredHarness's stored configuration.
func storedConfig(t *testing.T, h *csHarness) (*csHarness, *pgconfig.Source) {
	t.Helper()
	url := migratedtest.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	key, err := pgconfig.ParseKey(strings.Repeat("5a", pgconfig.KeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	store, err := pgconfig.Open(ctx, url, pgconfig.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	h.srv.SetAdminOptions(AdminOptions{Revision: store.Revision, History: store, Rejections: store,
		CheckEngines: func(context.Context, *config.Config) error { return nil }})
	h.srv.MountAdmin(h.cp, store)
	wake := h.e.NewSignal()
	h.e.Go(ctx, "listen", func(ctx context.Context) { _ = store.Listen(ctx, wake.Notify) })
	h.e.Go(ctx, "refresh", func(ctx context.Context) {
		_ = h.srv.RunConfigRefresh(ctx, func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error) {
			return store.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{})
		}, wake, 5*time.Second)
	})
	h.waitFor(func() bool { return h.srv.Current() != nil })
	return h, store
}

func (h *csHarness) put(path, body string, header http.Header) (int, http.Header, adminConfigAnswer, string) {
	h.t.Helper()
	code, hdr, b := h.do(path, csAdminToken, header, "PUT", body)
	var a adminConfigAnswer
	if strings.HasPrefix(b, "{") {
		a = decodeAnswer(h.t, b)
	}
	return code, hdr, a, b
}

// TestAdminConfigPutGuards: an empty body is a 400; an edit removing every cluster or user
// needs ?force=true; If-Match must name the stored revision (412 otherwise); GET's ETag is
// the served revision and a PUT answers once its revision is served.
func TestAdminConfigPutGuards(t *testing.T) {
	h, _ := newStoredHarness(t)
	code, hdr, a, body := h.put(PathAdminConfig, guardYAML, nil)
	if code != 200 || !a.OK || hdr.Get("ETag") != snapshot.ETag(a.Revision) {
		t.Fatalf("first PUT: %d %s", code, body)
	}
	if cur := h.srv.Current(); cur.Revision != a.Revision {
		t.Fatalf("PUT answered before its revision %s was served (%s)", a.Revision, cur.Revision)
	}
	first := a.Revision
	code, getHdr, _ := h.do(PathAdminConfig, csAdminToken, nil, "GET", "")
	if code != 200 || getHdr.Get("ETag") != snapshot.ETag(first) {
		t.Fatalf("GET ETag %q, want the revision %s", getHdr.Get("ETag"), first)
	}

	for _, empty := range []string{"", "  \n", "# only a comment\n", "null", "~\n"} {
		if code, _, _, body := h.put(PathAdminConfig, empty, nil); code != http.StatusBadRequest {
			t.Errorf("PUT %q: %d %s, want 400", empty, code, body)
		}
	}
	for _, wipe := range []struct{ body, path string }{
		{"{}", "clusters"},
		{"settings: {}\n", "clusters"},
		{strings.Split(guardYAML, "settings:")[0], "settings.security.users"},
	} {
		code, _, a, body := h.put(PathAdminConfig, wipe.body, nil)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, "force=true") || a.Errors[0].Path != wipe.path {
			t.Errorf("PUT %q: %d %s, want 422 naming %s and force", wipe.body, code, body, wipe.path)
		}
	}
	if h.srv.Current().Revision != first {
		t.Fatal("a refused PUT changed the served configuration")
	}

	// If-Match: a stale revision is refused, the current one (quoted or not) accepted.
	edited := strings.Replace(guardYAML, "maxRunningQueries: 3", "maxRunningQueries: 4", 1)
	stale := http.Header{"If-Match": {snapshot.ETag("0000000000000000")}}
	if code, _, _, body := h.put(PathAdminConfig, edited, stale); code != http.StatusPreconditionFailed {
		t.Fatalf("stale If-Match: %d %s, want 412", code, body)
	}
	code, _, a, body = h.put(PathAdminConfig, edited, http.Header{"If-Match": {snapshot.ETag(first)}})
	if code != 200 || a.Revision == first {
		t.Fatalf("current If-Match: %d %s", code, body)
	}
	second := a.Revision
	if code, _, _, _ := h.put(PathAdminConfig, guardYAML, http.Header{"If-Match": {snapshot.ETag(first)}}); code != http.StatusPreconditionFailed {
		t.Fatalf("If-Match of the revision before the last edit: %d, want 412", code)
	}

	// With force, the wipe goes through.
	code, _, a, body = h.put(PathAdminConfig+"?force=true", "{}", http.Header{"If-Match": {second}})
	if code != 200 || len(h.srv.Current().Clusters) != 0 {
		t.Fatalf("forced wipe: %d %s", code, body)
	}
	if code, _, _, _ := h.put(PathAdminConfig+"?force=maybe", guardYAML, nil); code != http.StatusBadRequest {
		t.Fatalf("force=maybe: %d, want 400", code)
	}
}

// TestAdminConfigParallelPuts: concurrent PUTs each end 200 or, with If-Match, 412: never 500.
// Without If-Match every one is stored (edits take turns).
func TestAdminConfigParallelPuts(t *testing.T) {
	h, store := newStoredHarness(t)
	if code, _, _, body := h.put(PathAdminConfig, guardYAML, nil); code != 200 {
		t.Fatalf("first PUT: %d %s", code, body)
	}
	cur := h.srv.Current().Revision
	const puts = 8
	for _, ifMatch := range []string{"", cur} {
		codes := make([]int, puts)
		var wg sync.WaitGroup
		for i := range puts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := strings.Replace(guardYAML, "maxRunningQueries: 3", fmt.Sprintf("maxRunningQueries: %d", 10+i), 1)
				var hdr http.Header
				if ifMatch != "" {
					hdr = http.Header{"If-Match": {snapshot.ETag(ifMatch)}}
				}
				codes[i], _, _ = h.do(PathAdminConfig, csAdminToken, hdr, "PUT", body)
			}()
		}
		wg.Wait()
		ok := 0
		for _, c := range codes {
			switch c {
			case 200:
				ok++
			case http.StatusPreconditionFailed, http.StatusConflict:
			default:
				t.Fatalf("If-Match %q: parallel PUT answered %d (%v)", ifMatch, c, codes)
			}
		}
		if ifMatch == "" && ok != puts {
			t.Fatalf("without If-Match every PUT should be stored: %v", codes)
		}
		if ifMatch != "" && ok > 1 {
			t.Fatalf("%d PUTs against one revision were all stored: %v", ok, codes)
		}
	}
	revs, err := store.History(context.Background(), 100)
	if err != nil || len(revs) < puts+1 {
		t.Fatalf("history: %d revisions, %v", len(revs), err)
	}
}

// TestAdminConfigGetHidesSecrets: GET /admin/config shows no password: not the engine's, not
// one inside the endpoint URL or a credential option, not the users' hashes.
func TestAdminConfigGetHidesSecrets(t *testing.T) {
	h, _ := newStoredHarness(t)
	if code, _, _, body := h.put(PathAdminConfig, guardYAML, nil); code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	code, body := h.get(PathAdminConfig, csAdminToken, nil, "", "")
	if code != 200 {
		t.Fatalf("GET: %d %s", code, body)
	}
	for _, secret := range []string{"url-secret-pw", "cred-secret-pw", "option-secret-pw", guardBcrypt, guardNative, "2470C0C06DEE42FD"} {
		if strings.Contains(body, secret) {
			t.Errorf("GET /admin/config shows %q:\n%s", secret, body)
		}
	}
	a := decodeAnswer(t, body)
	c := a.Snapshot.Clusters[0]
	if c.Endpoint != "postgres://app:[redacted]@db.internal:5432/app" || c.Options["applicationName"] != "qf" || c.Credentials.User != "app" {
		t.Fatalf("redaction hid too much or too little: %+v", c)
	}
	if u := a.Snapshot.Settings.Security.Users; len(u) != 2 || u[0].Name != "alice" || u[0].PasswordHash != "[redacted]" {
		t.Fatalf("users: %+v", u)
	}
	if h.srv.Current().Clusters[0].Credentials.Password != "cred-secret-pw" {
		t.Fatal("workers must still get the password")
	}
}

// TestAdminConfigEngineCheck: a configuration whose engines the check refuses is answered 422
// with the cluster named, and nothing is stored or published.
func TestAdminConfigEngineCheck(t *testing.T) {
	h, store := newStoredHarness(t)
	h.srv.SetAdminOptions(AdminOptions{Revision: store.Revision, History: store,
		CheckEngines: func(_ context.Context, cfg *config.Config) error {
			return config.Errors{{Path: "clusters[0].endpoint", Message: "cannot be opened"}}
		}})
	before := h.srv.Current().Revision
	code, _, a, body := h.put(PathAdminConfig, guardYAML, nil)
	if code != http.StatusUnprocessableEntity || a.Errors[0].Path != "clusters[0].endpoint" {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if code, body := h.get(PathAdminConfigCheck, csAdminToken, nil, "POST", guardYAML); code != http.StatusUnprocessableEntity {
		t.Fatalf("check: %d %s", code, body)
	}
	if h.srv.Current().Revision != before {
		t.Fatal("a refused configuration was published")
	}
}

// TestAdminConfigHistoryAndRollback: every stored configuration is listed; rolling back to one
// serves its revision again, under the same force rule as PUT.
func TestAdminConfigHistoryAndRollback(t *testing.T) {
	h, _ := newStoredHarness(t)
	_, _, first, _ := h.put(PathAdminConfig, guardYAML, nil)
	edited := strings.Replace(guardYAML, "maxRunningQueries: 3", "maxRunningQueries: 7", 1)
	_, _, second, _ := h.put(PathAdminConfig, edited, nil)
	if code, _, _, body := h.put(PathAdminConfig+"?force=true", "{}", nil); code != 200 {
		t.Fatalf("forced wipe: %d %s", code, body)
	}
	code, body := h.get(PathAdminConfigHistory, csAdminToken, nil, "", "")
	var hist configHistoryAnswer
	if err := json.Unmarshal([]byte(body), &hist); err != nil || code != 200 || len(hist.Revisions) != 3 {
		t.Fatalf("history: %d %s", code, body)
	}
	if r := hist.Revisions; r[2].Revision != first.Revision || r[1].Revision != second.Revision || r[0].Clusters != 0 || r[2].Users != 2 {
		t.Fatalf("history order or counts: %+v", r)
	}
	code, body = h.get(PathAdminConfigRollback+"?to="+fmt.Sprint(hist.Revisions[2].ID), csAdminToken, nil, "POST", "")
	if code != 200 || h.srv.Current().Revision != first.Revision {
		t.Fatalf("rollback by id: %d %s", code, body)
	}
	if h.srv.Current().Clusters[0].Credentials.Password != "cred-secret-pw" {
		t.Fatal("rollback lost the sealed password")
	}
	code, body = h.get(PathAdminConfigRollback+"?to="+second.Revision, csAdminToken, nil, "POST", "")
	if code != 200 || h.srv.Current().Revision != second.Revision {
		t.Fatalf("rollback by revision: %d %s", code, body)
	}
	empty := hist.Revisions[0].ID
	if code, body := h.get(PathAdminConfigRollback+"?to="+fmt.Sprint(empty), csAdminToken, nil, "POST", ""); code != http.StatusUnprocessableEntity {
		t.Fatalf("rollback to the empty configuration without force: %d %s", code, body)
	}
	if code, _ := h.get(PathAdminConfigRollback+"?to=999999", csAdminToken, nil, "POST", ""); code != http.StatusNotFound {
		t.Fatalf("rollback to an unknown revision: %d", code)
	}
	if code, _ := h.get(PathAdminConfigHistory, csSecret, nil, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("history without the admin token: %d", code)
	}
}

// TestAdminConfigPutWhileAnEarlierApplyRuns: the control plane's own node applies each
// published revision in the publisher (OnChange), opening its engines; while that runs the next
// revision cannot be published. A PUT then answers within adminPublishTimeout that its revision
// is stored but not served yet, and the revision is served once the apply has ended.
func TestAdminConfigPutWhileAnEarlierApplyRuns(t *testing.T) {
	h, _ := newStoredHarness(t)
	applying, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	armed := false
	var mu sync.Mutex
	h.srv.OnChange(func(string) {
		mu.Lock()
		block := armed
		mu.Unlock()
		if block {
			once.Do(func() { close(applying) })
			<-release // an engine that takes long to open
		}
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	mu.Lock()
	armed = true
	mu.Unlock()
	code, _, a, body := h.put(PathAdminConfig, guardYAML, nil)
	if code != 200 || len(a.Warnings) != 0 {
		t.Fatalf("first PUT: %d %s", code, body)
	}
	<-applying
	edited := strings.Replace(guardYAML, "maxRunningQueries: 3", "maxRunningQueries: 4", 1)
	answered := make(chan string, 1)
	go func() {
		code, _, a, body := h.put(PathAdminConfig, edited, nil)
		if code != 200 || a.Revision == "" || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0].Message, "not served within") {
			answered <- fmt.Sprintf("unexpected answer: %d %s", code, body)
			return
		}
		answered <- a.Revision
	}()
	var second string
	select {
	case second = <-answered:
		if strings.HasPrefix(second, "unexpected") {
			t.Fatalf("the second PUT, while the first revision was being applied: %s", second)
		}
	case <-time.After(time.Minute):
		t.Fatal("the PUT did not answer while an earlier configuration was being applied")
	}
	if h.srv.Current().Revision == second {
		t.Fatalf("the second PUT answered %s, already served although the apply still runs", second)
	}
	close(release)
	h.waitFor(func() bool { return h.srv.Current().Revision == second })
}
