package trinohttp

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// goroutineID is the running goroutine's number, from its stack's first line.
func goroutineID() string {
	var buf [64]byte
	line := buf[:runtime.Stack(buf[:], false)]
	line = bytes.TrimPrefix(line, []byte("goroutine "))
	return string(line[:bytes.IndexByte(line, ' ')])
}

// Where a query cannot run on its POST's goroutine (the handler served by net/http), it runs
// on a runner that outlives it: more queries at once than runnersIdleMax each get one, at most
// runnersIdleMax wait for the next query once they are done, later queries run on those (no
// new runner), and Close ends every runner.
func TestRunnersAreReusedBoundedAndEndedByClose(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]bool{} // the goroutines queries ran on
	all := frontendtest.AllTypesEngine()
	backend := frontendtest.NewBackend(frontendtest.FuncEngine(func(ctx context.Context, q *query.Request) (query.Rows, error) {
		mu.Lock()
		ran[goroutineID()] = true
		mu.Unlock()
		return all(ctx, q)
	}))
	ts := startServerOn(t, backend, Options{PollWait: 10 * time.Millisecond}, true)
	s := ts.Server
	drain := func(uri string) {
		for uri != "" {
			_, qr := get(t, uri)
			if qr.Error != nil {
				t.Fatalf("query failed: %+v", qr.Error)
			}
			uri = qr.NextURI
		}
	}
	waiting, release := backend.Hold()
	const many = runnersIdleMax + 20
	next := make([]string, many)
	for i := range next {
		_, qr := post(t, ts.addr, "SELECT 1")
		next[i] = qr.NextURI
	}
	for range many {
		<-waiting
	}
	release()
	for _, uri := range next {
		drain(uri)
	}
	idle := func() int32 {
		deadline := time.Now().Add(10 * time.Second)
		for s.runnersIdle.Load() < runnersIdleMax && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return s.runnersIdle.Load()
	}
	if n := idle(); n != runnersIdleMax {
		t.Fatalf("%d runners wait after %d queries at once, want %d", n, many, runnersIdleMax)
	}
	mu.Lock()
	if len(ran) != many {
		t.Fatalf("%d queries at once ran on %d goroutines", many, len(ran))
	}
	mu.Unlock()
	for range 20 {
		_, qr := post(t, ts.addr, "SELECT 1")
		drain(qr.NextURI)
	}
	mu.Lock()
	if len(ran) != many {
		t.Fatalf("20 later queries ran on %d new goroutines, want none (runners wait)", len(ran)-many)
	}
	mu.Unlock()
	if n := idle(); n != runnersIdleMax {
		t.Fatalf("%d runners wait after later queries, want the same %d", n, runnersIdleMax)
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: runners still wait")
	}
	if n := s.runnersIdle.Load(); n != 0 {
		t.Fatalf("%d runners wait after Close", n)
	}
}

// On its own HTTP server a query runs on the goroutine that answered its POST, no runner woken
// (httplite.Detach); one the backend holds does not hold up its connection: a poll sent on it
// meanwhile is answered (its query still queued), and the query ends once let go.
func TestQueryRunsOnItsPOSTsGoroutine(t *testing.T) {
	var mu sync.Mutex
	var ranOn string // the goroutine the latest query ran on
	all := frontendtest.AllTypesEngine()
	backend := frontendtest.NewBackend(frontendtest.FuncEngine(func(ctx context.Context, q *query.Request) (query.Rows, error) {
		mu.Lock()
		ranOn = goroutineID()
		mu.Unlock()
		return all(ctx, q)
	}))
	s, err := NewServer(backend, Options{PollWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var postOn string // the goroutine that answered the latest POST
	h := s.Handler()
	hs := s.httpServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			postOn = goroutineID()
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close(); s.Close() })
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}, Timeout: 30 * time.Second} // one connection; a safety net, not a measure
	exchange := func(method, uri, body string) QueryResults {
		t.Helper()
		req, _ := http.NewRequest(method, uri, strings.NewReader(body))
		req.Header.Set("X-Trino-User", "carol")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var qr QueryResults
		if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil || qr.Error != nil {
			t.Fatalf("%s %s: %v %+v", method, uri, err, qr.Error)
		}
		return qr
	}
	drain := func(qr QueryResults) {
		for qr.NextURI != "" {
			qr = exchange(http.MethodGet, qr.NextURI, "")
		}
	}
	drain(exchange(http.MethodPost, "http://"+l.Addr().String()+"/v1/statement", "SELECT 1"))
	mu.Lock()
	if ranOn != postOn {
		t.Errorf("the query ran on goroutine %s, its POST was answered on %s", ranOn, postOn)
	}
	mu.Unlock()
	waiting, release := backend.Hold()
	defer release()
	qr := exchange(http.MethodPost, "http://"+l.Addr().String()+"/v1/statement", "SELECT 1")
	<-waiting
	if next := exchange(http.MethodGet, qr.NextURI, ""); next.Stats.State != stateQueued || next.NextURI == "" {
		t.Fatalf("a poll while the query is held: %+v", next.Stats)
	}
	release()
	drain(qr)
}
