package httplite

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// requestsConn is a connection that sends its server the same request n times, then ends, and
// drops what the server writes: a server's own work per exchange, without sockets.
type requestsConn struct {
	req   string
	n     int
	left  string
	wrote int
}

func (c *requestsConn) Read(p []byte) (int, error) {
	if c.left == "" {
		if c.n == 0 {
			return 0, io.EOF
		}
		c.n--
		c.left = c.req
	}
	n := copy(p, c.left)
	c.left = c.left[n:]
	return n, nil
}

func (c *requestsConn) Write(p []byte) (int, error) { c.wrote += len(p); return len(p), nil }
func (c *requestsConn) Close() error                { return nil }
func (c *requestsConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
}
func (c *requestsConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}
func (c *requestsConn) SetDeadline(time.Time) error      { return nil }
func (c *requestsConn) SetReadDeadline(time.Time) error  { return nil }
func (c *requestsConn) SetWriteDeadline(time.Time) error { return nil }

// One statement's exchange as benchtrino's net/http client sends it, served by a handler that
// reads the body and answers a small JSON document: the server's instructions and allocations
// per request, which the machine's load does not change.
//
//	go test -run '^$' -bench Exchange -benchmem -count 10 ./internal/httplite/
func BenchmarkExchange(b *testing.B) {
	const raw = "POST /v1/statement HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: benchtrino/1\r\nContent-Length: 8\r\n" +
		"X-Trino-Source: benchtrino\r\nX-Trino-User: postgres\r\nAccept-Encoding: gzip\r\n\r\nSELECT 1"
	answer := []byte(`{"id":"20261207_070000_00001_abcdef","stats":{"state":"FINISHED"},"data":[[1]]}`)
	jsonType := []string{"application/json"}
	s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body [8]byte
		if _, err := io.ReadFull(r.Body, body[:]); err != nil {
			b.Error(err)
		}
		w.Header()["Content-Type"] = jsonType
		_, _ = w.Write(answer)
	}), Options{})
	defer s.Close()
	b.ReportAllocs()
	rc := &requestsConn{req: raw, n: b.N}
	c := s.newConn(rc)
	b.ResetTimer()
	c.loop()
	b.StopTimer()
	if want := b.N * (len(answer) + 100); rc.wrote < want {
		b.Fatalf("wrote %d bytes for %d requests", rc.wrote, b.N)
	}
}
