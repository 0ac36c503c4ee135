package trinohttp

import (
	"bytes"
	"context"
	"runtime"
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

// Queries run on runners that outlive them: more queries at once than runnersIdleMax each get
// one, at most runnersIdleMax wait for the next query once they are done, later queries run on
// those (no new runner), and Close ends every runner.
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
	ts := startServer(t, backend, Options{PollWait: 10 * time.Millisecond})
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
