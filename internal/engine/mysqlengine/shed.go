package mysqlengine

import (
	"context"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// A server's own connection limit (max_connections, an engine user's MAX_USER_CONNECTIONS)
// may be lower than the engine's MaxConns, and a connection sitting idle in one of the
// engine's lists (a pooled connection of one set of client flags, a loop connection, one a
// client holds between its statements) counts against it as one that runs: a connection the
// proxy's describe path (a database check, a COM_STMT_PREPARE) left idle in the pool would
// then refuse the client's next statement its loop connection, and a statement's idle loop
// connection the next describe. A dial the server refuses for its limit sheds an idle
// connection (closed with COM_QUIT, its end awaited, so the server has counted it out) and is
// tried again, while any is idle or held. With none, it is tried again for shedWait: a
// connection that was just closed (a health check's own, a client's that left, another
// process's) still counts at the server until its thread has seen the close.

// shedWait bounds the wait for the server to end a shed connection, for a held one to be
// given back, and for a dial refused with nothing to shed.
const shedWait = time.Second

// limitRetryPause spaces the dials tried again while nothing can be shed.
const limitRetryPause = 20 * time.Millisecond

// makeRoom is asked after the server refused a dial for its connection limit, first at
// refused: true when the dial is worth trying again, an idle connection shed or, with none,
// after a pause within shedWait of the first refusal.
func (e *Engine) makeRoom(ctx context.Context, refused time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	if e.shedIdle() {
		return true
	}
	if time.Since(refused) >= shedWait {
		return false
	}
	pause := time.NewTimer(limitRetryPause)
	defer pause.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-pause.C:
		return true
	}
}

// atConnectionLimit: err is the server refusing a login for its connection limit.
func atConnectionLimit(err error) bool {
	me, ok := serverError(err)
	if !ok {
		return false
	}
	switch me.Code {
	case mysql.ER_CON_COUNT_ERROR, mysql.ER_TOO_MANY_USER_CONNECTIONS, mysql.ER_USER_LIMIT_REACHED:
		return true
	}
	return false
}

// shedIdle closes one idle connection of the engine's (any list), asking the clients that hold
// loop connections idle to give them back when none is: false when there was none to close.
func (e *Engine) shedIdle() bool {
	deadline := time.Now().Add(shedWait)
	for asked := false; ; asked = true {
		if c := e.takeIdle(); c != nil {
			quitAndWait(c, deadline)
			return true
		}
		if asked && time.Now().After(deadline) || e.Held() == 0 {
			return false
		}
		if !asked {
			e.reclaimHeld() // given back on their loops, soon: to loopIdle
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// takeIdle removes one idle connection from the engine's lists, nil when none is idle.
func (e *Engine) takeIdle() *client.Conn {
	e.mu.Lock()
	defer e.mu.Unlock()
	for f := range e.idle {
		if n := len(e.idle[f]); n > 0 {
			c := e.idle[f][n-1]
			e.idle[f] = e.idle[f][:n-1]
			delete(e.stmts, c)
			return c
		}
	}
	for f := range e.loopIdle {
		if n := len(e.loopIdle[f]); n > 0 {
			lc := e.loopIdle[f][n-1]
			e.loopIdle[f] = e.loopIdle[f][:n-1]
			return lc.c
		}
	}
	return nil
}

// quitAndWait sends c COM_QUIT and reads until the server closes it (or deadline), then closes
// it: once the server has closed the connection, it no longer counts it against its limits.
func quitAndWait(c *client.Conn, deadline time.Time) {
	defer c.Close()
	var nc net.Conn = c.Conn.Conn
	if nc == nil || c.Compression != mysql.MYSQL_COMPRESS_NONE {
		return
	}
	if nc.SetDeadline(deadline) != nil {
		return
	}
	if _, err := nc.Write([]byte{1, 0, 0, 0, mysql.COM_QUIT}); err != nil {
		return
	}
	var b [64]byte
	for {
		if _, err := nc.Read(b[:]); err != nil {
			return
		}
	}
}
