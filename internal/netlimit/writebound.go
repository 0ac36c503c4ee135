package netlimit

import (
	"net/http"
	"time"
)

// WriteBound gives every write of h's answers timeout to make progress (each 64 KiB of it to go
// out): a client that stops reading
// what it asked for (a snapshot, /metrics) is disconnected instead of holding its connection,
// and a handler goroutine, for ever. Time a handler spends before it writes (a long-poll) is
// not bounded; each piece of a write gets the whole timeout again.
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

// progressChunk is how much of a write must go out within the timeout: a client that reads
// slowly but steadily (a large snapshot over a slow link, a loaded machine) keeps making
// progress, where one write of many megabytes would have to go out whole within the timeout.
const progressChunk = 64 << 10

func (b *boundedWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), progressChunk)]
		b.arm()
		n, err := b.ResponseWriter.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

func (b *boundedWriter) Flush() {
	b.arm()
	_ = b.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection's own writer.
func (b *boundedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }
