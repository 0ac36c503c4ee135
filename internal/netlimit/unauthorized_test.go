package netlimit

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUnauthorizedClosesTheConnection: after a 401 the server closes the connection, so a
// client that cannot authenticate holds no connection slot between requests; an authenticated
// keep-alive connection stays open, and streaming answers still flush.
func TestUnauthorizedClosesTheConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ok" {
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, " second")
	}))
	HTTP(srv.Config, 10)
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	c := dial(t, addr)
	defer c.Close()
	br := bufio.NewReader(c)
	request := func(auth string) *http.Response {
		t.Helper()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: "+auth+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Header.Set("X-Body", string(body))
		return resp
	}
	for range 2 { // the authenticated connection is kept alive
		if resp := request("Bearer ok"); resp.StatusCode != 200 || resp.Header.Get("X-Body") != "first second" {
			t.Fatalf("authenticated request: %d %q", resp.StatusCode, resp.Header.Get("X-Body"))
		}
	}
	if resp := request("Bearer wrong"); resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("unauthenticated request: %d, close %v", resp.StatusCode, resp.Close)
	}
	if n, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the connection stayed open after a 401: read %v %v", n, err)
	}
}
