package workerapi

import (
	"net/http"
	"testing"

	"pgregory.net/rapid"
)

// SetContentType sets what Header.Set sets, for this package's media types and any other; and
// the value of one of this package's media types is one slice, shared by every header.
func TestSetContentTypeIsSet(t *testing.T) {
	ours := []string{MediaHeartbeatAck, MediaError, MediaWorkerRegistered, MediaWorkerList, MediaWorkerInfo,
		MediaWorkerStatus, MediaWorkerPeers, MediaHeartbeat, MediaWorkerRegister}
	rapid.Check(t, func(t *rapid.T) {
		mt := rapid.OneOf(rapid.SampledFrom(ours), rapid.StringMatching(`[a-z/+.;= -]{0,30}`)).Draw(t, "mediaType")
		want, got := http.Header{}, http.Header{}
		want.Set("Content-Type", mt)
		SetContentType(got, mt)
		if len(got) != 1 || len(got["Content-Type"]) != 1 || got.Get("Content-Type") != want.Get("Content-Type") {
			t.Fatalf("SetContentType(%q) = %v, Header.Set %v", mt, got, want)
		}
	})
	for _, mt := range ours[:7] {
		a, b := http.Header{}, http.Header{}
		SetContentType(a, mt)
		SetContentType(b, mt)
		if &a["Content-Type"][0] != &b["Content-Type"][0] {
			t.Errorf("%s: each header has a value of its own, want one shared", mt)
		}
	}
	rec := &bufferedWriter{h: http.Header{}}
	WriteHeartbeatAck(rec, HeartbeatAck{State: StateHealthy, HeartbeatIntervalSecs: 5})
	if got := rec.h.Get("Content-Type"); got != MediaHeartbeatAck {
		t.Errorf("heartbeat answer's Content-Type %q, want %q", got, MediaHeartbeatAck)
	}
}

// bufferedWriter is the least http.ResponseWriter.
type bufferedWriter struct {
	h    http.Header
	code int
	body []byte
}

func (w *bufferedWriter) Header() http.Header  { return w.h }
func (w *bufferedWriter) WriteHeader(code int) { w.code = code }
func (w *bufferedWriter) Write(p []byte) (int, error) {
	w.body = append(w.body, p...)
	return len(p), nil
}
