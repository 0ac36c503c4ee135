// Package httplite serves an http.Handler over HTTP/1.1 with less work per request than
// net/http's server, for a port where a request's latency is most of what a client waits for
// (the Trino statement protocol: a POST and a GET per statement).
//
// Each connection is served by one goroutine that reads a request (http.ReadRequest), runs the
// handler, and writes the answer, head and body, in one write. What net/http does besides, and
// this package does not: a read in the background while every handler runs, to end the
// request's context when the client goes away (each request then costs a goroutine wake-up and
// a read more; here only requests that Options.Watch names get it), HTTP/2, protocol upgrades
// and 1xx answers from handlers. What it keeps: keep-alive and pipelining, Content-Length and
// chunked bodies both ways, Expect: 100-continue, trailers, http.Flusher and
// http.ResponseController deadlines, a bound on open connections (netlimit.HTTP's: a 503 past
// it, a close past twice it), a bound on a request's head, timeouts on a TLS handshake, a
// request's head, its body, an idle connection and every write, TLS (connections that are a
// *tls.Conn, as certs.OptionalTLS gives), and Close.
//
// determinism: outside the simulator (an HTTP listener)
package httplite

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/internal/netlimit"
)

// Options configure a Server.
type Options struct {
	// Limits: ConnectionsMax open connections; HandshakeTimeout for a TLS handshake and for a
	// request's head once its first byte came; IdleTimeout between requests; MessageTimeout for
	// a request's body to arrive whole once its head has, and for each write of an answer. Zero
	// fields take netlimit's defaults.
	Limits netlimit.Limits
	// HeaderBytesMax bounds a request's head; default 1 MiB (net/http's).
	HeaderBytesMax int
	// Watch names the requests whose context ends when their client goes away while the
	// handler runs (a handler that waits long for something on the client's behalf); nil
	// watches none. Every request's context ends when its connection closes or the server does.
	Watch func(*http.Request) bool
	// Logger gets handler panics; nil discards.
	Logger *slog.Logger
}

// Server serves one handler on any number of listeners.
type Server struct {
	h    http.Handler
	opts Options
	log  *slog.Logger

	ctx     context.Context // ends at Close: the parent of every connection's
	cancel  context.CancelFunc
	closing atomic.Bool // Close began: answers tell their clients the connection ends

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]bool // true while the connection serves a request
	closed    bool
}

// New returns a server of h.
func New(h http.Handler, opts Options) *Server {
	opts.Limits = opts.Limits.WithDefaults()
	if opts.HeaderBytesMax <= 0 {
		opts.HeaderBytesMax = http.DefaultMaxHeaderBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{h: h, opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel,
		listeners: map[net.Listener]struct{}{}, conns: map[*conn]bool{}}
}

// Serve accepts connections on l until l fails or the server closes (then net.ErrClosed).
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()
	var backoff time.Duration
	for {
		rwc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return net.ErrClosed
			}
			if !temporary(err) {
				return err
			}
			// Out of file descriptors, say: wait a little rather than spin (as net/http does).
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if c := s.newConn(rwc); c != nil {
			go c.serve()
		}
	}
}

func temporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// newConn counts rwc in, or closes it when twice ConnectionsMax are open (see netlimit.HTTP).
func (s *Server) newConn(rwc net.Conn) *conn {
	s.mu.Lock()
	n, closed := len(s.conns), s.closed
	if closed || n >= 2*s.opts.Limits.ConnectionsMax {
		s.mu.Unlock()
		rwc.Close()
		return nil
	}
	c := newConn(s, rwc, n >= s.opts.Limits.ConnectionsMax)
	s.conns[c] = false
	s.mu.Unlock()
	return c
}

// busy marks c as serving a request (or not); it reports false once the server is closing, so
// that c takes no new request.
func (s *Server) busy(c *conn, serving bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; ok {
		s.conns[c] = serving
	}
	return !s.closed
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Close stops every listener, ends every request's context, and closes the connections: idle
// ones at once, busy ones once their answer is written.
func (s *Server) Close() error {
	s.closing.Store(true)
	s.mu.Lock()
	s.closed = true
	listeners := make([]net.Listener, 0, len(s.listeners))
	for l := range s.listeners {
		listeners = append(listeners, l)
	}
	var idle []*conn
	for c, serving := range s.conns {
		if !serving {
			idle = append(idle, c)
		}
	}
	s.mu.Unlock()
	s.cancel()
	for _, l := range listeners {
		l.Close()
	}
	for _, c := range idle {
		c.rwc.Close()
	}
	return nil
}
