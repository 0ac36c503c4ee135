package mysqlengine

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// Passthrough (issue 10): the MySQL frontend relays a COM_QUERY's result packets (column
// definitions and text-protocol rows) as the engine sent them, never decoding them into Arrow.
// RawQuery reads those packets off the pooled connection for it; the reading happens on the
// caller's goroutine, so a relayed query costs no goroutine and no channel hand-off.

// RawQuery is one COM_QUERY in flight on a pooled connection, read packet by packet by the
// caller. Call Close exactly once when done; it gives the connection back.
type RawQuery struct {
	e        *Engine
	conn     *client.Conn
	sql      string
	ctx      context.Context
	stopKill func() bool // unregisters the cancel hook; false once it has fired

	columns   [][]byte // column definition packets, each with 4 bytes of header room
	result    mysql.Result
	done      bool  // the terminating EOF/OK (or an error) has been read
	err       error // a broken read or write: the connection is unfit
	engineErr error // the engine's ERR packet: the command ended cleanly
	healthy   bool  // the connection is fit for the pool once done
}

// QueryRaw sends q.SQL as a COM_QUERY on a pooled connection (in q's database) and reads the
// response head: for a statement without rows the OK (Result), else the column definitions
// (Columns). The engine's errors come back wrapped as Execute wraps them. Cancelling ctx kills
// the statement on the server (KILL QUERY from another connection).
func (e *Engine) QueryRaw(ctx context.Context, q *query.Request) (*RawQuery, error) {
	c, err := e.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if db := requestDatabase(q); db != "" && db != c.GetDB() {
		if err := c.UseDB(db); err != nil {
			e.release(c, true)
			return nil, e.wrap(err)
		}
	}
	r := &RawQuery{e: e, conn: c, sql: q.SQL, ctx: ctx, healthy: !changesSession(q.SQL)}
	id := c.GetConnectionID()
	r.stopKill = context.AfterFunc(ctx, func() { e.kill(id) })
	if err := r.start(); err != nil {
		r.fail(err)
	}
	if r.err != nil || r.engineErr != nil {
		return nil, r.Close()
	}
	return r, nil
}

// start writes the command and reads up to the first row.
func (r *RawQuery) start() error {
	c := r.conn
	c.ResetSequence()
	buf := make([]byte, 5, 7+len(r.sql))
	buf[4] = mysql.COM_QUERY
	if r.e.negotiated(c)&capsQueryAttributes != 0 {
		buf = append(buf, 0, 1) // no query attributes, one parameter set (MySQL 8.0.23+)
	}
	buf = append(buf, r.sql...)
	if err := c.WritePacket(buf); err != nil {
		return err
	}
	head, err := c.ReadPacketReuseMem(buf[:0])
	if err != nil {
		return err
	}
	switch head[0] {
	case mysql.OK_HEADER:
		r.finishOK(head)
		return nil
	case mysql.ERR_HEADER:
		r.done = true // the command is over; the connection is clean
		r.engineErr = c.HandleErrorPacket(head)
		return nil
	case mysql.LocalInFile_HEADER:
		return errors.New("LOAD DATA LOCAL INFILE is not supported through queryflux")
	}
	n, _, size := mysql.LengthEncodedInt(head)
	if size != len(head) || n == 0 {
		return mysql.ErrMalformPacket
	}
	r.columns = make([][]byte, n)
	for i := range r.columns {
		p, err := c.ReadPacketReuseMem(make([]byte, 4, 64))
		if err != nil {
			return err
		}
		if p[4] == mysql.ERR_HEADER {
			return c.HandleErrorPacket(p[4:])
		}
		r.columns[i] = p
	}
	if !r.e.deprecatesEOF(c) {
		p, err := c.ReadPacketReuseMem(buf[:0])
		if err != nil {
			return err
		}
		if p[0] != mysql.EOF_HEADER {
			return mysql.ErrMalformPacket
		}
	}
	return nil
}

// Negotiated capabilities the relay must honour, cached per engine in Engine.caps: every
// connection to one server negotiates the same.
const (
	capsKnown int32 = 1 << iota
	capsDeprecateEOF
	capsQueryAttributes
)

func (e *Engine) negotiated(c *client.Conn) int32 {
	if caps := e.caps.Load(); caps != 0 {
		return caps
	}
	names := "|" + c.CapabilityString() + "|"
	caps := capsKnown
	if strings.Contains(names, "|CLIENT_DEPRECATE_EOF|") {
		caps |= capsDeprecateEOF
	}
	if strings.Contains(names, "|CLIENT_QUERY_ATTRIBUTES|") {
		caps |= capsQueryAttributes
	}
	e.caps.Store(caps)
	return caps
}

// deprecatesEOF reports whether c's result sets end with an OK packet rather than EOFs.
func (e *Engine) deprecatesEOF(c *client.Conn) bool {
	return e.negotiated(c)&capsDeprecateEOF != 0
}

// Columns are the result set's column definition packets, each behind 4 bytes of header room
// (for the caller's WritePacket, which fills them in). Nil for a statement without rows.
func (r *RawQuery) Columns() [][]byte { return r.columns }

// NextRow reads the next text-protocol row packet into buf (which must hold the 4 header bytes
// the row packet is appended after) and returns it; ok is false at the end of the rows or on
// an error (Close reports it).
func (r *RawQuery) NextRow(buf []byte) (row []byte, ok bool) {
	if r.done {
		return nil, false
	}
	p, err := r.conn.ReadPacketReuseMem(buf[:4])
	if err != nil {
		r.fail(err)
		return nil, false
	}
	data := p[4:]
	switch {
	case data[0] == mysql.EOF_HEADER && len(data) < 0xffffff:
		r.finishEOF(data)
		return nil, false
	case data[0] == mysql.ERR_HEADER:
		r.done = true // an ERR ends the command cleanly
		r.engineErr = r.conn.HandleErrorPacket(data)
		return nil, false
	}
	return p, true
}

// finishEOF reads the status of the packet ending the rows: an EOF, or (CLIENT_DEPRECATE_EOF)
// an OK with the EOF header.
func (r *RawQuery) finishEOF(data []byte) {
	if r.e.deprecatesEOF(r.conn) {
		r.finishOK(data)
		return
	}
	r.done = true
	if len(data) >= 5 {
		r.result.Warnings = binary.LittleEndian.Uint16(data[1:])
		r.result.Status = binary.LittleEndian.Uint16(data[3:])
	}
	r.checkStatus()
}

func (r *RawQuery) finishOK(data []byte) {
	r.done = true
	ok := r.conn.HandleOKPacket(data)
	if ok == nil {
		r.fail(mysql.ErrMalformPacket)
		return
	}
	r.result.AffectedRows, r.result.InsertId = ok.AffectedRows, ok.InsertId
	r.result.Warnings, r.result.Status = ok.Warnings, ok.Status
	r.checkStatus()
}

// checkStatus: the relay reads one result set; more (CALL, multi-statements) would leave
// packets unread, and a transaction left open must not go back to the pool.
func (r *RawQuery) checkStatus() {
	if r.result.Status&mysql.SERVER_MORE_RESULTS_EXISTS != 0 {
		r.fail(errors.New("mysqlengine: statement returned more than one result set"))
	}
	if r.result.Status&mysql.SERVER_STATUS_IN_TRANS != 0 {
		r.healthy = false
	}
}

func (r *RawQuery) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.healthy = false
}

// Result is the OK of a statement without rows (affected rows, insert id, warnings, status),
// or the status that ended the rows. Valid once NextRow returned false.
func (r *RawQuery) Result() *mysql.Result { return &r.result }

// Close gives the connection back (closed instead when rows were left unread, the statement
// failed midway, its cancel fired, or it left session state) and returns the statement's
// error: the engine's (wrapped as Execute wraps it), or the context's when it was cancelled.
func (r *RawQuery) Close() error {
	if r.conn == nil {
		panic("mysqlengine: RawQuery closed twice")
	}
	if !r.stopKill() {
		r.healthy = false // a KILL QUERY may still be on its way to this connection
	}
	if !r.done {
		r.healthy = false
	}
	r.e.release(r.conn, r.healthy)
	r.conn = nil
	err := r.err
	if err == nil {
		err = r.engineErr
	}
	if err != nil {
		if ctxErr := r.ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return r.e.wrap(err)
	}
	return nil
}
