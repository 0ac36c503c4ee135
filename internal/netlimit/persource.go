package netlimit

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// PerSource returns ln refusing a connection from a source (its IP address) that already
// holds max of ln's connections not yet authenticated (Authenticated marks one that is): one
// source opening sockets and leaving them in their handshake cannot fill the listener's
// ConnectionsMax, of which max is a share, and the other sources' clients still get in. Where
// a protocol logs in per request (HTTP, gRPC), the handler marks the connection of a request
// that logged in by its addresses (AuthenticatedAt). A connection beyond max is handed to refuse (the protocol's "too many
// connections" error; nil writes nothing) and closed; refused is told the source, and whether
// this is its first refusal since it was last under max (for one log line, not one a socket).
func PerSource(ln net.Listener, max int, refuse func(net.Conn), refused func(source string, first bool)) net.Listener {
	return &perSource{Listener: ln, max: max, refuse: refuse, refused: refused,
		pending: map[string]int{}, warned: map[string]bool{}, lingering: make(chan struct{}, lingerMax)}
}

type perSource struct {
	net.Listener
	max       int
	refuse    func(net.Conn)
	refused   func(source string, first bool)
	lingering chan struct{}

	mu      sync.Mutex
	pending map[string]int  // a source's connections not yet authenticated
	warned  map[string]bool // refused since it was last under max
}

func (l *perSource) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := sourceOf(c.RemoteAddr())
		l.mu.Lock()
		over := l.pending[src] >= l.max
		first := over && !l.warned[src]
		if over {
			l.warned[src] = true
		} else {
			l.pending[src]++
		}
		l.mu.Unlock()
		if !over {
			sc := &sourceConn{Conn: c, l: l, src: src, key: addrKey(c.LocalAddr().String(), c.RemoteAddr().String())}
			unauthenticated.Store(sc.key, sc)
			return sc, nil
		}
		if l.refused != nil {
			l.refused(src, first)
		}
		turnAway(c, l.refuse, l.lingering)
	}
}

// release takes one of src's connections off its count.
func (l *perSource) release(src string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending[src]--
	if l.pending[src] < l.max {
		delete(l.warned, src)
	}
	if l.pending[src] <= 0 {
		delete(l.pending, src)
	}
}

// sourceOf is addr's IP address, or all of it when it has none (a Unix socket).
func sourceOf(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok {
		return a.IP.String()
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}

// sourceConn counts against its source until it is authenticated or closed.
type sourceConn struct {
	net.Conn
	l    *perSource
	src  string
	key  string // its addresses, in unauthenticated until done
	once sync.Once
}

func (c *sourceConn) done() {
	c.once.Do(func() {
		unauthenticated.CompareAndDelete(c.key, c)
		c.l.release(c.src)
	})
}

// unauthenticated holds every connection that counts against its source's share, by its local
// and remote addresses (unique among a host's open connections): a handler of a protocol that
// logs in per request knows those addresses, not the connection.
var unauthenticated sync.Map // addrKey -> *sourceConn

func addrKey(local, remote string) string { return local + " " + remote }

// AuthenticatedAt marks the connection between the addresses local and remote (host:port), if
// PerSource counts it, as logged in (Authenticated): HTTP's and gRPC's handlers call it for a
// request that logged in.
func AuthenticatedAt(local, remote string) {
	if sc, ok := unauthenticated.Load(addrKey(local, remote)); ok {
		sc.(*sourceConn).done()
	}
}

func (c *sourceConn) Close() error {
	c.done()
	return c.Conn.Close()
}

// NetConn is the connection accepted (as tls.Conn's NetConn).
func (c *sourceConn) NetConn() net.Conn { return c.Conn }

// Authenticated marks c (or the connection it wraps: a TLS connection, Listener's) as logged
// in: it no longer counts against its source's share (PerSource).
func Authenticated(c net.Conn) {
	for c != nil {
		if sc, ok := c.(*sourceConn); ok {
			sc.done()
			return
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return
		}
		c = w.NetConn()
	}
}

// RefuseHTTP is PerSource's refuse for a plain HTTP listener: a 503 with Retry-After, the
// connection then closed (a listener that may serve TLS refuses with nil: a close).
func RefuseHTTP(c net.Conn) {
	const body = "too many connections from one source\n"
	_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
}

// RequestsLeaveShare takes a connection of PerSource off its source's share once a whole
// request arrived on it, for an API that authenticates each request by itself (the worker
// API, whose 401 closes the connection: HTTP): what the share bounds there is connections
// that never delivered a request in time, left half-open or sending their headers a byte at a
// time, so that one source cannot hold the listener's ConnectionsMax with them.
func RequestsLeaveShare(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			AuthenticatedAt(local.String(), r.RemoteAddr)
		}
		h.ServeHTTP(w, r)
	})
}
