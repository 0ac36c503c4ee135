package trinohttp

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestNextURIOfAnotherUser: Alice's nextUri, learnt by Bob (a log, a shared notebook), is of
// no use to Bob's client: his GET and DELETE of it, with his credentials or naming himself,
// get Trino's 404 for an unknown query, and Alice's query goes on and answers her its rows.
func TestNextURIOfAnotherUser(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{PollWait: 50 * time.Millisecond,
		Auth: passwords{"alice": "pw-a", "bob": "pw-b"}})
	asUser := func(method, uri, user, password string) *http.Request {
		req, _ := http.NewRequest(method, uri, strings.NewReader("SELECT SLEEP(1) AS s, 42 AS v"))
		if password != "" {
			req.SetBasicAuth(user, password)
		} else {
			req.Header.Set("X-Trino-User", user)
		}
		return req
	}
	resp, qr := do(t, asUser(http.MethodPost, "http://"+ts.addr+"/v1/statement", "alice", "pw-a"))
	if resp.StatusCode != http.StatusOK || qr.NextURI == "" {
		t.Fatalf("alice's POST: %d %+v", resp.StatusCode, qr)
	}
	for _, bob := range []*http.Request{
		asUser(http.MethodGet, qr.NextURI, "bob", "pw-b"),
		asUser(http.MethodGet, qr.NextURI, "bob", ""),
		asUser(http.MethodDelete, qr.NextURI, "bob", "pw-b"),
		asUser(http.MethodDelete, qr.NextURI, "bob", ""),
	} {
		if resp, got := do(t, bob); resp.StatusCode != http.StatusNotFound {
			t.Errorf("bob's %s of alice's nextUri: %d %+v, want 404", bob.Method, resp.StatusCode, got)
		}
	}
	var data [][]any
	for uri := qr.NextURI; uri != ""; {
		resp, page := do(t, asUser(http.MethodGet, uri, "alice", "pw-a"))
		if resp.StatusCode != http.StatusOK || page.Error != nil {
			t.Fatalf("alice's GET: %d %+v", resp.StatusCode, page.Error)
		}
		data = append(data, page.Data...)
		uri = page.NextURI
	}
	if fmt.Sprint(data) != "[[0 42]]" {
		t.Fatalf("alice's rows: %v", data)
	}
}
