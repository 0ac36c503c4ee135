package controlplane

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// TestHistoryEndpointsNeedTheirTokens: ingest wants a worker session, the admin read the admin
// token; neither leaks into the other.
func TestHistoryEndpointsNeedTheirTokens(t *testing.T) {
	cp := New(env.Real(nil), Config{WorkerSecret: "hist-secret-1", AdminToken: "hist-admin-1", AllowShortTimeouts: true}, registry.NewMemory())
	cp.MountHistory(history.NewMemory(10))
	do := func(method, path, token, body string) int {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", history.MediaQueryRecords)
		if token != "" {
			workerapi.SetBearer(req, token)
		}
		rec := httptest.NewRecorder()
		cp.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	batch := `{"batchId":"b","records":[]}`
	if c := do("POST", history.PathWorkerHistory, "", batch); c != http.StatusUnauthorized {
		t.Fatalf("ingest without a session: %d", c)
	}
	if c := do("POST", history.PathWorkerHistory, "hist-admin-1", batch); c != http.StatusUnauthorized {
		t.Fatalf("ingest with the admin token: %d", c)
	}
	if c := do("GET", history.PathAdminQueries, "", ""); c != http.StatusUnauthorized {
		t.Fatalf("admin read without a token: %d", c)
	}
	if c := do("GET", history.PathAdminQueries, "hist-admin-1", ""); c != http.StatusOK {
		t.Fatalf("admin read with the admin token: %d", c)
	}
}
