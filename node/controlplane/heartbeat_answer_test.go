package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/node/workerapi"
)

// onRead is a request body that calls first before its first byte is read.
type onRead struct {
	first func()
	r     io.Reader
}

func (o *onRead) Read(p []byte) (int, error) {
	if f := o.first; f != nil {
		o.first = nil
		f()
	}
	return o.r.Read(p)
}

// TestHeartbeatAnswers: a heartbeat is answered with the worker's state, the revision it should
// run and the interval to beat at; a stale worker that beats again is told it is healthy and
// its recovery is logged; a heartbeat whose session ends while its body is read (a registration
// under the same name supersedes it) is refused 401, counted and logged, and changes nothing of
// the new session's record.
func TestHeartbeatAnswers(t *testing.T) {
	h := newHarness(t, nil, nil)
	tok := h.register("w1")
	beat := func(tok string, seq int, during func()) (int, string) {
		body := fmt.Sprintf(`{"seq":%d,"sentAt":%q,"revision":{"active":"rev-a"},"health":{"state":"healthy"}}`, seq, h.e.Now().Format(time.RFC3339Nano))
		req := httptest.NewRequest("POST", workerapi.PathHeartbeat, &onRead{first: during, r: strings.NewReader(body)})
		workerapi.SetBearer(req, tok)
		req.Header.Set("Content-Type", workerapi.MediaHeartbeat)
		rec := httptest.NewRecorder()
		h.cp.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	ack := func(code int, body string) workerapi.HeartbeatAck {
		t.Helper()
		var a workerapi.HeartbeatAck
		if code != 200 || json.Unmarshal([]byte(body), &a) != nil {
			t.Fatalf("heartbeat: %d %q, want 200 and an ack", code, body)
		}
		return a
	}
	if a := ack(beat(tok, 1, nil)); a.State != workerapi.StateHealthy || a.HeartbeatIntervalSecs != testConfig.HeartbeatInterval.Seconds() {
		t.Fatalf("the first beat's ack: %+v", a)
	}
	if strings.Contains(h.e.logs.String(), "worker recovered") {
		t.Fatalf("a healthy worker's beat logged as a recovery:\n%s", h.e.logs.String())
	}
	h.cp.Tick(context.Background(), h.e.Advance(testConfig.StaleAfter+time.Second))
	if s := h.state("w1").State; s != workerapi.StateStale {
		t.Fatalf("after %v of silence: %s, want stale", testConfig.StaleAfter, s)
	}
	if a := ack(beat(tok, 2, nil)); a.State != workerapi.StateHealthy {
		t.Fatalf("a stale worker's beat: %+v, want healthy", a)
	}
	if logs := h.e.logs.String(); !strings.Contains(logs, "worker recovered") || !strings.Contains(logs, "worker=w1") {
		t.Fatalf("the recovery not logged:\n%s", logs)
	}

	var newTok string
	code, body := beat(tok, 3, func() { newTok = h.register("w1") })
	if code != 401 || !strings.Contains(body, ErrUnauthorized.Error()) {
		t.Fatalf("a beat of a session superseded while it was read: %d %q, want 401", code, body)
	}
	if n := testutil.ToFloat64(h.cp.metrics.heartbeats.WithLabelValues("unauthorized")); n != 1 {
		t.Fatalf("unauthorized heartbeats counted %v, want 1", n)
	}
	if logs := h.e.logs.String(); !strings.Contains(logs, "worker heartbeats refused") {
		t.Fatalf("the refusal not logged:\n%s", logs)
	}
	if hb := h.state("w1").Heartbeat; hb != nil {
		t.Fatalf("the superseded session's beat was kept for the new one: %+v", hb)
	}
	if a := ack(beat(newTok, 1, nil)); a.State != workerapi.StateHealthy {
		t.Fatalf("the new session's first beat: %+v", a)
	}
}
