package workerapi

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// What a worker sends is held to every bound at its exact value: one byte or one entry more is
// refused, naming the field, and the bound itself is accepted. These bounds are what keep a
// worker that misbehaves from filling the control plane's registry.
func TestRegistrationBounds(t *testing.T) {
	valid := func() RegisterRequest {
		return RegisterRequest{Name: "w1", Version: "1.0"}
	}
	labels := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = "v"
		}
		return m
	}
	frontends := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("f%d", i)
		}
		return out
	}
	endpoints := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("f%d", i)] = "http://h"
		}
		return m
	}
	url := func(n int) string { return "https://" + strings.Repeat("h", n-len("https://")) }
	cases := []struct {
		name  string
		edit  func(*RegisterRequest)
		field string // "" when valid
	}{
		{"name at the bound", func(r *RegisterRequest) { r.Name = strings.Repeat("n", NameLengthMax) }, ""},
		{"name over the bound", func(r *RegisterRequest) { r.Name = strings.Repeat("n", NameLengthMax+1) }, "name"},
		{"name starting with a dash", func(r *RegisterRequest) { r.Name = "-w" }, "name"},
		{"version at the bound", func(r *RegisterRequest) { r.Version = strings.Repeat("v", RevisionLengthMax) }, ""},
		{"version over the bound", func(r *RegisterRequest) { r.Version = strings.Repeat("v", RevisionLengthMax+1) }, "version"},
		{"labels at the bound", func(r *RegisterRequest) { r.Labels = labels(LabelsMax) }, ""},
		{"labels over the bound", func(r *RegisterRequest) { r.Labels = labels(LabelsMax + 1) }, "labels"},
		{"label key at the bound", func(r *RegisterRequest) { r.Labels = map[string]string{strings.Repeat("k", LabelKeyLengthMax): "v"} }, ""},
		{"label key over the bound", func(r *RegisterRequest) { r.Labels = map[string]string{strings.Repeat("k", LabelKeyLengthMax+1): "v"} }, "labels." + strings.Repeat("k", LabelKeyLengthMax+1)},
		{"label value at the bound", func(r *RegisterRequest) { r.Labels = map[string]string{"k": strings.Repeat("v", LabelValueLenMax)} }, ""},
		{"label value over the bound", func(r *RegisterRequest) { r.Labels = map[string]string{"k": strings.Repeat("v", LabelValueLenMax+1)} }, "labels.k"},
		{"the first bad label key is named", func(r *RegisterRequest) { r.Labels = badKeys("v") }, "labels.a ad"},
		{"frontends at the bound", func(r *RegisterRequest) { r.Frontends = frontends(FrontendsMax) }, ""},
		{"frontends over the bound", func(r *RegisterRequest) { r.Frontends = frontends(FrontendsMax + 1) }, "frontends"},
		{"a frontend name at the bound", func(r *RegisterRequest) { r.Frontends = []string{strings.Repeat("f", NameLengthMax)} }, ""},
		{"a frontend name over the bound", func(r *RegisterRequest) { r.Frontends = []string{"pg", strings.Repeat("f", NameLengthMax+1)} }, "frontends[1]"},
		{"endpoints at the bound", func(r *RegisterRequest) { r.Endpoints = endpoints(FrontendsMax) }, ""},
		{"endpoints over the bound", func(r *RegisterRequest) { r.Endpoints = endpoints(FrontendsMax + 1) }, "endpoints"},
		{"an endpoint at the bound", func(r *RegisterRequest) { r.Endpoints = map[string]string{"trino": url(EndpointLengthMax)} }, ""},
		{"an endpoint over the bound", func(r *RegisterRequest) { r.Endpoints = map[string]string{"trino": url(EndpointLengthMax + 1)} }, "endpoints.trino"},
		{"an endpoint of another scheme", func(r *RegisterRequest) { r.Endpoints = map[string]string{"trino": "javascript:alert(1)"} }, "endpoints.trino"},
		{"an endpoint that is only a scheme", func(r *RegisterRequest) { r.Endpoints = map[string]string{"flightsql": "grpc+tls://"} }, "endpoints.flightsql"},
		{"an endpoint key at the bound", func(r *RegisterRequest) {
			r.Endpoints = map[string]string{strings.Repeat("f", NameLengthMax): "http://h"}
		}, ""},
		{"the first bad endpoint key is named", func(r *RegisterRequest) { r.Endpoints = badKeys("http://h") }, "endpoints.a ad"},
		{"an endpoint keyed by no frontend name", func(r *RegisterRequest) { r.Endpoints = map[string]string{"no such": "http://h"} }, "endpoints.no such"},
		{"every scheme a peer can use", func(r *RegisterRequest) {
			r.Endpoints = map[string]string{"a": "http://h", "b": "https://h", "c": "grpc+tcp://h:1", "d": "grpc+tls://h:1"}
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := valid()
			c.edit(&r)
			checkField(t, r.Validate(), c.field)
		})
	}
}

func TestHeartbeatBounds(t *testing.T) {
	valid := func() Heartbeat {
		return Heartbeat{Seq: 1, SentAt: time.Unix(1, 0), Health: HealthStatus{State: HealthHealthy}}
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name  string
		edit  func(*Heartbeat)
		field string
	}{
		{"unhealthy is a state", func(h *Heartbeat) { h.Health.State = HealthUnhealthy }, ""},
		{"revision at the bound", func(h *Heartbeat) { h.Revision.Active = long(RevisionLengthMax) }, ""},
		{"revision over the bound", func(h *Heartbeat) { h.Revision.Active = long(RevisionLengthMax + 1) }, "revision.active"},
		{"last seen over the bound", func(h *Heartbeat) { h.Revision.LastSeen = long(RevisionLengthMax + 1) }, "revision.lastSeen"},
		{"config source over the bound", func(h *Heartbeat) { h.Config.Source = long(RevisionLengthMax + 1) }, "config.source"},
		{"sync error at the bound", func(h *Heartbeat) { h.Config.LastSyncError = long(ShortTextLengthMax) }, ""},
		{"sync error over the bound", func(h *Heartbeat) { h.Config.LastSyncError = long(ShortTextLengthMax + 1) }, "config.lastSyncError"},
		{"more consecutive failures than failures", func(h *Heartbeat) { h.Config.SyncFailures, h.Config.ConsecutiveSyncFailures = 2, 3 }, "config.consecutiveSyncFailures"},
		{"as many consecutive failures as failures", func(h *Heartbeat) { h.Config.SyncFailures, h.Config.ConsecutiveSyncFailures = 3, 3 }, ""},
		{"staleness NaN", func(h *Heartbeat) { h.Config.StalenessSecs = math.NaN() }, "config.stalenessSecs"},
		{"staleness infinite", func(h *Heartbeat) { h.Config.StalenessSecs = math.Inf(1) }, "config.stalenessSecs"},
		{"staleness zero", func(h *Heartbeat) { h.Config.StalenessSecs = 0 }, ""},
		{"policy over the bound", func(h *Heartbeat) { h.Coordination.Policy = long(RevisionLengthMax + 1) }, "coordination.policy"},
		{"mode over the bound", func(h *Heartbeat) { h.Coordination.Mode = long(RevisionLengthMax + 1) }, "coordination.mode"},
		{"too many frontends", func(h *Heartbeat) { h.Frontends = make([]string, FrontendsMax+1) }, "frontends"},
		{"loop lag negative", func(h *Heartbeat) { h.Health.LoopLagSeconds = -0.1 }, "health.loopLagSeconds"},
		{"no health state", func(h *Heartbeat) { h.Health.State = "" }, "health.state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := valid()
			c.edit(&h)
			checkField(t, h.Validate(), c.field)
		})
	}
}

// Sanitize brings every free-form part inside its bound, so the sender's own heartbeat always
// validates, whatever its subsystems put in it.
func TestSanitizeBringsEveryTextInside(t *testing.T) {
	long := strings.Repeat("é", ShortTextLengthMax)
	h := Heartbeat{Seq: 1, SentAt: time.Unix(1, 0), Health: HealthStatus{State: HealthHealthy, LoopLagSeconds: math.Inf(-1)},
		Revision:     RevisionStatus{Active: long, LastSeen: long},
		Config:       ConfigStatus{Source: long, LastSyncError: long, StalenessSecs: math.NaN(), SyncFailures: 1, ConsecutiveSyncFailures: 5},
		Coordination: CoordinationStatus{Policy: long, Mode: long}}
	h.Sanitize()
	if err := h.Validate(); err != nil {
		t.Fatalf("sanitized heartbeat: %v", err)
	}
	for _, s := range []string{h.Revision.Active, h.Revision.LastSeen, h.Config.Source, h.Coordination.Policy, h.Coordination.Mode} {
		if len(s) > RevisionLengthMax || len(s) < RevisionLengthMax-4 || !strings.HasSuffix(s, "…") {
			t.Fatalf("a text of %d bytes after Sanitize: %q", len(s), s)
		}
	}
}

// badKeys are many bad keys, so that a map's order would name another than the first.
func badKeys(value string) map[string]string {
	m := map[string]string{"ok": value}
	for c := 'a'; c <= 'o'; c++ { // 16 keys in all: within every count bound
		m[string(c)+" ad"] = value
	}
	return m
}

func TestSanitizeKeepsWhatFits(t *testing.T) {
	fits := strings.Repeat("r", RevisionLengthMax)
	h := Heartbeat{Revision: RevisionStatus{Active: fits}, Config: ConfigStatus{StalenessSecs: 2.5}}
	h.Sanitize()
	if h.Revision.Active != fits || h.Config.StalenessSecs != 2.5 {
		t.Fatalf("Sanitize changed what fits: %d bytes, staleness %v", len(h.Revision.Active), h.Config.StalenessSecs)
	}
}

func checkField(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != field {
		t.Fatalf("got %v, want an error naming %q", err, field)
	}
}

func TestReadBody(t *testing.T) {
	read := func(body io.Reader, ctype string, length int64) ([]byte, error) {
		r := httptest.NewRequest(http.MethodPost, "/", body)
		r.Header.Set("Content-Type", ctype)
		r.ContentLength = length
		return ReadBody(r, MediaHeartbeat)
	}
	for _, n := range []int{0, 1, 4096, BodyBytesMax} {
		for _, hint := range []int64{-1, 0, int64(n), int64(n) / 2, BodyBytesMax * 4} {
			data, err := read(strings.NewReader(strings.Repeat("x", n)), MediaHeartbeat+"; charset=utf-8", hint)
			if err != nil || len(data) != n {
				t.Fatalf("%d bytes, hint %d: %d bytes, %v", n, hint, len(data), err)
			}
		}
	}
	if _, err := read(strings.NewReader(strings.Repeat("x", BodyBytesMax+1)), MediaHeartbeat, BodyBytesMax+1); err == nil || !strings.Contains(err.Error(), "body larger than") {
		t.Fatalf("a body over the bound: %v", err)
	}
	if _, err := read(iotest.ErrReader(errors.New("reset")), MediaHeartbeat, 10); err == nil || !strings.Contains(err.Error(), "reading body") {
		t.Fatalf("a body that breaks: %v", err)
	}
	if _, err := read(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(errors.New("reset"))), MediaHeartbeat, -1); err == nil {
		t.Fatal("a body that breaks, without a length: no error")
	}
	if _, err := DecodeHeartbeat([]byte(strings.Repeat(" ", BodyBytesMax+1))); err == nil || err.Error() != fmt.Sprintf("body larger than %d bytes", BodyBytesMax) {
		t.Fatalf("DecodeHeartbeat over the bound: %v", err)
	}
	var mt *MediaTypeError
	if _, err := read(strings.NewReader("{}"), "application/json", 2); !errors.As(err, &mt) {
		t.Fatalf("a wrong media type: %v", err)
	}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"seq":1} x`))
	r.Header.Set("Content-Type", MediaHeartbeat)
	var hb Heartbeat
	if err := ReadJSON(r, MediaHeartbeat, &hb); err == nil {
		t.Fatal("ReadJSON took trailing data")
	}
	r = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`))
	if err := ReadJSON(r, MediaHeartbeat, &hb); !errors.As(err, &mt) {
		t.Fatalf("ReadJSON of a body without its media type: %v, want a media type error (415)", err)
	}
	// encoding/json would read "\xff" and "\xfe" alike (U+FFFD): such a body is refused, not
	// passed on.
	data, err := read(strings.NewReader("{\"name\":\"w\xff\"}"), MediaHeartbeat, -1)
	var fe *FieldError
	if !errors.As(err, &fe) || data != nil || !strings.Contains(err.Error(), "not valid UTF-8 (byte 10)") {
		t.Fatalf("a body of invalid UTF-8: %q, %v; want it refused naming the byte", data, err)
	}
}

func TestErrorAnswers(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteBadRequest(rec, errors.New("plain"))
	if rec.Code != 400 || rec.Header().Get("Content-Type") != MediaError || !strings.Contains(rec.Body.String(), "plain") {
		t.Fatalf("a plain error: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	for body, want := range map[string]ErrorBody{
		`{"error":"gone","field":"seq"}`: {Error: "gone", Field: "seq"},
		`not json`:                       {Error: http.StatusText(503)},
		`{"field":"seq"}`:                {Error: http.StatusText(503), Field: "seq"},
	} {
		got := ReadError(&http.Response{StatusCode: 503, Body: io.NopCloser(strings.NewReader(body))})
		if got != want {
			t.Errorf("ReadError(%s) = %+v, want %+v", body, got, want)
		}
	}
	if s := (&StatusError{Status: 400, Body: ErrorBody{Error: "bad", Field: "seq"}}).Error(); s != "HTTP 400: bad (field seq)" {
		t.Errorf("StatusError with a field: %q", s)
	}
	if s := (&StatusError{Status: 401, Body: ErrorBody{Error: "who"}}).Error(); s != "HTTP 401: who" {
		t.Errorf("StatusError: %q", s)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	SetBearer(req, "tok")
	if tok, ok := BearerToken(req); !ok || tok != "tok" {
		t.Errorf("SetBearer then BearerToken: %q %v", tok, ok)
	}
}
