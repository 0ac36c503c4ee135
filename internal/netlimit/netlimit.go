// Package netlimit bounds what a listener lets in before anyone is authenticated: how many
// connections are open at once (each further one is refused with the protocol's own error and
// closed at once, so refused clients hold nothing), how long a handshake may take, and how large
// a message may be before login. The frontends and the admin / worker API listeners share it.
//
// It touches the connections it is given (a refusal writes a few bytes and closes).
//
// determinism: outside the simulator (network listeners)
package netlimit

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults, used where a Limits field is zero.
const (
	// ConnectionsMaxDefault is the open connections one listener accepts.
	ConnectionsMaxDefault = 1000
	// HandshakeTimeoutDefault bounds a connection's handshake and login.
	HandshakeTimeoutDefault = 10 * time.Second
	// PreAuthBytesMaxDefault bounds one client message before login: a MySQL handshake
	// response, a PostgreSQL startup or password message, an HTTP request body.
	PreAuthBytesMaxDefault = 64 << 10
	// refuseWriteTimeout bounds the write of a refusal; a fresh socket's send buffer takes it
	// at once, so this only matters for a peer that never reads.
	refuseWriteTimeout = time.Second
)

// Limits are one listener's bounds. The zero value means the defaults.
type Limits struct {
	ConnectionsMax   int
	HandshakeTimeout time.Duration
	PreAuthBytesMax  int
}

// WithDefaults fills zero fields with the defaults.
func (l Limits) WithDefaults() Limits {
	if l.ConnectionsMax <= 0 {
		l.ConnectionsMax = ConnectionsMaxDefault
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = HandshakeTimeoutDefault
	}
	if l.PreAuthBytesMax <= 0 {
		l.PreAuthBytesMax = PreAuthBytesMaxDefault
	}
	return l
}

// Listener returns ln accepting at most max open connections (a connection counts until it is
// closed). A connection beyond that is handed to refuse, which writes the protocol's "too many
// connections" error (nil writes nothing), and closed; Accept goes on to the next one.
func Listener(ln net.Listener, max int, refuse func(net.Conn)) net.Listener {
	if max <= 0 {
		max = ConnectionsMaxDefault
	}
	return &listener{Listener: ln, slots: make(chan struct{}, max), refuse: refuse}
}

type listener struct {
	net.Listener
	slots  chan struct{}
	refuse func(net.Conn)
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &conn{Conn: c, slots: l.slots}, nil
		default:
			l.turnAway(c)
		}
	}
}

func (l *listener) turnAway(c net.Conn) {
	if l.refuse != nil {
		_ = c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		l.refuse(c)
	}
	_ = c.Close()
}

// conn gives its slot back on the first Close.
type conn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() { <-c.slots })
	return c.Conn.Close()
}

// HTTP makes hs accept at most max open connections: beyond that a connection gets 503 with
// Retry-After (closed at once under TLS, where a plain answer could not be read). It counts
// through hs.ConnState, so the connections net/http sees keep their own type (a *tls.Conn
// stays one). Call before hs serves.
func HTTP(hs *http.Server, max int) {
	if max <= 0 {
		max = ConnectionsMaxDefault
	}
	var mu sync.Mutex
	open := map[net.Conn]struct{}{}
	next := hs.ConnState
	hs.ConnState = func(c net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			mu.Lock()
			full := len(open) >= max
			if !full {
				open[c] = struct{}{}
			}
			mu.Unlock()
			if full {
				if _, isTLS := c.(*tls.Conn); !isTLS {
					_ = c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
					RefuseHTTP(c)
				}
				_ = c.Close()
			}
		case http.StateClosed, http.StateHijacked:
			mu.Lock()
			delete(open, c)
			mu.Unlock()
		}
		if next != nil {
			next(c, state)
		}
	}
}

// RefuseHTTP answers 503 with Retry-After, for a plain-HTTP connection.
func RefuseHTTP(c net.Conn) {
	const body = "too many connections\n"
	_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: 21\r\n\r\n" + body))
}
