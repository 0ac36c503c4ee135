package workerapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const validHeartbeat = `{"seq":3,"sentAt":"2026-01-02T03:04:05Z","revision":{"active":"r1","lastSeen":"r2"},
"config":{"source":"controlPlane","stalenessSecs":1.5,"syncFailures":2,"consecutiveSyncFailures":1},
"coordination":{"policy":"remote"},"history":{"sent":10,"dropped":1,"pending":2},
"frontends":["postgres","mysql"],"health":{"state":"healthy","loopLagSeconds":0.01}}`

func TestDecodeHeartbeatAcceptsFullBody(t *testing.T) {
	hb, err := DecodeHeartbeat([]byte(validHeartbeat))
	if err != nil {
		t.Fatal(err)
	}
	if hb.Seq != 3 || hb.Revision.LastSeen != "r2" || hb.History.Pending != 2 || hb.Health.State != HealthHealthy ||
		hb.Config.SyncFailures != 2 || len(hb.Frontends) != 2 {
		t.Fatalf("decoded %+v", hb)
	}
}

func TestDecodeHeartbeatNamesTheBadField(t *testing.T) {
	cases := []struct {
		name, body, field string
	}{
		{"unknown top-level field", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy"},"token":"x"}`, "token"},
		{"unknown nested field", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy","mood":"ok"}}`, "mood"},
		{"missing seq", `{"sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy"}}`, "seq"},
		{"missing sentAt", `{"seq":1,"health":{"state":"healthy"}}`, "sentAt"},
		{"missing health", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z"}`, "health.state"},
		{"bad health state", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"meh"}}`, "health.state"},
		{"seq wrong type", `{"seq":"one","sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy"}}`, "seq"},
		{"negative seq", `{"seq":-1,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy"}}`, "seq"},
		{"bad time", `{"seq":1,"sentAt":"yesterday","health":{"state":"healthy"}}`, "sentAt"},
		{"bad nested time", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","config":{"lastSyncAt":"soon"},"health":{"state":"healthy"}}`, "config.lastSyncAt"},
		{"nested wrong type", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","history":{"sent":"many"},"health":{"state":"healthy"}}`, "history.sent"},
		{"negative staleness", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","config":{"stalenessSecs":-1},"health":{"state":"healthy"}}`, "config.stalenessSecs"},
		{"empty frontend", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","frontends":[""],"health":{"state":"healthy"}}`, "frontends[0]"},
		{"key in the wrong case", `{"SEQ":1,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy"}}`, "SEQ"},
		{"nested key in the wrong case", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","health":{"State":"healthy"}}`, "health.State"},
		{"a key again in another case", `{"seq":1,"Seq":2,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy"}}`, "Seq"},
		{"a key folded by Unicode", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","health":{"ſtate":"healthy"}}`, "health.ſtate"},
		{"not an object", `[1,2]`, ""},
		{"trailing data", `{"seq":1,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy"}} {}`, ""},
		{"truncated", `{"seq":1,`, ""},
		{"empty", ``, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeHeartbeat([]byte(c.body))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want *FieldError, got %v", err)
			}
			if fe.Field != c.field {
				t.Fatalf("field = %q, want %q (%v)", fe.Field, c.field, fe)
			}
		})
	}
}

func TestDecodeRegisterNamesTheBadField(t *testing.T) {
	cases := []struct{ body, field string }{
		{`{"version":"1"}`, "name"},
		{`{"name":"w 1","version":"1"}`, "name"},
		{`{"name":"w1"}`, "version"},
		{`{"name":"w1","version":"1","labels":{"zone":5}}`, "labels"},
		{`{"name":"w1","version":"1","labels":{"-bad":"x"}}`, "labels.-bad"},
		{`{"name":"w1","version":"1","frontends":["pg","no such"]}`, "frontends[1]"},
		{`{"name":"w1","version":"1","secret":"x"}`, "secret"},
	}
	for _, c := range cases {
		_, err := DecodeRegister([]byte(c.body))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: got %v, want field %q", c.body, err, c.field)
		}
	}
	req, err := DecodeRegister([]byte(`{"name":"w-1.a","version":"0.1","labels":{"zone":"eu","Zone":"us"},"frontends":["postgres"]}`))
	if err != nil || req.Labels["zone"] != "eu" || req.Labels["Zone"] != "us" { // label keys are data, not fields
		t.Fatalf("valid registration: %+v %v", req, err)
	}
}

func TestWriteBadRequestStatuses(t *testing.T) {
	rec := httptest.NewRecorder()
	_, err := ReadBody(httptest.NewRequest("POST", "/", strings.NewReader("{}")), MediaHeartbeat)
	WriteBadRequest(rec, err)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Fatalf("missing content type: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	WriteBadRequest(rec, &FieldError{Field: "seq", Msg: "required"})
	var body ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 400 || body.Field != "seq" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestTokenEqual(t *testing.T) {
	if !TokenEqual("abc", "abc") || TokenEqual("abc", "abd") || TokenEqual("", "") || TokenEqual("abc", "ab") {
		t.Fatal("TokenEqual")
	}
}

func TestBearerToken(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	if _, ok := BearerToken(r); ok {
		t.Fatal("no header")
	}
	r.Header.Set("Authorization", "bearer  tok ")
	if tok, ok := BearerToken(r); !ok || tok != "tok" {
		t.Fatalf("%q %v", tok, ok)
	}
	r.Header.Set("Authorization", "Basic abc")
	if _, ok := BearerToken(r); ok {
		t.Fatal("basic accepted")
	}
}

func TestHeartbeatRoundTrip(t *testing.T) {
	hb := Heartbeat{Seq: 7, SentAt: time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC), Health: HealthStatus{State: HealthUnhealthy, LoopLagSeconds: 0.4}}
	data, _ := json.Marshal(hb)
	got, err := DecodeHeartbeat(data)
	if err != nil || !got.SentAt.Equal(hb.SentAt) || got.Health != hb.Health {
		t.Fatalf("%+v %v", got, err)
	}
}

// The quick key check answers "exact" only where the key walk would; where it cannot tell (a map's
// keys, two names that differ only in case) it leaves the answer to the walk.
func TestQuickKeyCheckAgreesWithTheWalk(t *testing.T) {
	type inner struct {
		State string `json:"state"`
	}
	type collides struct {
		Health inner  `json:"health"`
		Other  string `json:"State"`
	}
	type mapped struct {
		Labels map[string]string `json:"labels"`
		Name   string            `json:"name"`
	}
	for _, c := range []struct {
		body string
		v    any
		want string
	}{
		{`{"health":{"state":"x"},"State":"y"}`, &collides{}, ""},
		{`{"health":{"State":"x"}}`, &collides{}, "health.State"},
		{`{"labels":{"Name":"x"},"name":"y"}`, &mapped{}, ""},
		{`{"labels":{"name":"x"},"Name":"y"}`, &mapped{}, "Name"},
		{`{"labels":{},"n\u0061me":"y"}`, &mapped{}, ""},
		{`{"labels":{},"N\u0061me":"y"}`, &mapped{}, "Name"},
	} {
		err := decodeStrict([]byte(c.body), c.v)
		got := ""
		if fe, ok := err.(*FieldError); ok {
			got = fe.Field
		} else if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if got != c.want {
			t.Errorf("%s: bad field %q, want %q", c.body, got, c.want)
		}
	}
}
