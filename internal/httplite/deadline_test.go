package httplite

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/netlimit"
)

// deadlineCounter counts the deadline settings of the connections it accepts.
type deadlineCounter struct {
	net.Listener
	reads, writes *atomic.Int32
}

func (l deadlineCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countedConn{c, l.reads, l.writes}, nil
}

type countedConn struct {
	net.Conn
	reads, writes *atomic.Int32
}

func (c countedConn) SetReadDeadline(t time.Time) error {
	c.reads.Add(1)
	return c.Conn.SetReadDeadline(t)
}

func (c countedConn) SetWriteDeadline(t time.Time) error {
	c.writes.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

// TestRequestAfterRequestSetsTheDeadlinesSeldom: a kept-alive connection's requests, each its
// idle wait and its answer's writes timed, set the connection's deadlines about once a second,
// not twice a request.
func TestRequestAfterRequestSetsTheDeadlinesSeldom(t *testing.T) {
	var reads, writes atomic.Int32
	addr, _ := serve(t, http.HandlerFunc(echo), Options{}, func(l net.Listener) net.Listener {
		return deadlineCounter{l, &reads, &writes}
	})
	nc := dial(t, addr)
	br := bufio.NewReader(nc)
	const requests = 200
	start := time.Now()
	for range requests {
		_, _ = io.WriteString(nc, "POST /v1/statement HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\nSELECT 1")
		if _, body := read(t, br, ""); body != "POST /v1/statement SELECT 1" {
			t.Fatalf("answered %q", body)
		}
	}
	// At most one setting of each a second (deadlineSlack of the defaults), and the first.
	most := int32(time.Since(start)/time.Second) + 2
	if r, w := reads.Load(), writes.Load(); r > most || w > most {
		t.Fatalf("%d requests set the read deadline %d times and the write deadline %d times, want at most %d each", requests, r, w, most)
	}
}

// TestAHandlersDeadlineIsNotTakenForTheIdleOne: a deadline a handler set (http.ResponseController)
// is replaced by the next idle wait's and the next answer's, however soon they come.
func TestAHandlersDeadlineIsNotTakenForTheIdleOne(t *testing.T) {
	limits := netlimit.Limits{IdleTimeout: time.Minute, MessageTimeout: time.Minute}
	addr, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/past" {
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(aLongTimeAgo); err != nil {
				t.Error(err)
			}
			if err := rc.SetWriteDeadline(time.Now().Add(time.Hour)); err != nil {
				t.Error(err)
			}
		}
		echo(w, r)
	}), Options{Limits: limits})
	nc := dial(t, addr)
	br := bufio.NewReader(nc)
	for _, path := range []string{"/a", "/past", "/b", "/c"} {
		_, _ = io.WriteString(nc, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if _, body := read(t, br, ""); body != "GET "+path+" " {
			t.Fatalf("%s answered %q", path, body)
		}
		time.Sleep(10 * time.Millisecond) // the next request comes after the idle wait began
	}
}
