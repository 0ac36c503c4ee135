package pgwire

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

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
}

func (r *clientReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		hl := 4
		if r.typed {
			hl = 5
		}
		for len(r.ahead) < hl && r.err == nil {
			var buf [4096]byte
			n, err := r.nc.Read(buf[:])
			r.ahead = append(r.ahead, buf[:n]...)
			r.err = err
		}
		if len(r.ahead) >= hl {
			// pgproto3 refuses a length shorter than its header itself.
			r.left = max(hl-4+int(binary.BigEndian.Uint32(r.ahead[hl-4:hl])), hl)
		}
	}
	if r.left > 0 && len(p) > r.left {
		p = p[:r.left]
	}
	n, err := r.read(p)
	r.left = max(r.left-n, 0)
	return n, err
}

func (r *clientReader) read(p []byte) (int, error) {
	if len(r.ahead) > 0 {
		n := copy(p, r.ahead)
		r.ahead = r.ahead[n:]
		return n, nil
	}
	if r.err != nil {
		err := r.err
		r.err = nil
		return 0, err
	}
	return r.nc.Read(p)
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
