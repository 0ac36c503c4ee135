package trinohttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/forward"
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
func serve(t testing.TB, h http.Handler, req *http.Request) string {
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

// fuzzHeaderNames are the headers a Trino client (or a peer worker) sends; a header line of
// FuzzTrinoHeaders picks one by its first byte.
var fuzzHeaderNames = []string{
	"X-Trino-User", "X-Trino-Session", "X-Trino-Prepared-Statement", "X-Trino-Role", "X-Trino-Catalog",
	"X-Trino-Schema", "X-Trino-Client-Tags", "X-Trino-Client-Info", "X-Trino-Extra-Credential",
	"X-Trino-Transaction-Id", "X-Trino-Time-Zone", "X-Trino-Language", "X-Trino-Source", "X-Trino-Trace-Token",
	"X-Trino-Resource-Estimate", "X-Trino-Path", "Authorization", "Content-Type", "Content-Length",
	"X-Forwarded-For", forward.HeaderHop, forward.HeaderSecret, forward.HeaderClientAddr, forward.HeaderClientTLS,
}

// FuzzTrinoHeaders submits a statement body with arbitrary headers (repeated ones included), as
// newline-separated lines whose first byte names the header, to a worker's routes (with
// forwarding on, and without the panic guard, so a panic fails the fuzz), as a client or as a
// peer worker, then follows any nextUri it got. Every request must end with an answer; a 200
// must carry a QueryResults document.
func FuzzTrinoHeaders(f *testing.F) {
	line := func(name int, value string) string { return string(rune(name)) + value + "\n" }
	f.Add(line(0, "alice")+line(1, "query_max_run_time=1h,x=%ZZ")+line(3, "system=ROLE{admin}")+line(4, "hive"), "SELECT 1", false)
	f.Add(line(0, "bob")+line(2, "s1=SELECT%20%3F")+line(2, "s2=SELECT%201,=x")+line(10, "Europe/Nowhere"), "EXECUTE s1 USING 1", false)
	f.Add(line(0, "bob")+line(8, "k=v")+line(9, "NONE")+line(6, ",,,")+line(6, "a"), "PREPARE p FROM select ?", false)
	f.Add(line(20, "1")+line(21, "wrong")+line(22, "10.0.0.1:5")+line(23, "true")+line(0, "root"), "SELECT 1", true)
	f.Add(line(20, "1")+line(21, "s3cret")+line(22, "not an address")+line(0, "root"), "{}", true)
	f.Add(line(0, "x")+line(16, "Basic %%%")+line(17, "application/json")+line(18, "-1"), "DEALLOCATE PREPARE p", false)
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{PollWait: time.Millisecond, PageRows: 1,
		Forward: frontendtest.Forwarder(f, "w1", "s3cret")})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.routes()
	// The fuzz reaches statements: a well-formed one starts.
	start := httptest.NewRequest(http.MethodPost, "/v1/statement", strings.NewReader("SELECT 1"))
	start.Header.Set("X-Trino-User", "alice")
	if serve(f, h, start) == "" {
		f.Fatal("a well-formed statement did not start")
	}
	f.Fuzz(func(t *testing.T, headers, body string, peerPath bool) {
		path := "/v1/statement"
		if peerPath {
			path = forward.PathQuery
		}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		for _, l := range strings.Split(headers, "\n") {
			if l == "" {
				continue
			}
			req.Header.Add(fuzzHeaderNames[int(l[0])%len(fuzzHeaderNames)], l[1:])
		}
		next := serve(t, h, req)
		for i := 0; next != "" && i < 10; i++ {
			follow, _ := http.NewRequest(http.MethodGet, next, nil)
			follow.Header = req.Header.Clone()
			next = serve(t, h, follow)
		}
	})
}
