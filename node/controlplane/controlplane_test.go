package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/workerapi"
)

const (
	secret     = "shared-worker-secret-123"
	adminToken = "admin-token-456"
)

var testConfig = Config{
	WorkerSecret: secret, AdminToken: adminToken,
	HeartbeatInterval: 10 * time.Second, StaleAfter: 30 * time.Second, EvictGrace: 60 * time.Second,
}

type harness struct {
	t     testing.TB
	e     *manualEnv
	store *registry.Memory
	cp    *ControlPlane
}

func newHarness(t *testing.T, store *registry.Memory, e *manualEnv) *harness {
	t.Helper()
	if store == nil {
		store = registry.NewMemory()
	}
	if e == nil {
		e = newManualEnv()
	}
	cp := New(e, testConfig, store)
	if err := cp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, e: e, store: store, cp: cp}
}

func (h *harness) do(method, path, token, mediaType, body string) (int, []byte) {
	h.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		workerapi.SetBearer(req, token)
	}
	if mediaType != "" {
		req.Header.Set("Content-Type", mediaType)
	}
	rec := httptest.NewRecorder()
	h.cp.Handler().ServeHTTP(rec, req)
	data, _ := io.ReadAll(rec.Body)
	return rec.Code, data
}

func (h *harness) register(name string) string {
	h.t.Helper()
	code, body := h.do("POST", workerapi.PathRegister, secret, workerapi.MediaWorkerRegister,
		fmt.Sprintf(`{"name":%q,"version":"1.0","labels":{"zone":"eu"},"frontends":["postgres"]}`, name))
	if code != 200 {
		h.t.Fatalf("register %s: %d %s", name, code, body)
	}
	var resp workerapi.RegisterResponse
	if err := json.Unmarshal(body, &resp); err != nil || resp.Token == "" || resp.Name != name {
		h.t.Fatalf("register answer %s: %v", body, err)
	}
	return resp.Token
}

func (h *harness) beat(token string, seq int) int {
	h.t.Helper()
	body := fmt.Sprintf(`{"seq":%d,"sentAt":%q,"revision":{"active":"rev-a"},"health":{"state":"healthy"}}`,
		seq, h.e.Now().Format(time.RFC3339Nano))
	code, _ := h.do("POST", workerapi.PathHeartbeat, token, workerapi.MediaHeartbeat, body)
	return code
}

func (h *harness) state(name string) workerapi.WorkerInfo {
	h.t.Helper()
	wi, ok := h.cp.Worker(name)
	if !ok {
		h.t.Fatalf("no worker %s", name)
	}
	return wi
}

func TestRegisterAndHeartbeat(t *testing.T) {
	h := newHarness(t, nil, nil)
	tok := h.register("w1")
	if tok == secret || !strings.HasPrefix(tok, "qfw_") {
		t.Fatalf("token %q", tok)
	}
	if code := h.beat(tok, 1); code != 200 {
		t.Fatalf("heartbeat: %d", code)
	}
	wi := h.state("w1")
	if !wi.Online || wi.State != workerapi.StateHealthy || wi.Revision != "rev-a" || wi.Labels["zone"] != "eu" {
		t.Fatalf("%+v", wi)
	}
	if code := h.beat(secret, 2); code != 401 {
		t.Fatalf("heartbeat with the shared secret: %d, want 401", code)
	}
}

func TestBadInputNamesTheField(t *testing.T) {
	h := newHarness(t, nil, nil)
	tok := h.register("w1")
	cases := []struct {
		path, token, media, body string
		code                     int
		field                    string
	}{
		{workerapi.PathRegister, "wrong", workerapi.MediaWorkerRegister, `{"name":"a","version":"1"}`, 401, "Authorization"},
		{workerapi.PathRegister, "", workerapi.MediaWorkerRegister, `{"name":"a","version":"1"}`, 401, "Authorization"},
		{workerapi.PathRegister, secret, workerapi.MediaWorkerRegister, `{"version":"1"}`, 400, "name"},
		{workerapi.PathRegister, secret, workerapi.MediaWorkerRegister, `{"name":"a","version":"1","extra":1}`, 400, "extra"},
		{workerapi.PathRegister, secret, "application/json", `{"name":"a","version":"1"}`, 415, "Content-Type"},
		{workerapi.PathHeartbeat, tok, workerapi.MediaHeartbeat, `{"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy"}}`, 400, "seq"},
		{workerapi.PathHeartbeat, tok, workerapi.MediaHeartbeat, `{"seq":1,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"fine"}}`, 400, "health.state"},
		{workerapi.PathHeartbeat, tok, workerapi.MediaHeartbeat, `{"seq":1,"sentAt":"2026-01-01T00:00:00Z","health":{"state":"healthy"},"x":{}}`, 400, "x"},
		{workerapi.PathHeartbeat, "qfw_forged", workerapi.MediaHeartbeat, `{}`, 401, "Authorization"},
	}
	for _, c := range cases {
		code, body := h.do("POST", c.path, c.token, c.media, c.body)
		var eb workerapi.ErrorBody
		if err := json.Unmarshal(body, &eb); err != nil || code != c.code || eb.Field != c.field || eb.Error == "" {
			t.Errorf("%s %s: %d %s, want %d field %q", c.path, c.body, code, body, c.code, c.field)
		}
	}
}

func TestNewerRegistrationWins(t *testing.T) {
	h := newHarness(t, nil, nil)
	old := h.register("w1")
	h.e.Advance(time.Second)
	newer := h.register("w1")
	if code := h.beat(old, 1); code != 401 {
		t.Fatalf("superseded token: %d, want 401", code)
	}
	if code := h.beat(newer, 1); code != 200 {
		t.Fatalf("newer token: %d", code)
	}
	logs := h.e.logs.String()
	if !strings.Contains(logs, "registered again under the same name") || !strings.Contains(logs, "worker=w1") {
		t.Fatalf("supersede not logged:\n%s", logs)
	}
	for _, s := range []string{secret, old, newer} {
		if strings.Contains(logs, s) {
			t.Fatalf("a credential reached the log:\n%s", logs)
		}
	}
}

func TestReaperStaleEvictRecover(t *testing.T) {
	h := newHarness(t, nil, nil)
	ctx := context.Background()
	var evictedNames []string
	h.cp.OnEvict(func(ctx context.Context, w workerapi.WorkerInfo) { evictedNames = append(evictedNames, w.Name) })
	a, b := h.register("a"), h.register("b")

	h.cp.Tick(ctx, h.e.Advance(29*time.Second))
	if h.state("a").State != workerapi.StateHealthy {
		t.Fatal("stale before the timeout")
	}
	h.beat(b, 1)
	h.cp.Tick(ctx, h.e.Advance(time.Second))
	if s := h.state("a"); s.State != workerapi.StateStale || !s.Online || len(s.Warnings) == 0 {
		t.Fatalf("a after 30s of silence: %+v", s)
	}
	if code := h.beat(a, 1); code != 200 || h.state("a").State != workerapi.StateHealthy {
		t.Fatalf("heartbeat inside the grace did not recover a: %d %s", code, h.state("a").State)
	}
	// Now b goes silent for good: stale at +30s after its beat, evicted a grace later.
	for i := 0; i < 10; i++ {
		h.cp.Tick(ctx, h.e.Advance(10*time.Second))
		h.beat(a, 2+i)
	}
	sb := h.state("b")
	if sb.Online || sb.State != workerapi.StateEvicted {
		t.Fatalf("b after 100s of silence: %+v", sb)
	}
	if h.state("a").State != workerapi.StateHealthy {
		t.Fatal("a, beating, was not kept healthy")
	}
	if len(evictedNames) != 1 || evictedNames[0] != "b" {
		t.Fatalf("OnEvict calls: %v", evictedNames)
	}
	if code := h.beat(b, 2); code != 401 {
		t.Fatalf("evicted token: %d, want 401", code)
	}
	nb := h.register("b")
	if code := h.beat(nb, 1); code != 200 || h.state("b").State != workerapi.StateHealthy {
		t.Fatal("re-registration after eviction")
	}
}

func TestRestartGivesEveryoneAFreshWindow(t *testing.T) {
	store := registry.NewMemory()
	first := newHarness(t, store, nil)
	ctx := context.Background()
	ta := first.register("a")
	first.register("b")
	first.beat(ta, 1)
	first.cp.Tick(ctx, first.e.Advance(40*time.Second)) // both stale
	if err := first.cp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The control plane is down for ten minutes, far past timeout and grace.
	e := newManualEnv()
	e.now = first.e.Now().Add(10 * time.Minute)
	second := newHarness(t, store, e)
	for _, name := range []string{"a", "b"} {
		second.cp.Tick(ctx, second.e.Now())
		if s := second.state(name); !s.Online || s.State != workerapi.StateHealthy {
			t.Fatalf("%s right after restart: %+v", name, s)
		}
	}
	if code := second.beat(ta, 2); code != 200 {
		t.Fatalf("a's token after restart: %d (the token hash is durable)", code)
	}
	second.cp.Tick(ctx, second.e.Advance(30*time.Second))
	if second.state("b").State != workerapi.StateStale || second.state("a").State != workerapi.StateStale {
		t.Fatal("the fresh window did not end after StaleAfter")
	}
}

func TestHeartbeatsAreWrittenInBatches(t *testing.T) {
	h := newHarness(t, nil, nil)
	ctx := context.Background()
	tokens := []string{h.register("a"), h.register("b"), h.register("c")}
	if err := h.cp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before := h.store.Batches()
	for i := 1; i <= 20; i++ {
		for _, tok := range tokens {
			if h.beat(tok, i) != 200 {
				t.Fatal("heartbeat")
			}
		}
	}
	if h.store.Batches() != before {
		t.Fatal("a heartbeat wrote to the store by itself")
	}
	if err := h.cp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.store.Batches() - before; got != 1 {
		t.Fatalf("60 heartbeats took %d writes, want 1 batch", got)
	}
	rec, err := h.store.Get(ctx, "b")
	if err != nil || rec.Heartbeat == nil || rec.Heartbeat.Seq != 20 {
		t.Fatalf("stored record: %+v %v", rec, err)
	}
	if rec.TokenHash == "" || strings.Contains(fmt.Sprintf("%+v", rec), tokens[1]) {
		t.Fatal("the store must keep the token's hash, never the token")
	}
}

func TestAdminWorkers(t *testing.T) {
	h := newHarness(t, nil, nil)
	tok := h.register("w1")
	h.beat(tok, 1)
	if code, _ := h.do("GET", workerapi.PathAdminWorkers, secret, "", ""); code != 401 {
		t.Fatalf("admin with the worker secret: %d", code)
	}
	if code, _ := h.do("GET", workerapi.PathAdminWorkers, tok, "", ""); code != 401 {
		t.Fatalf("admin with a session token: %d", code)
	}
	h.cp.SetCurrentRevision("rev-b")
	code, body := h.do("GET", workerapi.PathAdminWorkers, adminToken, "", "")
	var list []map[string]any
	if err := json.Unmarshal(body, &list); err != nil || code != 200 || len(list) != 1 {
		t.Fatalf("%d %s", code, body)
	}
	w := list[0]
	for _, k := range []string{"name", "online", "state", "lastHeartbeat", "labels", "revision", "current", "warnings"} {
		if _, ok := w[k]; !ok {
			t.Errorf("field %s missing in %s", k, body)
		}
	}
	if w["current"] != false || !strings.Contains(fmt.Sprint(w["warnings"]), "rev-b") {
		t.Fatalf("revision rev-a against current rev-b: %s", body)
	}
	h.cp.SetCurrentRevision("rev-a")
	if !h.state("w1").Current {
		t.Fatal("current after SetCurrentRevision(rev-a)")
	}
	if bytes.Contains(body, []byte(tok)) || bytes.Contains(body, []byte(secret)) {
		t.Fatal("credential in the admin answer")
	}
	if code, _ := h.do("GET", workerapi.PathAdminWorkers+"/nobody", adminToken, "", ""); code != 404 {
		t.Fatalf("show unknown: %d", code)
	}
	if code, body := h.do("GET", workerapi.PathAdminWorkers+"/w1", adminToken, "", ""); code != 200 || !bytes.Contains(body, []byte(`"name":"w1"`)) {
		t.Fatalf("show w1: %d %s", code, body)
	}
}

func TestHandleWorkerMountsAuthenticatedEndpoints(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.cp.HandleWorker("GET /worker/config", func(w http.ResponseWriter, r *http.Request, worker string) {
		_, _ = io.WriteString(w, "hello "+worker)
	})
	tok := h.register("w9")
	if code, body := h.do("GET", "/worker/config", tok, "", ""); code != 200 || string(body) != "hello w9" {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := h.do("GET", "/worker/config", secret, "", ""); code != 401 {
		t.Fatalf("shared secret on a worker endpoint: %d", code)
	}
}

// A session endpoint is told the ID of the session whose token the request carries: kept per
// worker between requests, it must follow the worker's token when a registration replaces it.
func TestSessionIDFollowsTheToken(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.cp.HandleSession("GET /worker/session", func(w http.ResponseWriter, r *http.Request, s Session) {
		_, _ = io.WriteString(w, s.Worker+" "+s.ID)
	})
	seen := map[string]bool{}
	for i := range 3 {
		tok := h.register("w7")
		want := "w7 " + sessionID(workerapi.TokenHash(tok))
		for range 2 { // the second request is answered from what the first kept
			if code, body := h.do("GET", "/worker/session", tok, "", ""); code != 200 || string(body) != want {
				t.Fatalf("registration %d: %d %q, want %q", i, code, body, want)
			}
		}
		if seen[want] {
			t.Fatalf("registration %d: session %q again", i, want)
		}
		seen[want] = true
	}
}

// The same when the worker's entry itself takes another token: replica A adopts the newer
// registration the worker made at replica B (replicas.go), and B's token works at A too.
func TestSessionIDFollowsAnAdoptedRegistration(t *testing.T) {
	ctx := context.Background()
	store := registry.NewMemory()
	a := newHarness(t, store, nil)
	e := newManualEnv()
	e.now, e.rnd = a.e.Now(), 0x2545f4914f6cdd1d // its own tokens
	b := newHarness(t, store, e)
	a.cp.HandleSession("GET /worker/session", func(w http.ResponseWriter, r *http.Request, s Session) {
		_, _ = io.WriteString(w, s.ID)
	})
	atA := a.register("moved")
	if code, body := a.do("GET", "/worker/session", atA, "", ""); code != 200 || string(body) != sessionID(workerapi.TokenHash(atA)) {
		t.Fatalf("at A, A's token: %d %q", code, body)
	}
	atB := b.register("moved")
	for i := range 6 { // until A, about to call the worker stale, reads B's registration
		for _, h := range []*harness{a, b} {
			h.e.Advance(10 * time.Second)
		}
		if code := b.beat(atB, i+1); code != 200 {
			t.Fatalf("beat %d at B: %d", i+1, code)
		}
		for _, h := range []*harness{b, a} {
			h.cp.Tick(ctx, h.e.Now())
			if err := h.cp.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := sessionID(workerapi.TokenHash(atB))
	if code, body := a.do("GET", "/worker/session", atB, "", ""); code != 200 || string(body) != want {
		t.Fatalf("at A, B's token: %d %q, want %q (A's session was %q)", code, body, want, sessionID(workerapi.TokenHash(atA)))
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{HeartbeatInterval: 200 * time.Millisecond},
		{StaleAfter: 10 * time.Second},
		{EvictGrace: time.Second},
		{AllowShortTimeouts: true, HeartbeatInterval: time.Second, StaleAfter: 1500 * time.Millisecond},
	}
	for _, c := range bad {
		if err := c.WithDefaults().Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	short := Config{AllowShortTimeouts: true, HeartbeatInterval: 200 * time.Millisecond, StaleAfter: 600 * time.Millisecond, EvictGrace: 600 * time.Millisecond}
	if err := short.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if d := (Config{}).WithDefaults(); d.StaleAfter != 30*time.Second || d.EvictGrace != 60*time.Second {
		t.Fatalf("defaults %+v", d)
	}
}

func TestNameSharedByTwoProcessesIsFlagged(t *testing.T) {
	h := newHarness(t, nil, nil)
	for i := 0; i < 3; i++ {
		h.register("twin")
		h.e.Advance(time.Second)
	}
	if ws := strings.Join(h.state("twin").Warnings, ";"); !strings.Contains(ws, "two processes share this name") {
		t.Fatalf("warnings: %s", ws)
	}
	h.e.Advance(supersedeWarnWindow)
	if ws := strings.Join(h.state("twin").Warnings, ";"); strings.Contains(ws, "share this name") {
		t.Fatalf("old supersedes still warned: %s", ws)
	}
}

func TestFlushesTakeTurns(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.register("a")
	if err := h.cp.acquireFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A flush is running: another one must wait (here: give up when its ctx has ended).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.cp.Flush(ctx); err == nil {
		t.Fatal("a second flush ran while the first held its turn")
	}
	h.cp.releaseFlush()
	if err := h.cp.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Get(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
}

func TestStateGauges(t *testing.T) {
	h := newHarness(t, nil, nil)
	ctx := context.Background()
	h.register("a")
	h.register("b")
	h.register("b") // replaced, not added
	gauge := func(state string) float64 { return testutil.ToFloat64(h.cp.metrics.workers.WithLabelValues(state)) }
	if gauge(workerapi.StateHealthy) != 2 || gauge(workerapi.StateStale) != 0 {
		t.Fatalf("healthy %v stale %v", gauge(workerapi.StateHealthy), gauge(workerapi.StateStale))
	}
	h.cp.Tick(ctx, h.e.Advance(30*time.Second))
	h.cp.Tick(ctx, h.e.Advance(60*time.Second))
	if gauge(workerapi.StateHealthy) != 0 || gauge(workerapi.StateEvicted) != 2 {
		t.Fatalf("healthy %v evicted %v", gauge(workerapi.StateHealthy), gauge(workerapi.StateEvicted))
	}
	h.register("a")
	if gauge(workerapi.StateHealthy) != 1 || gauge(workerapi.StateEvicted) != 1 {
		t.Fatalf("after re-registering a: healthy %v evicted %v", gauge(workerapi.StateHealthy), gauge(workerapi.StateEvicted))
	}
}

func TestEvictedWorkersAreForgottenAfterRetention(t *testing.T) {
	h := newHarness(t, nil, nil)
	ctx := context.Background()
	h.register("gone")
	h.cp.Tick(ctx, h.e.Advance(30*time.Second))
	h.cp.Tick(ctx, h.e.Advance(60*time.Second))
	if err := h.cp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err := h.store.Get(ctx, "gone"); err != nil || rec.State != workerapi.StateEvicted || rec.TokenHash != "" {
		t.Fatalf("stored after eviction: %+v %v", rec, err)
	}
	h.cp.Tick(ctx, h.e.Advance(h.cp.Config().EvictedRetention-time.Second))
	if _, ok := h.cp.Worker("gone"); !ok {
		t.Fatal("forgotten before the retention ended")
	}
	h.cp.Tick(ctx, h.e.Advance(time.Second))
	if _, ok := h.cp.Worker("gone"); ok {
		t.Fatal("still listed after the retention")
	}
	if err := h.cp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Get(ctx, "gone"); err == nil {
		t.Fatal("still in the store after the retention")
	}
}
