package netlimit

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/heldmem"
)

func TestWithDefaultsFillsOnlyWhatIsUnset(t *testing.T) {
	def := Limits{ConnectionsMaxDefault, HandshakeTimeoutDefault, PreAuthBytesMaxDefault, IdleTimeoutDefault, MessageBytesMaxDefault, MessageTimeoutDefault, ConnectionsMaxDefault / 4, heldmem.ConnectionBytesDefault, nil, nil, WriteStallTimeoutDefault, KeepaliveTimeDefault, KeepaliveTimeoutDefault}
	withoutPool := func(l Limits) Limits {
		if l.Held == nil || l.Held.Max() != heldmem.DaemonBytesDefault || l.InFlight == nil || l.InFlight == l.Held {
			t.Fatalf("no default pools: %+v", l)
		}
		l.Held, l.InFlight = nil, nil
		return l
	}
	if got := withoutPool((Limits{}).WithDefaults()); got != def {
		t.Fatalf("zero limits: %+v", got)
	}
	if got := withoutPool((Limits{-1, -1, -1, -1, -1, -1, -1, -1, nil, nil, -1, -1, -1}).WithDefaults()); got != def {
		t.Fatalf("negative limits: %+v", got)
	}
	set := Limits{1, time.Second, 2, 2 * time.Second, 3, 3 * time.Second, 4, 5, heldmem.NewPool(6), heldmem.NewPool(7), 8 * time.Second, 9 * time.Second, 10 * time.Second}
	if got := set.WithDefaults(); got != set {
		t.Fatalf("set limits changed: %+v", got)
	}
}

// serve accepts from l and hands each connection over.
func serve(t *testing.T, l net.Listener) <-chan net.Conn {
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() { l.Close() })
	return accepted
}

func TestListenerCountsEachConnectionOnce(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int32
	l := Listener(raw, 2, func(c net.Conn) { refused.Add(1); _, _ = io.WriteString(c, "full") })
	accepted := serve(t, l)
	addr := raw.Addr().String()
	a, b := dial(t, addr), dial(t, addr)
	ca, cb := <-accepted, <-accepted
	third := dial(t, addr)
	if got, _ := io.ReadAll(third); string(got) != "full" || refused.Load() != 1 {
		t.Fatalf("third connection read %q, refusals %d", got, refused.Load())
	}
	// Closing one connection twice frees one slot, not two.
	ca.Close()
	ca.Close()
	a.Close()
	c := dial(t, addr)
	<-accepted
	d := dial(t, addr)
	if got, _ := io.ReadAll(d); string(got) != "full" {
		t.Fatalf("after one close and a new connection, another read %q", got)
	}
	if nc, ok := cb.(interface{ NetConn() net.Conn }); !ok || nc.NetConn() == nil {
		t.Fatal("an accepted connection does not give its net.Conn")
	}
	b.Close()
	c.Close()
}

func TestListenerWithoutARefusalClosesAtOnce(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := serve(t, Listener(raw, 1, nil))
	first := dial(t, raw.Addr().String())
	defer first.Close()
	<-accepted
	second := dial(t, raw.Addr().String())
	if got, err := io.ReadAll(second); len(got) != 0 || err != nil {
		t.Fatalf("refused without a refusal: read %q, %v", got, err)
	}
}

func TestListenerDefaultBoundAndAcceptError(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listener(raw, 0, nil) // the default bound: a connection gets in
	accepted := serve(t, l)
	c := dial(t, raw.Addr().String())
	<-accepted
	c.Close()
	raw.Close()
	waitFor(t, func() bool { _, err := l.Accept(); return err != nil })
	if c, err := l.Accept(); err == nil || c != nil {
		t.Fatalf("Accept on a closed listener: %v, %v", c, err)
	}
}

// TestHTTPLimits: within max a keep-alive connection is served; the next max connections get
// 503 with Retry-After and Connection: close; beyond twice max a connection is closed unread;
// a slot comes back when a connection closes; the server's own ConnState and ConnContext still
// run.
func TestHTTPLimits(t *testing.T) {
	var states, contexts atomic.Int32
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.ConnState = func(net.Conn, http.ConnState) { states.Add(1) }
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context { contexts.Add(1); return ctx }
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv.Config.Handler = mux
	HTTP(srv.Config, 1)
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	get := func(c net.Conn) (*http.Response, string) {
		t.Helper()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return nil, err.Error()
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}
	first := dial(t, addr)
	if resp, body := get(first); resp == nil || resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("first connection: %v %q", resp, body)
	}
	second := dial(t, addr)
	resp, body := get(second)
	if resp == nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !resp.Close || !strings.Contains(body, "too many connections") {
		t.Fatalf("second connection: %v %q", resp, body)
	}
	hold := dial(t, addr) // over the limit, but not yet closed by the server
	waitFor(t, func() bool { return states.Load() >= 3 })
	third := dial(t, addr)
	if got, _ := io.ReadAll(third); len(got) != 0 {
		t.Fatalf("a connection beyond twice the limit read %q", got)
	}
	// Connections over the limit count too, until they close.
	first.Close()
	hold.Close()
	waitFor(t, func() bool {
		c := dial(t, addr)
		defer c.Close()
		resp, _ := get(c)
		return resp != nil && resp.StatusCode == 200
	})
	if contexts.Load() == 0 {
		t.Fatal("the server's ConnContext never ran")
	}
}

func TestHTTPWithoutAHandlerServesTheDefaultMux(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	HTTP(srv.Config, 0) // the default bound: a connection gets in
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/no-such-path-anywhere")
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the default mux answered %v, %v", resp, err)
	}
	resp.Body.Close()
}

// A streaming answer flushes through the 401 watch.
func TestHTTPStreamsThroughTheWatch(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		<-release
	}))
	HTTP(srv.Config, 4)
	srv.Start()
	defer srv.Close()
	defer close(release)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("streamed %q, %v", line, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) { // a safety net, not a measure
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
	}
}

// pair is a connected TCP pair: the server's end and the client's.
func pair(t *testing.T) (server, client net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client = dial(t, ln.Addr().String())
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func TestMessageTimer(t *testing.T) {
	if NewMessageTimer(nil, 0).Timeout() != MessageTimeoutDefault || NewMessageTimer(nil, -1).Timeout() != MessageTimeoutDefault {
		t.Fatal("an unset timeout is not the default")
	}
	t.Run("a message not whole in time wakes the read", func(t *testing.T) {
		server, _ := pair(t)
		m := NewMessageTimer(server, 20*time.Millisecond)
		defer m.Stop()
		m.Begin()
		_, err := server.Read(make([]byte, 1))
		if !errors.Is(err, os.ErrDeadlineExceeded) || !m.Expired() {
			t.Fatalf("read ended with %v, expired %v", err, m.Expired())
		}
		m.Begin() // an expired timer stays expired
		m.End()
		if !m.Expired() {
			t.Fatal("End cleared the expiry")
		}
	})
	t.Run("beginning again does not move the deadline", func(t *testing.T) {
		// A client dribbling a message makes its reader Begin at every short read.
		server, _ := pair(t)
		m := NewMessageTimer(server, 100*time.Millisecond)
		defer m.Stop()
		for start := time.Now(); !m.Expired(); time.Sleep(10 * time.Millisecond) {
			m.Begin()
			if time.Since(start) > 30*time.Second { // a safety net, not a measure
				t.Fatal("a message begun again and again never expired")
			}
		}
	})
	t.Run("the next message is timed too", func(t *testing.T) {
		server, _ := pair(t)
		m := NewMessageTimer(server, 20*time.Millisecond)
		defer m.Stop()
		m.Begin()
		m.End()
		m.Begin()
		if _, err := server.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) || !m.Expired() {
			t.Fatalf("the second message: read ended with %v, expired %v", err, m.Expired())
		}
	})
	t.Run("a read moved past the wake-up is closed", func(t *testing.T) {
		server, client := pair(t)
		m := NewMessageTimer(server, 20*time.Millisecond)
		defer m.Stop()
		m.Begin()
		waitFor(t, m.Expired)
		_ = server.SetReadDeadline(time.Time{}) // what a careless reader might do
		if got, err := io.ReadAll(client); err != nil || len(got) != 0 {
			t.Fatalf("client read %q, %v", got, err)
		}
		if _, err := server.Read(make([]byte, 1)); err == nil {
			t.Fatal("the connection was not closed")
		}
	})
	t.Run("time between messages never counts", func(t *testing.T) {
		server, client := pair(t)
		m := NewMessageTimer(server, 200*time.Millisecond)
		defer m.Stop()
		for range 3 {
			m.Begin()
			m.End()
		}
		time.Sleep(600 * time.Millisecond)
		if m.Expired() {
			t.Fatal("an ended message expired")
		}
		_, _ = client.Write([]byte("x"))
		if _, err := server.Read(make([]byte, 1)); err != nil {
			t.Fatalf("read after ended messages: %v", err)
		}
		m.Begin()
		m.Stop()
		time.Sleep(600 * time.Millisecond)
		if m.Expired() {
			t.Fatal("a stopped timer expired")
		}
	})
	NewMessageTimer(nil, time.Second).Stop() // never begun: nothing to stop
	err := MessageTimeoutError(3 * time.Second)
	if !errors.Is(err, ErrMessageTimeout) || !strings.Contains(err.Error(), "3s") {
		t.Fatalf("MessageTimeoutError: %v", err)
	}
}

// TestBodyTimeout: a body sent in part ends in a read error and its connection closes; a body sent whole lifts the
// deadline, so the handler may answer later (a long poll); a request without a body is not
// bounded.
func TestBodyTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	results := make(chan string, 4)
	unset := BodyTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), 500)
		}
	}), 0)
	unsetSrv := httptest.NewServer(unset)
	defer unsetSrv.Close()
	resp, err := http.Post(unsetSrv.URL, "text/plain", strings.NewReader("abc"))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("an unset body timeout: %v, %v", resp, err)
	}
	resp.Body.Close()
	srv := httptest.NewServer(BodyTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		time.Sleep(3 * timeout)
		switch {
		case err != nil:
			results <- "body error"
			return
		case r.Context().Err() != nil:
			// The deadline was left on the connection after the body ended: net/http's
			// watch for a client gone read past it and took the client for gone.
			results <- "cancelled"
			return
		}
		results <- "ok"
		_, _ = io.WriteString(w, "done")
	}), timeout))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	for name, c := range map[string]struct{ req, want string }{
		"half a body":  {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", "body error"},
		"a whole body": {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", "ok"},
		"no body":      {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "ok"},
	} {
		conn := dial(t, addr)
		if _, err := io.WriteString(conn, c.req); err != nil {
			t.Fatal(err)
		}
		if got := <-results; got != c.want {
			t.Errorf("%s: handler saw %s", name, got)
		}
		if c.want == "ok" {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("%s: answer %v, %v", name, resp, err)
			}
		} else {
			// The connection ends: net/http would otherwise wait, with no deadline, for the rest
			// of the body before it answers, and the client held the connection for ever.
			_ = conn.SetReadDeadline(time.Now().Add(50 * timeout))
			if _, err := io.ReadAll(conn); err != nil {
				t.Errorf("%s: the connection was not closed after the body timed out: %v", name, err)
			}
		}
		conn.Close()
	}
}
