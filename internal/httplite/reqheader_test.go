package httplite

import (
	"bufio"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// listConn is a connection that sends its server each of reqs in turn, then ends, and drops
// what the server writes.
type listConn struct {
	requestsConn
	reqs []string
}

func (c *listConn) Read(p []byte) (int, error) {
	if c.left == "" {
		if len(c.reqs) == 0 {
			return 0, io.EOF
		}
		c.left, c.reqs = c.reqs[0], c.reqs[1:]
	}
	n := copy(p, c.left)
	c.left = c.left[n:]
	return n, nil
}

// Requests one after another on a connection, whose header maps are one map emptied between
// them: each handler sees its own request's fields and no other's, as http.ReadRequest reads
// them, also after a request whose head parseHead leaves to http.ReadRequest.
func TestARequestsHeaderIsItsOwn(t *testing.T) {
	reuseHeaders(t) // the maps reused, as in production
	names := []string{"X-Trino-User", "X-Trino-Source", "User-Agent", "Accept-Encoding", "X-Trino-Catalog", "Authorization", "X-A", "X-B"}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "requests")
		var raws []string
		for i := range n {
			var b strings.Builder
			b.WriteString("GET /v1/info HTTP/1.1\r\nHost: h\r\n")
			for _, name := range rapid.SliceOfNDistinct(rapid.SampledFrom(names), 0, 20, func(s string) string { return s }).Draw(rt, "names") {
				b.WriteString(name + ": " + rapid.StringMatching(`[a-z0-9]{1,4}`).Draw(rt, "value") + "\r\n")
			}
			if rapid.IntRange(0, 4).Draw(rt, "slow") == 0 {
				b.WriteString("Pragma: no-cache\r\n") // read by http.ReadRequest, not parseHead
			}
			if i == n-1 {
				b.WriteString("Connection: close\r\n")
			}
			b.WriteString("\r\n")
			raws = append(raws, b.String())
		}
		var got []http.Header
		s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = append(got, r.Header.Clone())
			_, _ = w.Write([]byte("ok"))
		}), Options{})
		defer s.Close()
		s.newConn(&listConn{reqs: slices.Clone(raws)}).loop()
		if len(got) != n {
			rt.Fatalf("served %d requests of %d", len(got), n)
		}
		for i, raw := range raws {
			want, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
			if err != nil {
				rt.Fatalf("%q: %v", raw, err)
			}
			if !maps.EqualFunc(got[i], want.Header, slices.Equal) {
				rt.Fatalf("request %d %q: header %v, want %v", i, raw, got[i], want.Header)
			}
		}
	})
}

// A request read by parseHead costs no header map of its own once its connection served one:
// its exchange allocates its parsed head and its text alone (the benchmark's handler
// allocates nothing).
func TestAnExchangeAllocatesTheHeadAlone(t *testing.T) {
	reuseHeaders(t)
	const raw = "POST /v1/statement HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: benchtrino/1\r\nContent-Length: 8\r\n" +
		"X-Trino-Source: benchtrino\r\nX-Trino-User: postgres\r\nAccept-Encoding: gzip\r\n\r\nSELECT 1"
	answer := []byte(`{"id":"x","stats":{"state":"FINISHED"},"data":[[1]]}`)
	jsonType := []string{"application/json"}
	body := make([]byte, 8)
	s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadFull(r.Body, body); err != nil {
			t.Error(err)
		}
		w.Header()["Content-Type"] = jsonType
		_, _ = w.Write(answer)
	}), Options{})
	defer s.Close()
	allocs := func(n int) float64 {
		return testing.AllocsPerRun(5, func() { s.newConn(&requestsConn{req: raw, n: n}).loop() })
	}
	if per := (allocs(200) - allocs(100)) / 100; per > 2.05 {
		t.Fatalf("%.2f allocations an exchange, want 2 (the parsed head and its text)", per)
	}
}

// reuseHeaders turns off the retiring of kept header maps for t: a test of their reuse.
func reuseHeaders(t testing.TB) {
	was := guardKeptHeaders
	guardKeptHeaders = func() bool { return false }
	t.Cleanup(func() { guardKeptHeaders = was })
}

// A handler that keeps its request's header, or its answer's, past its return reads neither
// the next request's fields (another client's Authorization) nor writes into the next answer:
// in a test binary the maps are retired once the handler returned, and what it kept reads as
// retired.
func TestAHeaderKeptPastItsHandlerIsRetired(t *testing.T) {
	var keptReq, keptResp []http.Header
	s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keptReq, keptResp = append(keptReq, r.Header), append(keptResp, w.Header())
		w.Header().Set("X-Answer", r.Header.Get("Authorization"))
		_, _ = w.Write([]byte("ok"))
	}), Options{})
	defer s.Close()
	reqs := []string{
		"GET /v1/info HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YWxpY2U6\r\n\r\n",
		"GET /v1/info HTTP/1.1\r\nHost: h\r\nAuthorization: Basic Ym9iOg==\r\nConnection: close\r\n\r\n",
	}
	s.newConn(&listConn{reqs: reqs}).loop()
	if len(keptReq) != 2 {
		t.Fatalf("served %d requests of 2", len(keptReq))
	}
	for i, h := range []http.Header{keptReq[0], keptResp[0]} {
		if got := h.Get("Authorization") + h.Get("X-Answer"); strings.Contains(got, "Ym9i") || h.Get(retiredField) == "" {
			t.Fatalf("header %d kept by the first handler reads %v after the second request: want it retired", i, h)
		}
	}
}
