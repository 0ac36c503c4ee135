package netlimit

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// MessageTimer bounds how long a logged-in client may take to finish a message once the
// server waits for its rest: Begin when a read must wait for more of a message already begun,
// End once the message is whole. A message still not whole after the timeout has its
// connection's read woken (a read deadline of now); Expired then reports it, and the reader
// answers with ErrMessageTimeout. Should anything move that deadline again, the connection is
// closed a second later. Time spent between messages (an idle client) never counts.
type MessageTimer struct {
	conn    net.Conn
	timeout time.Duration

	mu      sync.Mutex
	timer   *time.Timer
	armed   bool
	expired bool
}

// closeGrace is how long a woken read may stay blocked before the connection is closed.
const closeGrace = time.Second

// NewMessageTimer returns a timer for messages read from c.
func NewMessageTimer(c net.Conn, timeout time.Duration) *MessageTimer {
	if timeout <= 0 {
		timeout = MessageTimeoutDefault
	}
	return &MessageTimer{conn: c, timeout: timeout}
}

// Begin starts the clock for the current message, unless it runs already.
func (m *MessageTimer) Begin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.armed || m.expired {
		return
	}
	m.armed = true
	if m.timer == nil {
		m.timer = time.AfterFunc(m.timeout, m.fire)
	} else {
		m.timer.Reset(m.timeout)
	}
}

// End stops the clock: the message is whole.
func (m *MessageTimer) End() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.armed && !m.expired {
		m.armed = false
		m.timer.Stop()
	}
}

// Expired reports whether a message took longer than the timeout.
func (m *MessageTimer) Expired() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.expired
}

// Stop releases the timer when the connection ends.
func (m *MessageTimer) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.armed = false
	if m.timer != nil {
		m.timer.Stop()
	}
}

func (m *MessageTimer) fire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case !m.armed:
	case !m.expired:
		m.expired = true
		_ = m.conn.SetReadDeadline(time.Now())
		m.timer.Reset(closeGrace)
	default:
		_ = m.conn.Close()
	}
}

// Timeout is the timer's bound.
func (m *MessageTimer) Timeout() time.Duration { return m.timeout }

// ErrMessageTimeout is a read ended because a message did not arrive whole in time.
var ErrMessageTimeout = errors.New("a message did not arrive whole in time")

// MessageTimeoutError names the bound in a client's message.
func MessageTimeoutError(timeout time.Duration) error {
	return fmt.Errorf("%w: a message begun was not complete within %s", ErrMessageTimeout, timeout)
}

// BodyTimeout gives every request body of h timeout to arrive whole, counted from when the
// handler starts: a client sending a body slowly, or half of one, gets a read error
// (os.ErrDeadlineExceeded) in the handler, and its connection closes once answered, instead of
// holding the connection. Requests without a body, and the time after a body ended (a long
// poll), are not bounded.
func BodyTimeout(h http.Handler, timeout time.Duration) http.Handler {
	if timeout <= 0 {
		timeout = MessageTimeoutDefault
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
				r.Body = &timedBody{ReadCloser: r.Body, rc: rc}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// timedBody lifts the body's deadline once the body ended, so that net/http's watch for the
// client going away, which reads on after the body, is not cut short. A body that failed (its
// deadline passed, the client went) keeps it: net/http reads what is left of a body before it
// answers, to reuse the connection, and with the deadline lifted a client that stopped half-way
// held the connection and its handler for ever; with it kept, that read fails and the
// connection closes once answered.
type timedBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	ended bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.ended {
		b.ended = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
