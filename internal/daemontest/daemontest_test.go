package daemontest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFreeAddrsAreDistinctAndBindable(t *testing.T) {
	addrs := FreeAddrs(t, 5)
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("address %s handed out twice: %v", a, addrs)
		}
		seen[a] = true
	}
}

func TestCallSendsTokenAndHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("ETag", r.Header.Get("X-Probe"))
		_, _ = w.Write([]byte(`{"revision":"r1"}`))
	}))
	defer srv.Close()
	code, h, body := Call("GET", srv.URL, "tok", "", map[string]string{"X-Probe": `"r1"`})
	if code != 200 || h.Get("ETag") != `"r1"` || body != `{"revision":"r1"}` {
		t.Fatalf("Call: %d %v %q", code, h, body)
	}
	if code, _, _ := Call("GET", srv.URL, "", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("Call without a token: %d", code)
	}
	var ans struct{ Revision string }
	GetJSON(t, srv.URL, "tok", &ans)
	if ans.Revision != "r1" {
		t.Fatalf("GetJSON: %+v", ans)
	}
	if code, _, _ := Call("GET", "http://"+FreeAddr(t), "", "", nil); code != 0 {
		t.Fatalf("Call to a closed port: %d, want 0", code)
	}
}

func TestEventuallyWaitsForTheCondition(t *testing.T) {
	n := 0
	Eventually(t, 5*time.Second, "three polls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("polled %d times", n)
	}
}

// TestStartWaitAndRestart runs the real binary: `queryflux --help` exits by itself, and a
// restarted Proc runs the same command again.
func TestStartWaitAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the queryflux binary")
	}
	p := StartWith(t, Options{SplitStdout: true}, "help", "--help")
	p.Wait(t)
	if !p.Exited() || !strings.Contains(p.Stdout()+p.Output(), "queryflux") {
		t.Fatalf("queryflux --help: exited %v, stdout %q, stderr %q", p.Exited(), p.Stdout(), p.Output())
	}
	again := p.Restart(t)
	again.Wait(t)
	if again.Stdout() != p.Stdout() {
		t.Fatalf("restart printed %q, first run %q", again.Stdout(), p.Stdout())
	}
}
