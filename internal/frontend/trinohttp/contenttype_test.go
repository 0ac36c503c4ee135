package trinohttp

import (
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// Every page is application/json, once, under this server's own HTTP server (where the type
// goes out without a header field: httplite.SetContentType) and under net/http's: a POST
// answered whole, one answered QUEUED, and the GETs of its pages.
func TestPagesAreJSON(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		ts := startServerOn(t, frontendtest.NewBackend(countingEngine(1)), Options{PostAnswerClients: []string{"mine/"}}, netHTTP)
		check := func(what string, ct []string) {
			t.Helper()
			if len(ct) != 1 || ct[0] != "application/json" {
				t.Fatalf("net/http %v, %s: Content-Type %q", netHTTP, what, ct)
			}
		}
		resp, qr := postAs(t, ts.addr, "mine/1", "SELECT 1")
		check("a POST answered whole", resp.Header["Content-Type"])
		if qr.NextURI != "" {
			t.Fatalf("net/http %v: SELECT 1 not answered whole: %+v", netHTTP, qr)
		}
		resp, qr = postAs(t, ts.addr, "other/1", "SELECT 1")
		check("a POST answered QUEUED", resp.Header["Content-Type"])
		for qr.NextURI != "" {
			resp, qr = get(t, qr.NextURI)
			check("a page", resp.Header["Content-Type"])
		}
	}
}
