package controlplane

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// BenchmarkHeartbeat measures one heartbeat through the control plane's handler (auth, strict
// decode, lifecycle) with 1000 workers registered.
func BenchmarkHeartbeat(b *testing.B) {
	h := &harness{t: b, e: newManualEnv()}
	h.cp = New(h.e, testConfig, nil)
	tokens := make([]string, 1000)
	for i := range tokens {
		tokens[i] = h.register(fmt.Sprintf("w%04d", i))
	}
	body := fmt.Sprintf(`{"seq":%%d,"sentAt":%q,"revision":{"active":"r1"},"history":{"sent":1},"health":{"state":"healthy"}}`,
		h.e.Now().Format(time.RFC3339Nano))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", workerapi.PathHeartbeat, strings.NewReader(fmt.Sprintf(body, i+1)))
		req.Header.Set("Content-Type", workerapi.MediaHeartbeat)
		workerapi.SetBearer(req, tokens[i%len(tokens)])
		rec := httptest.NewRecorder()
		h.cp.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkReaperTick measures one reaper pass over 10,000 workers.
func BenchmarkReaperTick(b *testing.B) {
	h := &harness{t: b, e: newManualEnv()}
	h.cp = New(h.e, testConfig, nil)
	for i := 0; i < 10000; i++ {
		h.register(fmt.Sprintf("w%05d", i))
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.cp.Tick(ctx, h.e.Now())
	}
}
