package trinohttp

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestLoggedInConnectionsLeaveTheSourcesShare: a source's share bounds its connections before
// login only. One source (a sidecar's application, all on loopback) keeps more connections
// than its share (4 of 8) open, each after a query that logged in, and each gets in.
func TestLoggedInConnectionsLeaveTheSourcesShare(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{ConnectionsMax: 8}})
	for i := range 7 {
		tr := &http.Transport{DialContext: frontendtest.DialerFrom("127.0.0.1").DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader("SELECT 1"))
		req.Header.Set("X-Trino-User", "carol")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // kept open and idle in tr's pool
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d of one source, the earlier ones logged in and open: %s", i+1, resp.Status)
		}
	}
}
