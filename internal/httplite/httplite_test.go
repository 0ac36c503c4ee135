package httplite

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// serve runs a Server of h on a loopback port (through wrap, if given: a TLS listener).
func serve(t *testing.T, h http.Handler, opts Options, wrap ...func(net.Listener) net.Listener) (string, *Server) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	for _, w := range wrap {
		l = w(l)
	}
	s := New(h, opts)
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve ended with %v, want net.ErrClosed", err)
		}
	})
	return addr, s
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
	t.Cleanup(func() { nc.Close() })
	return nc
}

// read reads one answer whole from br.
func read(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// echo answers "METHOD PATH BODY" (from: its connection's client address).
func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("X-From", r.RemoteAddr)
	fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, body)
}

// Requests sent at once on one connection (a Content-Length body, a chunked one, none) are
// each answered, in order, on that connection, with a Content-Length and no chunking.
func TestKeepAliveAndPipelining(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(echo), Options{})
	nc := dial(t, addr)
	_, err := io.WriteString(nc, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"+
		"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"+
		"GET /c HTTP/1.1\r\nHost: x\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	from := ""
	for _, want := range []string{"POST /a hello", "POST /b abcde", "GET /c "} {
		resp, body := read(t, br, "")
		if body != want || resp.ContentLength != int64(len(want)) || len(resp.TransferEncoding) != 0 || resp.Close {
			t.Fatalf("got %q (length %d, %v, close %v), want %q", body, resp.ContentLength, resp.TransferEncoding, resp.Close, want)
		}
		if from != "" && resp.Header.Get("X-From") != from {
			t.Fatalf("answered from %s, then %s", from, resp.Header.Get("X-From"))
		}
		from = resp.Header.Get("X-From")
		if resp.Header.Get("Date") == "" || resp.Header.Get("Content-Type") == "" {
			t.Fatalf("no Date or Content-Type: %v", resp.Header)
		}
	}
	// A body its handler left unread is skipped, and the connection goes on.
	ignore := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.URL.Path) }), Options{})
	addr2 := startOn(t, ignore)
	nc2 := dial(t, addr2)
	_, _ = io.WriteString(nc2, "POST /one HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /two HTTP/1.1\r\nHost: x\r\n\r\n")
	br2 := bufio.NewReader(nc2)
	if _, body := read(t, br2, ""); body != "/one" {
		t.Fatalf("first: %q", body)
	}
	if _, body := read(t, br2, ""); body != "/two" {
		t.Fatalf("after an unread body: %q", body)
	}
}

// startOn serves s on a loopback port until the test ends.
func startOn(t *testing.T, s *Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

// A Flush sends what the body has so far (chunked), trailers reach the client, and a body too
// large to hold arrives whole.
func TestStreamingAndTrailers(t *testing.T) {
	release := make(chan struct{})
	big := strings.Repeat("0123456789", bodyHeldMax/5)
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = io.WriteString(w, big)
			return
		}
		w.Header().Set("Trailer", "X-Done")
		_, _ = io.WriteString(w, "first\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		<-release
		_, _ = io.WriteString(w, "second\n")
		w.Header().Set("X-Done", "yes")
		w.Header().Set(http.TrailerPrefix+"X-Late", "too")
	}), Options{})
	resp, err := http.Get("http://" + addr + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); line != "first\n" || err != nil {
		t.Fatalf("before the handler ended: %q, %v", line, err)
	}
	close(release)
	rest, err := io.ReadAll(br)
	if string(rest) != "second\n" || err != nil || resp.Trailer.Get("X-Done") != "yes" || resp.Trailer.Get("X-Late") != "too" {
		t.Fatalf("rest %q, %v, trailers %v", rest, err, resp.Trailer)
	}
	resp, err = http.Get("http://" + addr + "/big")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != big || err != nil {
		t.Fatalf("a large body: %d bytes, %v", len(body), err)
	}
}

// Whatever the handlers write, in whatever pieces and with whatever flushes, with or without a
// Content-Length, every answer on one kept-alive connection arrives whole and in order.
func TestAnswersArriveWhole(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		type answer struct {
			pieces  []int // sizes written, in order
			flushAt int   // flush after this many pieces (past the end: never)
			length  bool  // set Content-Length
		}
		answers := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) answer {
			return answer{pieces: rapid.SliceOfN(rapid.IntRange(0, 3*bodyHeldMax/2), 0, 4).Draw(rt, "pieces"),
				flushAt: rapid.IntRange(0, 5).Draw(rt, "flushAt"), length: rapid.Bool().Draw(rt, "length")}
		}), 1, 4).Draw(rt, "answers")
		bodyOf := func(a answer) []byte {
			var b []byte
			for i, n := range a.pieces {
				b = append(b, bytes.Repeat([]byte{byte('a' + i)}, n)...)
			}
			return b
		}
		var next atomic.Int32
		s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a := answers[next.Add(1)-1]
			if a.length {
				w.Header().Set("Content-Length", fmt.Sprint(len(bodyOf(a))))
			}
			for i, n := range a.pieces {
				if i == a.flushAt {
					w.(http.Flusher).Flush()
				}
				_, _ = w.Write(bytes.Repeat([]byte{byte('a' + i)}, n))
			}
		}), Options{})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			rt.Fatal(err)
		}
		go s.Serve(l)
		defer s.Close()
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			rt.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
		br := bufio.NewReader(nc)
		for i, a := range answers {
			if _, err := io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				rt.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				rt.Fatalf("answer %d: %v", i, err)
			}
			got, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(got, bodyOf(a)) {
				rt.Fatalf("answer %d: %d bytes (%v), want %d", i, len(got), err, len(bodyOf(a)))
			}
		}
	})
}

// A head over HeaderBytesMax gets 431 and the connection closes.
func TestHeaderBound(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(echo), Options{HeaderBytesMax: 1 << 10})
	nc := dial(t, addr)
	_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("y", 16<<10)+"\r\n\r\n")
	resp, _ := read(t, bufio.NewReader(nc), "")
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !resp.Close {
		t.Fatalf("got %d (close %v), want 431 and a close", resp.StatusCode, resp.Close)
	}
	nc2 := dial(t, addr) // a head within the bound is served
	_, _ = io.WriteString(nc2, "GET / HTTP/1.1\r\nHost: x\r\nX-Small: "+strings.Repeat("y", 512)+"\r\n\r\n")
	if resp, _ := read(t, bufio.NewReader(nc2), ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("a small head: %d", resp.StatusCode)
	}
}

// closedBy reports whether the server closes nc (within the safety net of dial).
func closedBy(nc net.Conn) bool {
	_, err := io.ReadAll(nc)
	return err == nil
}

func TestTimeouts(t *testing.T) {
	short := netlimit.Limits{HandshakeTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond, MessageTimeout: 100 * time.Millisecond}
	t.Run("a head not whole in time closes the connection", func(t *testing.T) {
		addr, _ := serve(t, http.HandlerFunc(echo), Options{Limits: short})
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n")
		if !closedBy(nc) {
			t.Fatal("the server kept an unfinished head open")
		}
	})
	t.Run("an idle connection closes", func(t *testing.T) {
		addr, _ := serve(t, http.HandlerFunc(echo), Options{Limits: short})
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(nc)
		read(t, br, "")
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("an idle connection: %v, want the server's close", err)
		}
	})
	t.Run("a body not whole in time fails its read", func(t *testing.T) {
		failed := make(chan error, 1)
		addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			failed <- err
		}), Options{Limits: short})
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf")
		if err := <-failed; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the handler's read ended with %v", err)
		}
		if !closedBy(nc) {
			t.Fatal("the connection of a failed body stayed open")
		}
	})
	t.Run("a body is bounded by the message timeout, not the idle one", func(t *testing.T) {
		failed := make(chan error, 1)
		limits := netlimit.Limits{HandshakeTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second, MessageTimeout: 100 * time.Millisecond}
		addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			failed <- err
		}), Options{Limits: limits})
		nc := dial(t, addr)
		start := time.Now()
		_, _ = io.WriteString(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf")
		if err := <-failed; !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Fatalf("the handler's read ended with %v after %s, want a deadline within about 100ms", err, time.Since(start))
		}
	})
	t.Run("a watched request's whole body leaves its watch no deadline", func(t *testing.T) {
		ended := make(chan error, 1)
		addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			select {
			case <-r.Context().Done(): // the watch's read failed: a deadline left on it
				ended <- r.Context().Err()
			case <-time.After(300 * time.Millisecond): // three times every timeout
				ended <- nil
			}
		}), Options{Limits: short, Watch: func(*http.Request) bool { return true }})
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
		if err := <-ended; err != nil {
			t.Fatalf("the watched request ended with %v while its client waited", err)
		}
	})
	t.Run("a client that does not read its answer is cut off", func(t *testing.T) {
		failed := make(chan error, 1)
		addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chunk := make([]byte, 1<<20)
			for {
				if _, err := w.Write(chunk); err != nil {
					failed <- err
					return
				}
			}
		}), Options{Limits: short})
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if err := <-failed; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the handler's write ended with %v", err)
		}
	})
	t.Run("a long handler is not cut", func(t *testing.T) { // no timeout runs while a handler works
		addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(300 * time.Millisecond) // three times every timeout
			_, _ = io.WriteString(w, "done")
		}), Options{Limits: short})
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if _, body := read(t, bufio.NewReader(nc), ""); body != "done" {
			t.Fatalf("got %q", body)
		}
	})
}

// Past ConnectionsMax a request gets 503 with Retry-After and its connection closes; past
// twice it a connection closes unanswered; a closed connection frees its place.
func TestConnectionsMax(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(echo), Options{Limits: netlimit.Limits{ConnectionsMax: 1}})
	get := func(nc net.Conn) (*http.Response, error) {
		_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		return http.ReadResponse(bufio.NewReader(nc), nil)
	}
	first := dial(t, addr)
	if resp, err := get(first); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first: %v %v", resp, err)
	}
	second := dial(t, addr)
	third := dial(t, addr) // past twice the bound while second is open: closed unanswered
	if got, err := io.ReadAll(third); len(got) != 0 || err != nil {
		t.Fatalf("a connection past twice the bound read %q, %v", got, err)
	}
	resp, err := get(second)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !resp.Close {
		t.Fatalf("second: %v %v", resp, err)
	}
	first.Close()
	for { // the server sees the close, then frees the place
		nc := dial(t, addr)
		resp, err := get(nc)
		nc.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A 401 closes its connection: a client that failed to authenticate holds no place.
func TestUnauthorizedCloses(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "who are you", http.StatusUnauthorized)
	}), Options{})
	nc := dial(t, addr)
	_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(nc)
	if resp, _ := read(t, br, ""); resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("got %d, close %v", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after a 401: %v, want the server's close", err)
	}
}

// Over TLS (certs.OptionalTLS, as the Trino port serves it) a handler sees the connection's
// state; plain clients are served on the same port.
func TestTLS(t *testing.T) {
	cfg := frontendtest.SelfSignedTLS(t)
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.TLS != nil)
	}), Options{}, func(l net.Listener) net.Listener { return certs.OptionalTLS(l, frontendtest.Static(cfg)) })
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for scheme, want := range map[string]string{"https": "true", "http": "false"} {
		for range 2 {
			resp, err := client.Get(scheme + "://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != want {
				t.Fatalf("%s: TLS seen %s", scheme, body)
			}
		}
	}
}

// A watched request's context ends when its client goes away; a request its client pipelined
// meanwhile is still served; an unwatched request's context stays.
func TestWatch(t *testing.T) {
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	release := make(chan struct{})
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/next" {
			_, _ = io.WriteString(w, "next")
			return
		}
		started <- struct{}{}
		select {
		case <-r.Context().Done():
			ended <- r.Context().Err()
		case <-release:
			ended <- nil
			_, _ = io.WriteString(w, "released")
		}
	}), Options{Watch: func(r *http.Request) bool { return r.URL.Path == "/watched" }})
	t.Run("the client leaves", func(t *testing.T) {
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, "GET /watched HTTP/1.1\r\nHost: x\r\n\r\n")
		<-started
		nc.Close()
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("the watched request ended with %v", err)
		}
	})
	t.Run("the client pipelines", func(t *testing.T) {
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, "GET /watched HTTP/1.1\r\nHost: x\r\n\r\n")
		<-started
		_, _ = io.WriteString(nc, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(50 * time.Millisecond) // lets the background read take the next request's first byte (either way it must be served)
		release <- struct{}{}
		if err := <-ended; err != nil {
			t.Fatalf("the watched request ended with %v", err)
		}
		br := bufio.NewReader(nc)
		if _, body := read(t, br, ""); body != "released" {
			t.Fatalf("first: %q", body)
		}
		if _, body := read(t, br, ""); body != "next" {
			t.Fatalf("the pipelined request: %q", body)
		}
	})
	t.Run("unwatched", func(t *testing.T) {
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, "GET /unwatched HTTP/1.1\r\nHost: x\r\n\r\n")
		<-started
		nc.(*net.TCPConn).CloseWrite()
		time.Sleep(50 * time.Millisecond) // time for a (wrong) cancel to land
		release <- struct{}{}
		if err := <-ended; err != nil {
			t.Fatalf("the unwatched request ended with %v", err)
		}
	})
}

// LoggedIn reports a connection's earlier login: false at its first request, true after, false
// again on a new connection, and false for another server's answer.
func TestLoggedIn(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, LoggedIn(w))
	}), Options{})
	for _, conn := range []string{"first", "second"} {
		nc := dial(t, addr)
		br := bufio.NewReader(nc)
		for i, want := range []string{"false", "true", "true"} {
			_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			if _, body := read(t, br, ""); body != want {
				t.Fatalf("%s connection, request %d: LoggedIn %s, want %s", conn, i, body, want)
			}
		}
	}
	if LoggedIn(httptest.NewRecorder()) {
		t.Fatal("LoggedIn of another server's answer: true")
	}
}

// A client sending Expect: 100-continue is told to go on when the handler reads the body; a
// handler that does not read it ends the connection (the client never sent the body).
func TestExpectContinue(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ignore" {
			_, _ = io.WriteString(w, "ignored")
			return
		}
		echo(w, r)
	}), Options{})
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // far less than the client's own wait
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/read", strings.NewReader("payload"))
	req.Header.Set("Expect", "100-continue")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the client was never told to continue: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "POST /read payload" {
		t.Fatalf("got %q", body)
	}
	nc := dial(t, addr)
	_, _ = io.WriteString(nc, "POST /ignore HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 7\r\n\r\n")
	br := bufio.NewReader(nc)
	if _, body := read(t, br, ""); body != "ignored" {
		t.Fatalf("got %q", body)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after an unread awaited body: %v, want the server's close", err)
	}
}

// Requests this server does not serve get net/http's answers and a close.
func TestRefusedRequests(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(echo), Options{})
	for req, want := range map[string]int{
		"garbage\r\n\r\n":                                    http.StatusBadRequest,
		"GET / HTTP/1.1\r\n\r\n":                             http.StatusBadRequest, // no Host
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n":       http.StatusBadRequest,
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n":                   http.StatusHTTPVersionNotSupported,
		"GET / HTTP/1.1\r\nHost: x\r\nExpect: magic\r\n\r\n": http.StatusExpectationFailed,
	} {
		nc := dial(t, addr)
		_, _ = io.WriteString(nc, req)
		resp, _ := read(t, bufio.NewReader(nc), "")
		if resp.StatusCode != want || !resp.Close {
			t.Errorf("%q: %d (close %v), want %d and a close", req, resp.StatusCode, resp.Close, want)
		}
	}
	// HTTP/1.0 without keep-alive: one answer, then the close.
	nc := dial(t, addr)
	_, _ = io.WriteString(nc, "GET /old HTTP/1.0\r\n\r\n")
	br := bufio.NewReader(nc)
	if resp, body := read(t, br, ""); body != "GET /old " || !resp.Close {
		t.Fatalf("HTTP/1.0: %q, close %v", body, resp.Close)
	}
}

// A line break in a header value cannot add a field; a panicking handler closes only its own
// connection.
func TestHandlerMistakes(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		w.Header().Set("X-Value", "a\r\nX-Smuggled: 1")
		w.Header().Set("Bad Name", "x")
	}), Options{})
	nc := dial(t, addr)
	_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, _ := read(t, bufio.NewReader(nc), "")
	if resp.Header.Get("X-Smuggled") != "" || resp.Header.Get("X-Value") != "a  X-Smuggled: 1" {
		t.Fatalf("header %v", resp.Header)
	}
	bad := dial(t, addr)
	_, _ = io.WriteString(bad, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\n")
	if got, err := io.ReadAll(bad); len(got) != 0 || err != nil {
		t.Fatalf("a panicking handler's client read %q, %v", got, err)
	}
	_, _ = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := read(t, bufio.NewReader(nc), ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("another connection after the panic: %d", resp.StatusCode)
	}
}

// Close ends Serve, closes an idle connection at once, and lets a busy one write its answer.
func TestClose(t *testing.T) {
	inside := make(chan struct{})
	release := make(chan struct{})
	s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(inside)
			<-release
		}
		_, _ = io.WriteString(w, "done")
	}), Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	idle, busy := dial(t, l.Addr().String()), dial(t, l.Addr().String())
	_, _ = io.WriteString(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	idleR := bufio.NewReader(idle)
	read(t, idleR, "")
	_, _ = io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-inside
	s.Close()
	if err := <-served; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := idleR.ReadByte(); err != io.EOF {
		t.Fatalf("an idle connection after Close: %v", err)
	}
	close(release)
	busyR := bufio.NewReader(busy)
	if resp, body := read(t, busyR, ""); body != "done" || !resp.Close {
		t.Fatalf("the busy connection's answer: %q, close %v", body, resp.Close)
	}
	if err := s.Serve(l); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
}

// A detached handler's answer reaches its client at once; the connection's next request is
// served on the handler's goroutine once it returns, or on another after the wait if it does
// not: also when the timer was armed for an earlier handler's wait, due before this one's.
func TestDetach(t *testing.T) {
	secondServed := make(chan struct{}, 1)
	detached := make(chan bool, 1)
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/second":
			secondServed <- struct{}{}
			_, _ = io.WriteString(w, "second")
		case "/quick":
			_, _ = io.WriteString(w, "quick")
			detached <- Detach(w, time.Hour)
		case "/soon":
			_, _ = io.WriteString(w, "soon")
			detached <- Detach(w, 20*time.Millisecond)
		case "/slow", "/slow-soon":
			_, _ = io.WriteString(w, "slow")
			wait := time.Millisecond
			if r.URL.Path == "/slow-soon" {
				wait = 20 * time.Millisecond
			}
			detached <- Detach(w, wait)
			<-secondServed // only another goroutine can serve it
		case "/watched", "/closing":
			detached <- Detach(w, time.Millisecond)
		}
	}), Options{Watch: func(r *http.Request) bool { return r.URL.Path == "/watched" }})
	nc := dial(t, addr)
	br := bufio.NewReader(nc)
	exchange := func(head string) string {
		t.Helper()
		if _, err := io.WriteString(nc, head); err != nil {
			t.Fatal(err)
		}
		_, body := read(t, br, "")
		return body
	}
	if body := exchange("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n"); body != "quick" || !<-detached {
		t.Fatalf("quick: %q", body)
	}
	if body := exchange("GET /second HTTP/1.1\r\nHost: x\r\n\r\n"); body != "second" {
		t.Fatalf("after a quick detached handler: %q", body)
	}
	<-secondServed
	if body := exchange("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); body != "slow" || !<-detached {
		t.Fatalf("slow: %q", body) // its answer came before its handler returned
	}
	if body := exchange("GET /second HTTP/1.1\r\nHost: x\r\n\r\n"); body != "second" {
		t.Fatalf("beside a slow detached handler: %q", body)
	}
	if body := exchange("GET /soon HTTP/1.1\r\nHost: x\r\n\r\n"); body != "soon" || !<-detached {
		t.Fatalf("soon: %q", body)
	}
	time.Sleep(10 * time.Millisecond) // the next handler's wait ends 10 ms after this one's
	if body := exchange("GET /slow-soon HTTP/1.1\r\nHost: x\r\n\r\n"); body != "slow" || !<-detached {
		t.Fatalf("slow after soon: %q", body)
	}
	if body := exchange("GET /second HTTP/1.1\r\nHost: x\r\n\r\n"); body != "second" {
		t.Fatalf("beside a slow detached handler, its timer armed for an earlier one: %q", body)
	}
	if exchange("GET /watched HTTP/1.1\r\nHost: x\r\n\r\n"); <-detached {
		t.Fatal("a watched request detached")
	}
	if exchange("GET /closing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); <-detached {
		t.Fatal("the last request of a connection detached")
	}
	if Detach(httptest.NewRecorder(), time.Millisecond) {
		t.Fatal("another server's answer detached")
	}
}

// Await: a handler that settles within its wait answers itself, on its connection's goroutine;
// one still working past it is answered by its late answer, and the connection's next request
// is served meanwhile (on another goroutine); a handler that panics before it settles is
// answered by neither twice; a connection that ends with its answer is closed.
func TestAwait(t *testing.T) {
	secondServed := make(chan struct{}, 1)
	settled := make(chan bool, 1)
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		late := LateFunc(func() { _, _ = io.WriteString(w, "late") })
		switch r.URL.Path {
		case "/second":
			secondServed <- struct{}{}
			_, _ = io.WriteString(w, "second")
		case "/quick":
			if !Await(w, time.Hour, late) {
				t.Error("Await refused on this server's answer")
			}
			ok := Settle(w)
			settled <- ok
			if ok {
				_, _ = io.WriteString(w, "quick")
			}
		case "/slow", "/closing":
			if Await(w, 20*time.Millisecond, late) && Await(w, time.Hour, late) {
				t.Error("a second Await on one answer")
			}
			if r.URL.Path == "/slow" {
				<-secondServed // only another goroutine can serve it
			} else {
				time.Sleep(100 * time.Millisecond)
			}
			ok := Settle(w)
			settled <- ok
			if ok {
				_, _ = io.WriteString(w, "slow")
			}
		case "/panic":
			Await(w, 50*time.Millisecond, late)
			panic(http.ErrAbortHandler)
		}
	}), Options{})
	nc := dial(t, addr)
	br := bufio.NewReader(nc)
	exchange := func(head string) string {
		t.Helper()
		if _, err := io.WriteString(nc, head); err != nil {
			t.Fatal(err)
		}
		_, body := read(t, br, "")
		return body
	}
	if body := exchange("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n"); body != "quick" || !<-settled {
		t.Fatalf("quick: %q", body)
	}
	if body := exchange("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); body != "late" {
		t.Fatalf("slow: %q", body)
	}
	if body := exchange("GET /second HTTP/1.1\r\nHost: x\r\n\r\n"); body != "second" {
		t.Fatalf("beside a slow awaited handler: %q", body)
	}
	if <-settled {
		t.Fatal("Settle after the late answer reported the answer still the handler's")
	}
	if body := exchange("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n"); body != "quick" || !<-settled {
		t.Fatalf("quick after slow: %q", body)
	}
	if body := exchange("GET /closing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); body != "late" || <-settled {
		t.Fatalf("the last request of a connection, slow: %q", body)
	}
	if !closedBy(nc) {
		t.Fatal("the connection stayed open after its last request's late answer")
	}

	nc = dial(t, addr)
	br = bufio.NewReader(nc)
	if _, err := io.WriteString(nc, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // past the panicked handler's wait
	if !closedBy(nc) {
		t.Fatal("the connection of a panicked awaited handler stayed open")
	}
	if Await(httptest.NewRecorder(), time.Millisecond, LateFunc(func() {})) || !Settle(httptest.NewRecorder()) {
		t.Fatal("Await on another server's answer")
	}
}

// TestABodyHeldIsNoAllocation: a connection's answers hold their bodies in one array, kept
// from answer to answer (conn.held), so that a 1 KiB body costs no allocation of its own: an
// exchange on a kept-alive connection allocates as much with it as with no body. Answers of
// other lengths on the same connection arrive whole (a kept array is emptied first).
func TestABodyHeldIsNoAllocation(t *testing.T) {
	kib := bytes.Repeat([]byte("x"), 1024)
	textType := []string{"text/plain"}
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = textType // as trinohttp sets it: no detection, no allocation
		switch r.URL.Path {
		case "/kib":
			w.Write(kib)
		case "/short":
			w.Write(kib[:10])
		}
	}), Options{})
	nc := dial(t, addr)
	buf := make([]byte, 4096)
	exchange := func(req []byte, bodyLen int) {
		if _, err := nc.Write(req); err != nil {
			t.Fatal(err)
		}
		got := 0
		for { // the head, then bodyLen bytes (no allocation on this side)
			n, err := nc.Read(buf[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += n
			if i := bytes.Index(buf[:got], []byte("\r\n\r\n")); i >= 0 && got-i-4 >= bodyLen {
				if got-i-4 != bodyLen || !bytes.Equal(buf[i+4:got], kib[:bodyLen]) {
					t.Fatalf("body of %d bytes, want %d of x", got-i-4, bodyLen)
				}
				return
			}
		}
	}
	kibReq := []byte("GET /kib HTTP/1.1\r\nHost: x\r\n\r\n")
	emptyReq := []byte("GET /empty HTTP/1.1\r\nHost: x\r\n\r\n")
	exchange(kibReq, 1024)
	exchange([]byte("GET /short HTTP/1.1\r\nHost: x\r\n\r\n"), 10)
	exchange(kibReq, 1024)
	withBody := testing.AllocsPerRun(200, func() { exchange(kibReq, 1024) })
	without := testing.AllocsPerRun(200, func() { exchange(emptyReq, 0) })
	if withBody-without >= 0.5 {
		t.Fatalf("an exchange with a 1 KiB body allocates %.1f times, with none %.1f: the body is an allocation", withBody, without)
	}
}

// TestAnExchangesAllocations: an answer's header map is its connection's last one, emptied
// (none of an earlier answer's fields goes out again), and a request read by parseHead is
// served in its connection's context (the local address net/http's handlers find there)
// without a copy of it; a statement's POST with its body, awaited as trinohttp awaits it,
// then costs at most exchangeAllocsMax allocations on the server's side.
func TestAnExchangesAllocations(t *testing.T) {
	reuseHeaders(t)
	textType := []string{"text/plain"}
	var localOK atomic.Bool
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		localOK.Store(ok)
		w.Header()["Content-Type"] = textType
		if r.URL.Path == "/a" {
			w.Header()["X-A"] = textType
		}
		if r.Method == http.MethodPost {
			Await(w, time.Hour, LateFunc(func() {}))
			if _, err := io.ReadAll(r.Body); err != nil || !Settle(w) {
				t.Errorf("body: %v", err)
			}
		}
		w.Write([]byte("ok"))
	}), Options{})
	nc := dial(t, addr)
	br := bufio.NewReader(nc)
	exchange := func(req string) *http.Response {
		if _, err := io.WriteString(nc, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := exchange("GET /a HTTP/1.1\r\nHost: x\r\n\r\n"); resp.Header.Get("X-A") == "" || !localOK.Load() {
		t.Fatalf("the first answer: %v, the local address found %v", resp.Header, localOK.Load())
	}
	if resp := exchange("GET /b HTTP/1.1\r\nHost: x\r\n\r\n"); resp.Header.Get("X-A") != "" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("the second answer carries the first's fields: %v", resp.Header)
	}
	const post = "POST /v1/statement HTTP/1.1\r\nHost: x\r\nUser-Agent: a/1\r\nX-Trino-User: u\r\nContent-Length: 8\r\n\r\nSELECT 1"
	exchange(post)
	if !localOK.Load() {
		t.Fatal("a POST's context lacks its connection's local address")
	}
	buf := make([]byte, 4096)
	allocs := testing.AllocsPerRun(200, func() { // the client's side allocates nothing
		if _, err := io.WriteString(nc, post); err != nil {
			t.Fatal(err)
		}
		for got := 0; !bytes.HasSuffix(buf[:got], []byte("\r\n\r\nok")); {
			n, err := nc.Read(buf[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs > exchangeAllocsMax {
		t.Fatalf("a POST exchange allocates %.1f times, more than %d", allocs, exchangeAllocsMax)
	}
}

// exchangeAllocsMax bounds TestAnExchangesAllocations' POST: the head's text, the request with
// its URL and body, the header map and its values, the answer with its body's wrapper and
// hand-over, and the handler's io.ReadAll (16 before the request was made in its connection's
// context, its URL, body, wrapper and hand-over allocated with it and the answer, and the
// answer's header map kept; 9 while each request's header was a map of its own, two
// allocations).
const exchangeAllocsMax = 6

// TestFinishAnswersBeforeTheHandlerReturns: a finished answer reaches its client while the
// handler works on, one write with its length; the connection's next request waits for the
// handler to return; an awaited answer is finished only once settled.
func TestFinishAnswersBeforeTheHandlerReturns(t *testing.T) {
	release := make(chan struct{})
	var returned atomic.Bool
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/early":
			_, _ = io.WriteString(w, "early")
			if !Finish(w) {
				t.Error("Finish refused on this server's answer")
			}
			if _, err := io.WriteString(w, "more"); err == nil {
				t.Error("a write after Finish was taken")
			}
			if Finish(w) {
				t.Error("a second Finish of one answer")
			}
			<-release
			returned.Store(true)
		case "/awaited":
			Await(w, time.Hour, LateFunc(func() { _, _ = io.WriteString(w, "late") }))
			if Finish(w) {
				t.Error("Finish of an awaited answer before Settle")
			}
			if Settle(w) {
				_, _ = io.WriteString(w, "settled")
				if !Finish(w) {
					t.Error("Finish refused once settled")
				}
			}
		case "/next":
			if !returned.Load() {
				t.Error("the next request was served before the finishing handler returned")
			}
			_, _ = io.WriteString(w, "next")
		}
	}), Options{})
	nc := dial(t, addr)
	br := bufio.NewReader(nc)
	if _, err := io.WriteString(nc, "GET /early HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, body := read(t, br, ""); body != "early" {
		t.Fatalf("early: %q", body)
	}
	close(release)
	if _, body := read(t, br, ""); body != "next" {
		t.Fatalf("next: %q", body)
	}
	if _, err := io.WriteString(nc, "GET /awaited HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, body := read(t, br, ""); body != "settled" {
		t.Fatalf("awaited: %q", body)
	}
	if Finish(httptest.NewRecorder()) {
		t.Fatal("Finish of another server's answer")
	}
}

// The fields that decide an answer's framing, read in the pass that writes the head: a
// handler's Connection: close ends the connection after its answer, a Trailer makes the answer
// chunked with the trailer after it, a body without a Content-Type gets the one its bytes say,
// and a Content-Length set after WriteHeader gives way to the server's own (one length, the
// body's), so the connection's next answer is read where it begins.
func TestTheHeadsFramingFields(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/close":
			w.Header().Set("Connection", "Close")
			w.Header().Set("Content-Type", "text/x-mine")
		case "/trailer":
			w.Header().Set("Trailer", "X-Sum")
			w.Header().Set("X-Sum", "9")
		case "/late":
			w.WriteHeader(http.StatusOK)
			w.Header().Set("Content-Length", "99")
		}
		_, _ = io.WriteString(w, "<html>"+r.URL.Path)
	}), Options{})

	nc := dial(t, addr)
	br := bufio.NewReader(nc)
	_, _ = io.WriteString(nc, "GET /late HTTP/1.1\r\nHost: x\r\n\r\nGET /trailer HTTP/1.1\r\nHost: x\r\n\r\nGET /close HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := read(t, br, "")
	if body != "<html>/late" || resp.ContentLength != int64(len(body)) || len(resp.Header["Content-Length"]) != 1 ||
		resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("/late: %q, Content-Length %v, Content-Type %q", body, resp.Header["Content-Length"], resp.Header.Get("Content-Type"))
	}
	resp, body = read(t, br, "")
	if body != "<html>/trailer" || len(resp.TransferEncoding) != 1 || resp.Trailer.Get("X-Sum") != "9" || resp.Close {
		t.Fatalf("/trailer: %q, %v, trailer %v, close %v", body, resp.TransferEncoding, resp.Trailer, resp.Close)
	}
	resp, body = read(t, br, "")
	if body != "<html>/close" || !resp.Close || resp.Header.Get("Content-Type") != "text/x-mine" || len(resp.Header["Content-Type"]) != 1 {
		t.Fatalf("/close: %q, close %v, Content-Type %v", body, resp.Close, resp.Header["Content-Type"])
	}
	if !closedBy(nc) {
		t.Fatal("the connection stayed open after an answer with Connection: close")
	}
}

// SetContentType's type goes out once in the head, unless the header names one (which then
// goes out alone), and an answer of another server is told false.
func TestSetContentType(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/set":
			if !SetContentType(w, "application/json") {
				t.Error("SetContentType of this server's answer: false")
			}
		case "/both":
			w.Header().Set("Content-Type", "text/x-mine")
			SetContentType(w, "application/json")
		}
		_, _ = io.WriteString(w, "<html>"+r.URL.Path)
	}), Options{})
	nc := dial(t, addr)
	br := bufio.NewReader(nc)
	_, _ = io.WriteString(nc, "GET /set HTTP/1.1\r\nHost: x\r\n\r\nGET /both HTTP/1.1\r\nHost: x\r\n\r\nHEAD /set HTTP/1.1\r\nHost: x\r\n\r\nGET /none HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []struct{ path, method, ct string }{
		{"/set", "GET", "application/json"}, {"/both", "GET", "text/x-mine"}, {"/set", "HEAD", "application/json"},
		{"/none", "GET", "text/html; charset=utf-8"}, // the one sniffed: SetContentType's is not the next answer's
	} {
		resp, err := http.ReadResponse(br, &http.Request{Method: want.method})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if got := resp.Header["Content-Type"]; len(got) != 1 || got[0] != want.ct {
			t.Fatalf("%s %s: Content-Type %q, want [%q] (body %q)", want.method, want.path, got, want.ct, body)
		}
	}
	if SetContentType(httptest.NewRecorder(), "application/json") {
		t.Fatal("SetContentType of a recorder: true")
	}
}
