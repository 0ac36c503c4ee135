package netlimit

import (
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// writeStaller is a socket whose writes can be bounded by progress (rawconn.Conn,
// relayloop.Conn).
type writeStaller interface{ SetWriteStall(time.Duration) }

// BoundWrites gives the socket under c (found through NetConn, TLS's included) the write
// stall bound d: a write that waits longer than d with nothing taken or acknowledged by the
// client fails (rawconn.ErrWriteStalled). False when c has no such socket (a Unix socket, a
// test's pipe): its writes stay unbounded.
func BoundWrites(c net.Conn, d time.Duration) bool {
	s, ok := socketUnder[writeStaller](c)
	if ok {
		s.SetWriteStall(d)
	}
	return ok
}

// socketUnder is the first of c and the connections under it (NetConn, TLS's included) that is
// a T.
func socketUnder[T any](c net.Conn) (T, bool) {
	for range 8 {
		if s, ok := c.(T); ok {
			return s, true
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = w.NetConn()
	}
	var none T
	return none, false
}

// WriteStalled reports a client ended because it stopped reading its answer: counted on
// refusals (bound write_stall) and logged with the client's address and user, never what it
// asked.
func WriteStalled(frontend string, refusals *prometheus.CounterVec, log *slog.Logger, remote, user string, timeout time.Duration) {
	refusals.WithLabelValues(frontend, "write_stall").Inc()
	if log != nil {
		log.Warn(frontend+": connection closed: the client took nothing of its answer within the write stall timeout (it stopped reading); its query was cancelled",
			"remote", remote, "user", user, "timeout", timeout.String())
	}
}

// WroteStalled reports whether a write to the socket under c failed on its write stall bound.
func WroteStalled(c net.Conn) bool {
	s, ok := socketUnder[interface{ WriteStalled() bool }](c)
	return ok && s.WriteStalled()
}
