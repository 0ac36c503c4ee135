package pgwire

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/node/proxy"
)

// Watching the other side while one side is awaited:
//   - while a statement runs long on the engine (forwarded, or on the Arrow path: watchSlow),
//     the client's socket is watched, so a client that hangs up gets its statement cancelled
//     at once (DuckDB interrupts its query, PostgreSQL gets a cancel request) and its slot
//     freed, rather than when its rows are sent;
//   - while a session-mode client is idle, the engine connection is watched, so notifications
//     (LISTEN) and notices reach the client without its next statement, as from PostgreSQL.

// engineQuietAfter is how long the engine may be silent before the client's socket is watched
// (shorter statements never start a watcher).
const engineQuietAfter = 500 * time.Millisecond

// clientReader is the client's stream as pgproto3 reads it; a watcher may have read ahead.
// It hands pgproto3 no more than the rest of the client's current message per read, so that
// pgproto3's own buffer never holds the client's next message: what the client sent ahead
// stays here (ahead), where the event loop can take it (loop.go).
type clientReader struct {
	nc    net.Conn
	ahead []byte
	err   error
	typed bool // after the startup packet: messages have a type byte before their length
	left  int  // bytes of the current message not yet handed on

	// After login (loggedIn): a message larger than wholeAbove arrives whole here before
	// pgproto3 sees its header (pgproto3 sizes its buffer from the header, so 5 bytes would
	// cost the declared size), up to bodyMax; and a message begun must be whole within msg's
	// timeout.
	msg     *netlimit.MessageTimer
	bodyMax int
	// A message held whole is counted in the daemon's messages in flight while it is:
	// a thousand clients each sending 64 MiB at once would otherwise exhaust the host.
	pool     *heldmem.Pool
	inFlight int
	// refuseParse, once logged in, says from its header whether a large Parse would be refused
	// for what its connection may hold (unnamed: its statement name is empty): such a message
	// is read past and dropped, never held, decoded or scanned, and Read returns
	// *unreadMessage instead.
	refuseParse func(bodyLen int, unnamed bool) error
}

// unreadMessage is a message refused from its header and dropped unread.
type unreadMessage struct{ err error }

func (u *unreadMessage) Error() string { return u.err.Error() }
func (u *unreadMessage) Unwrap() error { return u.err }

// wholeAbove is the message size past which a message is held until it arrived whole.
const wholeAbove = 16 << 10

// messagesHeldWhole counts messages held until whole, for tests to wait on.
var messagesHeldWhole atomic.Int64

func (r *clientReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		hl := 4
		if r.typed {
			hl = 5
		}
		r.fill(hl)
		if len(r.ahead) >= hl {
			// pgproto3 refuses a length shorter than its header itself.
			r.left = max(hl-4+int(binary.BigEndian.Uint32(r.ahead[hl-4:hl])), hl)
			if r.msg != nil && r.left > wholeAbove && r.left-hl <= r.bodyMax {
				if err := r.refusedUnread(hl); err != nil {
					return 0, err
				}
				if err := r.pool.Take(r.left); err != nil {
					return 0, err
				}
				r.inFlight = r.left
				messagesHeldWhole.Add(1)
				r.fill(r.left)
			}
		}
	}
	if r.left > 0 && len(p) > r.left {
		p = p[:r.left]
	}
	n, err := r.read(p)
	r.left = max(r.left-n, 0)
	if r.msg != nil && r.left == 0 && n > 0 {
		r.msg.End()
		r.giveBack()
	}
	return n, err
}

// refusedUnread asks refuseParse about the message whose header is ahead (hl bytes); a refused
// message is read past, and its refusal returned.
func (r *clientReader) refusedUnread(hl int) error {
	if r.refuseParse == nil || r.ahead[0] != 'P' {
		return nil
	}
	r.fill(hl + 1)
	if len(r.ahead) <= hl {
		return nil // the read's own error follows
	}
	err := r.refuseParse(r.left-hl, r.ahead[hl] == 0)
	if err == nil {
		return nil
	}
	if err := r.skip(r.left); err != nil {
		return err
	}
	return &unreadMessage{err}
}

// skipChunkBytes is the most a dropped message costs at once.
const skipChunkBytes = 64 << 10

// skip reads past n bytes of the client's stream without keeping them (a message begun: the
// message timeout runs).
func (r *clientReader) skip(n int) error {
	from := min(n, len(r.ahead))
	r.consume(from)
	n -= from
	var buf []byte
	for n > 0 {
		if r.err != nil {
			err := r.err
			r.err = nil
			return err
		}
		if buf == nil {
			buf = make([]byte, min(n, skipChunkBytes))
		}
		m, err := r.socketRead(buf[:min(n, len(buf))])
		n -= m
		r.err = err
	}
	r.left = 0
	r.msg.End()
	return nil
}

// giveBack ends the count of the message held whole (it was read, or the connection ends).
func (r *clientReader) giveBack() {
	if r.inFlight > 0 {
		r.pool.Give(r.inFlight)
		r.inFlight = 0
	}
}

// loggedIn bounds the messages of a logged-in client (see clientReader.msg).
func (r *clientReader) loggedIn(bodyMax int, timeout time.Duration, pool *heldmem.Pool) {
	r.bodyMax, r.pool = bodyMax, pool
	r.msg = netlimit.NewMessageTimer(r.nc, timeout)
}

// fill reads until n bytes are ahead (or an error), growing with what arrives.
func (r *clientReader) fill(n int) {
	for len(r.ahead) < n && r.err == nil {
		if free := cap(r.ahead) - len(r.ahead); free < 4096 {
			r.ahead = slices.Grow(r.ahead, min(max(n-len(r.ahead), 4096), 1<<20))
		}
		m, err := r.socketRead(r.ahead[len(r.ahead):cap(r.ahead)])
		r.ahead = r.ahead[:len(r.ahead)+m]
		r.err = err
	}
}

// socketRead reads the socket; once logged in, a read waiting for more of a message begun
// runs against the message timeout.
func (r *clientReader) socketRead(p []byte) (int, error) {
	if r.msg == nil {
		return r.nc.Read(p)
	}
	if r.left > 0 || len(r.ahead) > 0 {
		r.msg.Begin()
	}
	n, err := r.nc.Read(p)
	if err != nil && r.msg.Expired() {
		err = netlimit.MessageTimeoutError(r.msg.Timeout())
	}
	return n, err
}

func (r *clientReader) read(p []byte) (int, error) {
	if len(r.ahead) > 0 {
		n := copy(p, r.ahead)
		r.consume(n)
		return n, nil
	}
	if r.err != nil {
		err := r.err
		r.err = nil
		return 0, err
	}
	return r.socketRead(p)
}

// aheadKeptBytes is the largest buffer ahead keeps once it is empty: the buffer a large
// message arrived in would otherwise stay with an idle connection, its tail reused for the
// next messages (one 64 MiB statement, then small ones for hours).
const aheadKeptBytes = 64 << 10

// consume takes n bytes off ahead.
func (r *clientReader) consume(n int) {
	r.ahead = r.ahead[n:]
	if len(r.ahead) == 0 && cap(r.ahead) > aheadKeptBytes {
		r.ahead = nil
	}
}

// watchClient reads the client's socket until stop; a client that hung up has onGone called.
// What it reads is kept for the next Receive.
func (c *conn) watchClient(onGone func()) (stop func()) {
	r := c.cr
	var stopping atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf [512]byte
		n, err := r.nc.Read(buf[:])
		r.ahead = append(r.ahead, buf[:n]...)
		if err == nil || stopping.Load() && isTimeout(err) {
			return
		}
		r.err = err
		onGone()
	}()
	return func() {
		stopping.Store(true)
		_ = r.nc.SetReadDeadline(time.Now())
		<-done
		_ = r.nc.SetReadDeadline(time.Time{})
	}
}

// watchSlow watches the client's socket once a statement on the Arrow path has run for
// engineQuietAfter, calling cancel if the client hangs up. stop ends the watch; it must be
// called before the client is read again.
func (c *conn) watchSlow(cancel context.CancelFunc) (stop func()) {
	var mu sync.Mutex
	var unwatch func()
	stopped := false
	timer := time.AfterFunc(engineQuietAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			unwatch = c.watchClient(cancel)
		}
	})
	return func() {
		timer.Stop()
		mu.Lock()
		stopped = true
		w := unwatch
		mu.Unlock()
		if w != nil {
			w()
		}
	}
}

// watchEngine relays what an idle session-mode engine connection says (notifications,
// notices, parameter changes) until stop.
func (c *conn) watchEngine() (stop func()) {
	ws := c.wire
	var stopping atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := ws.conn.Next()
			if err != nil {
				if !stopping.Load() || !isTimeout(err) {
					ws.broken = true
				}
				return
			}
			switch msg[0] {
			case 'A', 'N', 'S', 'E': // an error here is the engine ending the session (FATAL)
				c.be.Send(rawMessage(msg))
				if c.be.Flush() != nil {
					return
				}
			default:
				ws.broken = true
				return
			}
		}
	}()
	return func() {
		stopping.Store(true)
		_ = ws.conn.SetReadDeadline(time.Now())
		<-done
		_ = ws.conn.SetReadDeadline(time.Time{})
	}
}

// receive reads the client's next message; an idle session-mode client's engine connection
// is watched meanwhile.
func (c *conn) receive() (pgproto3.FrontendMessage, error) {
	ws := c.wire
	if ws == nil || ws.w.PoolMode != proxy.PoolModeSession || len(ws.queue) != 0 || ws.broken {
		return c.be.Receive()
	}
	stop := c.watchEngine()
	msg, err := c.be.Receive()
	stop()
	return msg, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
