package trinohttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// FuzzTrinoRequest sends arbitrary methods, paths, headers and bodies to the Trino routes
// (without the panic guard, so a panic fails the fuzz), then follows any nextUri it got. Every
// request must end with an answer; a 200 must carry a QueryResults document.
func FuzzTrinoRequest(f *testing.F) {
	f.Add("POST", "/v1/statement", "alice", "tag1,tag2", "", "SELECT 1")
	f.Add("POST", "/v1/statement", "", "", "", "SELECT 1")
	f.Add("POST", "/v1/statement", "bob", "", "", "")
	f.Add("POST", "/v1/statement", "bob", "", "", "EXECUTE IMMEDIATE 'select ?' USING 1, 'x''y', X'00ff', DOUBLE 'NaN', DATE '2024-01-01'")
	f.Add("POST", "/v1/statement", "bob", "", "", "EXECUTE IMMEDIATE 'unterminated")
	f.Add("GET", "/v1/statement/executing/nope/y00/1", "bob", "", "", "")
	f.Add("GET", "/v1/statement/executing/a/b/-1", "bob", "", "", "")
	f.Add("DELETE", "/v1/statement/queued/a/b/99999999999999999999", "", "", "", "")
	f.Add("GET", "/v1/info", "", "", "", "")
	f.Add("POST", "/v1/statement", "bob", "", "s1=SELECT%20%3F,s2=%ZZ,=", "EXECUTE s1 USING 1")
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{PollWait: time.Millisecond, PageRows: 1})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.routes()
	f.Fuzz(func(t *testing.T, method, path, user, tags, prepared, body string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://proxy.test"+path, strings.NewReader(body))
		if err != nil {
			return // not an HTTP request a server could receive
		}
		req.Header.Set("X-Trino-User", user)
		req.Header.Set("X-Trino-Client-Tags", tags)
		req.Header.Set("X-Trino-Prepared-Statement", prepared)
		next := serve(t, h, req)
		for i := 0; next != "" && i < 10; i++ {
			follow, _ := http.NewRequest(http.MethodGet, next, nil)
			next = serve(t, h, follow)
		}
	})
}

// serve runs one request and returns the nextUri of a 200 answer.
func serve(t *testing.T, h http.Handler, req *http.Request) string {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK || !strings.HasPrefix(req.URL.Path, "/v1/statement") {
		return ""
	}
	var qr QueryResults
	if err := json.NewDecoder(bytes.NewReader(w.Body.Bytes())).Decode(&qr); err != nil {
		t.Fatalf("%s %s: 200 without a QueryResults document: %v\n%s", req.Method, req.URL, err, w.Body.Bytes())
	}
	if qr.ID == "" || qr.Stats.State == "" {
		t.Fatalf("%s %s: incomplete document %s", req.Method, req.URL, w.Body.Bytes())
	}
	return qr.NextURI
}
