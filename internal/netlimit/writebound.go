package netlimit

import (
	"net/http"
	"time"
)

// WriteBound gives every write of h's answers timeout to go out: a client that stops reading
// what it asked for (a snapshot, /metrics) is disconnected instead of holding its connection,
// and a handler goroutine, for ever. Time a handler spends before it writes (a long-poll) is
// not bounded; each write gets the whole timeout again.
func WriteBound(h http.Handler, timeout time.Duration) http.Handler {
	if timeout <= 0 {
		timeout = MessageTimeoutDefault
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// A deadline left by this connection's previous answer must not cut this one short.
		if rc.SetWriteDeadline(time.Time{}) != nil {
			h.ServeHTTP(w, r) // no deadlines here (a recorder in a test)
			return
		}
		bw := &boundedWriter{ResponseWriter: w, rc: rc, timeout: timeout}
		h.ServeHTTP(bw, r)
		// What net/http writes after the handler (the buffered rest, the last chunk) is bounded too.
		bw.arm()
	})
}

// boundedWriter arms the write deadline before each write and flush.
type boundedWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (b *boundedWriter) arm() { _ = b.rc.SetWriteDeadline(time.Now().Add(b.timeout)) }

func (b *boundedWriter) Write(p []byte) (int, error) {
	b.arm()
	return b.ResponseWriter.Write(p)
}

func (b *boundedWriter) Flush() {
	b.arm()
	_ = b.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection's own writer.
func (b *boundedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }
