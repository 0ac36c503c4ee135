package mysqlengine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// Passthrough: the MySQL frontend relays a COM_QUERY's result packets (column
// definitions and text-protocol rows) as the engine sent them, never decoding them into Arrow.
// RawQuery reads those packets off the pooled connection for it (packets.go); the reading
// happens on the caller's goroutine, so a relayed query costs no goroutine and no channel
// hand-off, and its rows come in runs, as many as one read brought.

// RawQuery is one COM_QUERY in flight on a pooled connection, read by the caller. Call Close
// exactly once when done; it gives the connection back. What Columns, Head and NextRows
// return is valid until Close (NextRows': until the next call).
type RawQuery struct {
	e        *Engine
	conn     *client.Conn
	sql      string
	tag      string // the engine tag of the query's capacity lease, written before sql ("": none)
	ctx      context.Context
	stopKill func() bool // unregisters the cancel hook; false once it has fired
	killed   onceKill    // the statement's kill, run by the cancel hook or by Close
	buf      *relayBuffers
	seq      uint8  // the sequence number of the engine's next packet
	pending  []byte // rows NextRows returned that NextRow has not handed out yet

	columns   [][]byte // column definition packets, headers included; nil without rows
	result    mysql.Result
	done      bool  // the terminating EOF/OK (or an error) has been read
	more      bool  // and another result follows it (a CALL's result sets: NextResult)
	err       error // a broken read or write: the connection is unfit
	engineErr error // the engine's ERR packet: the command ended cleanly
	healthy   bool  // the connection is fit for the pool once done
	warnings  []Warning
	localFile []byte // the file a LOAD DATA LOCAL INFILE asks for, until EndFile
	// classicEOF: the connection was opened without CLIENT_DEPRECATE_EOF (a loop
	// connection, loopconn.go), so result sets end with EOF packets whatever the server offers.
	classicEOF bool
	// emptyMetadata: the client asked for extended metadata and the connection has none
	// (metadata.go), so its column definitions get an empty block each.
	emptyMetadata bool
}

// Warning is one row of SHOW WARNINGS.
type Warning struct {
	Level   string
	Code    uint16
	Message string
}

// QueryRaw sends q.SQL as a COM_QUERY on a pooled connection (in q's database) and reads the
// response head: for a statement without rows the OK (Result), else the column definitions
// (Columns, Head). The engine's errors come back wrapped as Execute wraps them. Cancelling ctx
// kills the statement on the server (KILL QUERY from another connection).
func (e *Engine) QueryRaw(ctx context.Context, q *query.Request) (*RawQuery, error) {
	flags := e.requestFlags(q)
	if q.LocalFiles && LoadsLocalFile(q.SQL) {
		flags |= flagLocalFiles // the server may ask for the client's file: LocalFile
	}
	c, err := e.acquireWith(ctx, q, flags)
	if err != nil {
		return nil, err
	}
	r := &RawQuery{e: e, conn: c, sql: q.SQL, tag: query.EngineTag(ctx), ctx: ctx, buf: getRelayBuffers(), healthy: !changesSession(q.SQL),
		emptyMetadata: q.ExtendedMetadata && !hasMetadata(c)}
	r.stopKill = context.AfterFunc(ctx, r.kill)
	if err := r.start(r.queryPacket()); err != nil {
		r.fail(err)
	}
	if r.err != nil || r.engineErr != nil {
		return nil, r.Close()
	}
	return r, nil
}

// queryPacket frames r's COM_QUERY (the payload after a 4-byte header): its SQL after the
// engine tag's comment.
func (r *RawQuery) queryPacket() []byte {
	out := append(r.buf.out[:0], 0, 0, 0, 0, mysql.COM_QUERY)
	// A loop connection (classicEOF) is only to a server without query attributes, and must
	// not be asked: its negotiation, without CLIENT_DEPRECATE_EOF, is not the engine's.
	if !r.classicEOF && r.e.negotiated(r.conn)&capsQueryAttributes != 0 {
		out = append(out, 0, 1) // no query attributes, one parameter set (MySQL 8.0.23+)
	}
	if r.tag != "" {
		return AppendTag(out, r.tag, r.sql)
	}
	return append(out, r.sql...)
}

// start writes the command (framed with room for its header) and reads up to the first row.
func (r *RawQuery) start(command []byte) error {
	c, b := r.conn, r.buf
	c.ResetSequence()
	b.out = command
	if err := c.WritePacket(b.out); err != nil {
		return err
	}
	r.seq = c.Sequence
	return r.readHead()
}

// readHead reads a result's first packet, and its column definitions when it has rows.
func (r *RawQuery) readHead() error {
	p, err := r.packet()
	if err != nil {
		return err
	}
	switch data := p[4:]; data[0] {
	case mysql.OK_HEADER:
		r.finishOK(data)
		return nil
	case mysql.ERR_HEADER:
		r.done = true // the command is over; the connection is clean
		r.engineErr = r.errorPacket(data)
		r.healthy = r.healthy && !EndsConnection(data)
		return nil
	case mysql.LocalInFile_HEADER:
		r.localFile = append([]byte(nil), data[1:]...)
		return nil
	}
	return r.readColumns(p)
}

// LocalFile is the name of the file the engine asks for (LOAD DATA LOCAL INFILE, on a
// connection opened with the client's CLIENT_LOCAL_FILES: query.Request.LocalFiles), ok true
// until EndFile: the caller asks its client for it, hands its packets to SendFile and ends
// with EndFile, which reads the statement's answer. A RawQuery closed before EndFile aborts
// the statement (its connection is cut and killed): nothing of the file is loaded.
func (r *RawQuery) LocalFile() (name []byte, ok bool) { return r.localFile, r.localFile != nil }

// SendFile sends the engine the next part of the file LocalFile named (any length: packets of
// up to 16 MiB - 1 bytes).
func (r *RawQuery) SendFile(data []byte) error {
	for len(data) > 0 {
		n := min(len(data), maxPayload-1) // never a full packet: the one after it would continue it
		if err := r.writePacket(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// EndFile tells the engine the file has ended (an empty packet) and reads the statement's
// answer: its OK (Result) or error (Close's).
func (r *RawQuery) EndFile() error {
	if err := r.writePacket(nil); err != nil {
		return err
	}
	r.localFile = nil
	if err := r.readHead(); err != nil {
		r.fail(err)
		return err
	}
	return nil
}

// writePacket writes payload to the engine as one packet, in the statement's sequence.
func (r *RawQuery) writePacket(payload []byte) error {
	b := r.buf
	b.out = append(append(b.out[:0], 0, 0, 0, 0), payload...)
	r.conn.Sequence = r.seq
	if err := r.conn.WritePacket(b.out); err != nil {
		r.fail(err)
		return err
	}
	r.seq = r.conn.Sequence
	return nil
}

// readColumns reads the column definitions the column count packet p announces (and the EOF
// after them, unless CLIENT_DEPRECATE_EOF) into the head buffer.
func (r *RawQuery) readColumns(p []byte) error {
	b := r.buf
	n, _, size := mysql.LengthEncodedInt(p[4:])
	if size != len(p)-4 || n == 0 {
		return mysql.ErrMalformPacket
	}
	b.head = append(b.head[:0], p...)
	for range n {
		p, err := r.packet()
		if err != nil {
			return err
		}
		if p[4] == mysql.ERR_HEADER {
			return r.errorPacket(p[4:])
		}
		b.head = append(b.head, p...)
	}
	if r.emptyMetadata {
		b.head = addEmptyMetadata(b.head)
	}
	r.columns = b.cols[:0]
	for at := len(p); at < len(b.head); {
		end := at + 4 + packetLen(b.head[at:])
		r.columns = append(r.columns, b.head[at:end:end])
		at = end
	}
	b.cols = r.columns
	if !r.deprecatesEOF() {
		p, err := r.packet()
		if err != nil {
			return err
		}
		if p[4] != mysql.EOF_HEADER {
			return mysql.ErrMalformPacket
		}
	}
	return nil
}

// packet reads and consumes one packet of the response head (header included): a single
// packet, since nothing before the rows comes near 16 MiB. Valid until the next read.
func (r *RawQuery) packet() ([]byte, error) {
	b := r.buf
	for {
		if avail := b.w - b.r; avail >= 4 {
			n := packetLen(b.in[b.r:])
			if avail >= 4+n {
				p := b.in[b.r : b.r+4+n]
				switch {
				case p[3] != r.seq:
					return nil, errOutOfSync
				case n == 0 || n == maxPayload:
					return nil, mysql.ErrMalformPacket
				}
				b.r += 4 + n
				r.seq++
				return p, nil
			}
			if err := b.read(r.conn, 4+n); err != nil {
				return nil, err
			}
			continue
		}
		if err := b.read(r.conn, 4); err != nil {
			return nil, err
		}
	}
}

var errOutOfSync = errors.New("mysqlengine: packets out of sequence")

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

func (r *RawQuery) deprecatesEOF() bool { return !r.classicEOF && r.e.deprecatesEOF(r.conn) }

// More reports whether another result follows the one read to its end (a CALL's: each result
// set its procedure selects, then its OK).
func (r *RawQuery) More() bool { return r.more && r.err == nil }

// NextResult reads the head of the next result, as QueryRaw read the first: after it, Columns,
// Head, NextRows and Result are the new result's. Call it only when More.
func (r *RawQuery) NextResult() error {
	if !r.More() {
		panic("mysqlengine: NextResult without a result to come")
	}
	r.done, r.more, r.columns, r.pending, r.result = false, false, nil, nil, mysql.Result{}
	if err := r.readHead(); err != nil {
		r.fail(err)
		return err
	}
	if r.engineErr != nil {
		return r.engineErr
	}
	return r.err
}

// Columns are the result set's column definition packets, each with its 4-byte header (the
// engine's; a caller writing them on renumbers it). Nil for a statement without rows.
func (r *RawQuery) Columns() [][]byte { return r.columns }

// Head is the column count packet and the column definition packets, contiguous, headers
// included, as the engine framed them (without the EOF that may follow them).
func (r *RawQuery) Head() []byte { return r.buf.head }

// NextRows returns the next rows, at least one, as the engine framed them: one packet per row
// (a row of 16 MiB or more continues in further packets), 4-byte headers included, as many as
// are buffered; it reads the connection only when none is. The caller may rewrite the
// headers' sequence numbers. ok is false after the last row or on an error (Close reports it).
func (r *RawQuery) NextRows() (rows []byte, ok bool) {
	b := r.buf
	for !r.done {
		end, last, need, err := r.scanRows()
		if err != nil {
			r.fail(err)
			return nil, false
		}
		if end > b.r || last {
			rows, b.r = b.in[b.r:end], end
			if last {
				r.finishRows()
			}
			return rows, len(rows) > 0
		}
		if err := b.read(r.conn, need); err != nil {
			r.fail(err)
			return nil, false
		}
	}
	return nil, false
}

// scanRows walks the whole packets buffered from in[r]: end is where the whole rows among them
// end, last whether the packet at end (whole) ends the rows, need how many bytes from in[r]
// must be buffered to get further. The sequence numbers of the rows up to end are checked.
func (r *RawQuery) scanRows() (end int, last bool, need int, err error) {
	b := r.buf
	at, seq, continued := b.r, r.seq, false
	end = at
	for {
		if b.w-at < 4 {
			return end, false, at + 4 - b.r, nil
		}
		n := packetLen(b.in[at:])
		if b.w-at-4 < n {
			return end, false, at + 4 + n - b.r, nil
		}
		switch {
		case b.in[at+3] != seq:
			return 0, false, 0, errOutOfSync
		case continued:
		case n == 0:
			return 0, false, 0, mysql.ErrMalformPacket
		case b.in[at+4] == mysql.ERR_HEADER, b.in[at+4] == mysql.EOF_HEADER && n < maxPayload:
			return end, true, 0, nil
		}
		at, seq, continued = at+4+n, seq+1, n == maxPayload
		if !continued {
			end, r.seq = at, seq
		}
	}
}

// finishRows consumes the packet that ends the rows (whole at in[r]).
func (r *RawQuery) finishRows() {
	b := r.buf
	n := packetLen(b.in[b.r:])
	data := b.in[b.r+4 : b.r+4+n]
	b.r += 4 + n
	r.seq++
	if data[0] == mysql.ERR_HEADER {
		r.done = true // an ERR ends the command cleanly
		r.engineErr = r.errorPacket(data)
		r.healthy = r.healthy && !EndsConnection(data)
		return
	}
	r.finishEOF(data)
}

// Errors a server sends as it closes the connection, beyond go-mysql's names.
const (
	erConnectionKilled         = 1927 // MariaDB: KILL CONNECTION
	erClientInteractionTimeout = 4031 // MySQL 8: wait_timeout
)

// EndsConnection reports whether an ERR packet (its payload) is one a server sends as it
// closes the connection (killed, shutting down, idle too long): the connection serves no more.
func EndsConnection(payload []byte) bool {
	return len(payload) >= 3 && endsConnection(binary.LittleEndian.Uint16(payload[1:]))
}

// endsConnection reports whether a server error code is one it sends as it closes the
// connection.
func endsConnection(code uint16) bool {
	switch code {
	case erConnectionKilled, erClientInteractionTimeout, mysql.ER_SERVER_SHUTDOWN,
		mysql.ER_ABORTING_CONNECTION, mysql.ER_NEW_ABORTING_CONNECTION:
		return true
	}
	return false
}

// endedCleanly reports whether a statement's error is the server's ERR packet, after which
// the connection serves on: every packet of the command has been read.
func endedCleanly(err error) bool {
	me, ok := serverError(err)
	return ok && !endsConnection(me.Code)
}

// NextRow returns the next row alone, its payload appended to buf[:4] (whole, also when the
// engine sent it in several packets); ok is false at the end of the rows or on an error (Close
// reports it). Do not mix with NextRows.
func (r *RawQuery) NextRow(buf []byte) (row []byte, ok bool) {
	if len(r.pending) == 0 {
		if r.pending, ok = r.NextRows(); !ok {
			return nil, false
		}
	}
	row = buf[:4]
	for {
		n := packetLen(r.pending)
		row = append(row, r.pending[4:4+n]...)
		r.pending = r.pending[4+n:]
		if n < maxPayload {
			return row, true
		}
	}
}

// errorPacket decodes an ERR packet's payload. go-mysql's decoder keeps strings pointing
// into it, so it gets a copy: the buffer is reused.
func (r *RawQuery) errorPacket(data []byte) error {
	return r.conn.HandleErrorPacket(bytes.Clone(data))
}

// finishEOF reads the status of the packet ending the rows: an EOF, or (CLIENT_DEPRECATE_EOF)
// an OK with the EOF header.
func (r *RawQuery) finishEOF(data []byte) {
	if r.deprecatesEOF() {
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

// finishOK reads an OK packet's affected rows, insert id, status, warnings and info (the
// server speaks protocol 4.1: go-mysql's handshake requires it). The info is what mysql2 reads
// an UPDATE's changedRows from ("Rows matched: 2  Changed: 1  Warnings: 0").
func (r *RawQuery) finishOK(data []byte) {
	r.done = true
	affected, _, n := mysql.LengthEncodedInt(data[1:])
	pos := 1 + n
	insertID, _, n := mysql.LengthEncodedInt(data[min(pos, len(data)):])
	pos += n
	if n == 0 || pos+4 > len(data) {
		r.fail(mysql.ErrMalformPacket)
		return
	}
	r.result.AffectedRows, r.result.InsertId = affected, insertID
	r.result.Status = binary.LittleEndian.Uint16(data[pos:])
	r.result.Warnings = binary.LittleEndian.Uint16(data[pos+2:])
	r.result.StatusMessage = OKInfo(data[pos+4:])
	r.checkStatus()
}

// OKInfo is the info of an OK packet, rest the packet's bytes after its status and warnings.
// MySQL and MariaDB write it length-encoded (also to a connection without
// CLIENT_SESSION_TRACK, whose protocol says "the rest of the packet"): read as such when the
// length says so, else as the rest of the packet. A copy: rest may be a read buffer.
func OKInfo(rest []byte) string {
	if len(rest) == 0 {
		return ""
	}
	if info, _, n, err := mysql.LengthEncodedString(rest); err == nil && n == len(rest) {
		return string(info)
	}
	return string(rest)
}

// checkStatus notes whether more results follow (CALL); a transaction left open must not go
// back to the pool.
func (r *RawQuery) checkStatus() {
	r.more = r.result.Status&mysql.SERVER_MORE_RESULTS_EXISTS != 0
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

// Warnings are the statement's warnings, read from its connection (SHOW WARNINGS) before it
// went back to the pool. Valid after Close.
func (r *RawQuery) Warnings() []Warning { return r.warnings }

// Result is the OK of a statement without rows (affected rows, insert id, warnings, status),
// or the status that ended the rows. Valid once NextRows returned false.
func (r *RawQuery) Result() *mysql.Result { return &r.result }

// Close gives the connection back (closed instead when rows were left unread, the statement
// failed midway, its cancel fired, or it left session state) and returns the statement's
// error: the engine's (wrapped as Execute wraps it), or the context's when it was cancelled.
// A statement whose answer was left unread, or whose cancel fired, is stopped on the server
// first, and Close returns once it no longer runs there (kill): its slot is not given back
// while it still runs.
func (r *RawQuery) Close() error {
	if r.conn == nil {
		panic("mysqlengine: RawQuery closed twice")
	}
	cancelled := !r.stopKill()
	unread := (!r.done || r.more) && r.err == nil // the statement may still be sending its answer, or await a file
	if unread {
		cut(r.conn) // a server thread blocked writing the rest fails at once
	}
	if cancelled || unread {
		r.kill() // or wait for the cancel hook's
		r.healthy = false
	}
	if !r.done || r.more || r.buf.buffered() {
		r.healthy = false // unread packets, or bytes the server should not have sent
	}
	r.conn.Sequence = r.seq
	if r.healthy && r.result.Warnings > 0 {
		r.warnings, r.healthy = warningsOf(r.e, r.conn, r.classicEOF)
	}
	r.e.release(r.conn, r.healthy)
	putRelayBuffers(r.buf)
	r.conn, r.buf, r.columns, r.pending = nil, nil, nil, nil
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

func (r *RawQuery) kill() { r.killed.kill(r.e, r.conn) }
