package mysqlwire

import (
	"context"
	"time"
)

// Drain ends the server at transaction boundaries, for a rolling restart: it stops accepting,
// closes every session idle outside a transaction, lets every other session finish its statement
// and its transaction (or release its named lock) and closes it at its next idle moment, and
// returns when none is left or when ctx ends, whichever is first. Close ends whatever is left.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining.Store(true)
	for l := range s.listeners {
		_ = l.Close()
	}
	sessions := make([]*session, 0, len(s.sessions))
	for _, h := range s.sessions {
		sessions = append(sessions, h)
	}
	s.mu.Unlock()
	for _, h := range sessions {
		h.wakeIfIdle()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		left := len(s.conns)
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

// waitingForClient marks the session idle (or busy) for Drain, with whether it holds a pinned
// engine connection; it reports whether a drain ends the client connection at this boundary.
func (h *session) waitingForClient(idle bool) (endNow bool) {
	h.idleMu.Lock()
	defer h.idleMu.Unlock()
	h.idle, h.idlePinned = idle, h.pinned != nil
	return idle && !h.idlePinned && h.s.draining.Load()
}

// wakeIfIdle closes the session's connection when it waits for a command outside a
// transaction, as a MySQL server shutting down does. (go-mysql turns a read deadline into a
// broken connection, so the session cannot be woken and kept: it is ended.)
func (h *session) wakeIfIdle() {
	h.idleMu.Lock()
	defer h.idleMu.Unlock()
	if lr := h.onloop; lr != nil {
		lr.hd.StopIf(lr.idle)
		return
	}
	if h.idle && !h.idlePinned && h.raw != nil {
		_ = h.raw.Close()
	}
}
