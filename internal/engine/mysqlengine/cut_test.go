package mysqlengine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// cutRelay forwards TCP connections to target until cut resets them all. seen is closed once
// a client has sent mark.
type cutRelay struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	seen  chan struct{}
	once  sync.Once
}

func newCutRelay(t *testing.T, target string, mark []byte) *cutRelay {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &cutRelay{l: l, seen: make(chan struct{})}
	t.Cleanup(func() { l.Close(); r.cut() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, s)
			r.mu.Unlock()
			go io.Copy(c, s)
			go r.watch(s, c, mark)
		}
	}()
	return r
}

// watch copies from client c to server s, noting mark.
func (r *cutRelay) watch(s, c net.Conn, mark []byte) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if bytes.Contains(buf[:n], mark) {
				r.once.Do(func() { close(r.seen) })
			}
			if _, err := s.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cut resets every connection, as an engine host that went away does.
func (r *cutRelay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
}

// TestEngineLostMidQueryIsHidden: when the connection to the engine breaks while a query runs,
// the error a client sees is the engine-unavailable one, naming neither the engine's address
// nor its user (the detail stays in Hidden, for the log).
func TestEngineLostMidQueryIsHidden(t *testing.T) {
	cfg, name := testDatabase(t)
	relay := newCutRelay(t, cfg.Addr, []byte("SLEEP(30)"))
	e, err := Open(Config{Name: "test", Addr: relay.l.Addr().String(), User: cfg.User, Password: cfg.Passwd, Database: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	done := make(chan error, 1)
	go func() {
		rows, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT SLEEP(30)"})
		if err == nil {
			_, err = rows.Next(context.Background())
			rows.Close()
		}
		done <- err
	}()
	<-relay.seen
	relay.cut()
	err = <-done
	if err == nil {
		t.Fatal("the query succeeded over a cut connection")
	}
	var h *query.Hidden
	if !errors.As(err, &h) || h.Public.Code != query.CodeEngineUnavailable {
		t.Errorf("a cut connection: %v (%T), want the hidden engine-unavailable error", err, err)
	}
	_, port, _ := net.SplitHostPort(relay.l.Addr().String())
	for _, shown := range []string{port, cfg.User + "@", name} {
		if strings.Contains(err.Error(), shown) {
			t.Errorf("the client's error %q shows %q", err, shown)
		}
	}
}
