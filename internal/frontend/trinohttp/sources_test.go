package trinohttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestOneSourceCannotFillTheListener: a source (127.0.0.1) opening idle sockets up to the
// connection limit holds only its share of it (HTTP logs in per request: a connection
// counts until a request on it logged in); another source's client (127.0.0.2) posts a query meanwhile (before:
// 503 for each request until the first source's sockets closed). The first source's extra
// sockets are answered 503.
func TestOneSourceCannotFillTheListener(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{ConnectionsMax: 8}})
	frontendtest.IdleSockets(t, "127.0.0.1", addr, 8)
	client := &http.Client{Transport: &http.Transport{DialContext: frontendtest.DialerFrom("127.0.0.2").DialContext}}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Trino-User", "carol")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var qr QueryResults
	if err := json.NewDecoder(resp.Body).Decode(&qr); resp.StatusCode != http.StatusOK || err != nil || qr.ID == "" {
		t.Fatalf("another source's query, with the first source's sockets open: %s, %v", resp.Status, err)
	}
	over := &http.Client{Transport: &http.Transport{DialContext: frontendtest.DialerFrom("127.0.0.1").DialContext}}
	if resp, err := over.Get("http://" + addr + "/v1/info"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the first source's next connection: %v, %v; want 503", resp, err)
	}
}
