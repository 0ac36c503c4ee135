package pgwire

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Drain ends the server at transaction boundaries, for a rolling restart: it stops accepting,
// closes every connection that sits idle outside a transaction (with FATAL 57P01, as a
// PostgreSQL server shutting down does), lets every other connection finish its statement and
// its transaction and closes it at its next idle moment, and returns when none is left or when
// ctx ends, whichever is first. Close then ends whatever is left.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining.Store(true)
	for l := range s.listeners {
		_ = l.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.wakeIfIdle()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		left := len(s.open)
		s.mu.Unlock()
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// wakeIfIdle interrupts the connection's wait for the client's next message when it is idle
// outside a transaction, so its loop sees the drain and ends it.
func (c *conn) wakeIfIdle() {
	c.idleMu.Lock()
	defer c.idleMu.Unlock()
	if c.idle && c.txStatus == 'I' {
		_ = c.nc.SetReadDeadline(time.Now())
	}
	if lr := c.onloop; lr != nil {
		lr.h.StopIf(lr.idle)
	}
}

// waitingForClient marks the connection idle (or not) for Drain; it returns whether a drain
// asks this connection to end now: idle, outside a transaction, with nothing half-done.
func (c *conn) waitingForClient(idle bool) (endNow bool) {
	c.idleMu.Lock()
	defer c.idleMu.Unlock()
	c.idle = idle
	return idle && c.srv.draining.Load() && c.txStatus == 'I' && !c.skipToSync
}

// drainInterrupted reports whether err is Drain's wake-up of an idle connection. A connection
// that is inside a transaction after all gets its deadline cleared and keeps reading.
func (c *conn) drainInterrupted(err error) (retry bool) {
	if !c.srv.draining.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		_ = c.nc.SetReadDeadline(time.Time{})
		return true
	}
	return false
}

// shuttingDown is the client's last message of a drained connection.
func (c *conn) shuttingDown() error {
	return c.fatal(sqlstate.AdminShutdown, "terminating connection: the server is shutting down")
}
