package mysqlwire

import (
	"bufio"
	"encoding/binary"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Server-side cursors (COM_STMT_EXECUTE's cursor flag, then COM_STMT_FETCH), as MariaDB keeps
// them: libmariadb asks for one with STMT_ATTR_CURSOR_TYPE, and its fallback for a server that
// opens none fails (mysql_stmt_store_result runs before the client is ready for the rows:
// 2014, commands out of sync), so declining the flag is no answer. The execution runs as any
// other; its binary result, written to a buffer instead of the client, is kept whole (MariaDB
// materializes a cursor's result too) and the client gets its column definitions with
// SERVER_STATUS_CURSOR_EXISTS (and the statement's index flags, as MariaDB marks them there);
// each COM_STMT_FETCH then writes the next rows, and the fetch that finds fewer left than it
// asks for answers SERVER_STATUS_LAST_ROW_SEND and closes the cursor. A result past
// cursorBytesMax, several results, an error or an OK go to the client as they came: no cursor.
// A client's CLIENT_DEPRECATE_EOF is never in force (the greeting does not offer it: server.go),
// so the column EOF to mark is always there.

// cursorTypeReadOnly is COM_STMT_EXECUTE's flag asking for a cursor (CURSOR_TYPE_READ_ONLY).
const cursorTypeReadOnly = 1

// cursorBytesMax bounds a cursor's result kept in the proxy, per statement.
const cursorBytesMax = 64 << 20

// cursor is an open cursor's rows (whole packets) and the warnings of its result.
type cursor struct {
	rows     [][]byte
	warnings uint16
	held     int // bytes counted against the session's budget (the buffer rows lie in)
}

// closeCursor drops st's cursor and gives its bytes back.
func (h *session) closeCursor(st *prepared) {
	if st.cursor != nil {
		h.heldBytes.Give(st.cursor.held)
		st.cursor = nil
	}
}

// capture is the session's writer while an execution's result may become a cursor: it keeps
// what is written, up to cursorBytesMax; past it, all goes on to the client.
type capture struct {
	kept    []byte
	max     int // cursorBytesMax, or less: what the session's budget has room for
	client  *bufio.Writer
	spilled bool
	// overBudget: the result passed max below cursorBytesMax; the rest is dropped and the
	// execute refused, as MariaDB refuses a statement past its max_session_mem_used (a result
	// sent without its cursor would fail libmariadb: see above).
	overBudget bool
}

func (c *capture) Write(p []byte) (int, error) {
	if c.overBudget {
		return len(p), nil
	}
	if !c.spilled && len(c.kept)+len(p) <= c.max {
		c.kept = append(c.kept, p...)
		return len(p), nil
	}
	if !c.spilled && c.max < cursorBytesMax {
		c.overBudget, c.kept = true, nil
		return len(p), nil
	}
	if !c.spilled {
		c.spilled = true
		if _, err := c.client.Write(c.kept); err != nil {
			return 0, err
		}
		c.kept = nil
	}
	return c.client.Write(p)
}

// executeWithCursor runs an execution that asked for a cursor and opens one on its result.
func (h *session) executeWithCursor(st *prepared, bin *binParams) (*mysql.Result, error) {
	client := h.out.w
	c := &capture{client: client, max: int(min(cursorBytesMax, h.heldBytes.Room()))}
	seq := h.conn.Sequence
	h.out.w = bufio.NewWriterSize(c, 32<<10)
	res, err := h.run(st.sql, bin)
	ferr := h.out.w.Flush()
	h.out.w = client
	if ferr != nil {
		return nil, ferr
	}
	if c.overBudget {
		h.conn.Sequence = seq // the error is the answer's first packet
		return nil, h.heldRefused(h.heldBytes.Refusal(c.max + 1))
	}
	if c.spilled || len(c.kept) == 0 {
		return res, err
	}
	cur, head, ok := openCursor(c.kept)
	if !ok {
		_, werr := client.Write(c.kept)
		if werr != nil {
			return nil, werr
		}
		return res, err
	}
	// Kept until fetched: counted as the session's statements are (16,382 statements of
	// cursorBytesMax each would be a terabyte).
	if herr := h.takeHeld(cap(c.kept)); herr != nil {
		return nil, herr
	}
	cur.held = cap(c.kept)
	st.cursor = cur
	if _, werr := client.Write(head); werr != nil {
		return nil, werr
	}
	return res, err
}

// openCursor splits a written binary result (column count, definitions, EOF, rows, EOF) into
// the head the client gets now, its EOF marked SERVER_STATUS_CURSOR_EXISTS, and the cursor's
// rows; ok is false for anything else.
func openCursor(b []byte) (cur *cursor, head []byte, ok bool) {
	var packets [][]byte
	for at := 0; at < len(b); {
		if len(b)-at < 4 || len(b)-at < 4+packetLen(b[at:]) {
			return nil, nil, false
		}
		n := 4 + packetLen(b[at:])
		packets = append(packets, b[at:at+n])
		at += n
	}
	if len(packets) < 3 {
		return nil, nil, false
	}
	cols, ok := columnCount(packets[0][4:])
	if !ok || len(packets) < cols+3 || !isEOFPacket(packets[cols+1]) || !isEOFPacket(packets[len(packets)-1]) {
		return nil, nil, false
	}
	end := packets[len(packets)-1]
	status, warnings := eofStatus(end[4:])
	if status&mysql.SERVER_MORE_RESULTS_EXISTS != 0 {
		return nil, nil, false
	}
	rows := packets[cols+2 : len(packets)-1]
	for _, r := range rows {
		if len(r) < 5 || r[4] != mysql.OK_HEADER || packetLen(r) == maxPayload {
			return nil, nil, false // an error after rows, or a row in several packets
		}
	}
	eof := packets[cols+1]
	eof[7] |= byte(mysql.SERVER_STATUS_CURSOR_EXISTS | status&(mysql.SERVER_STATUS_NO_GOOD_INDEX_USED|mysql.SERVER_STATUS_NO_INDEX_USED))
	return &cursor{rows: rows, warnings: warnings}, b[:len(b)-len(end)-rowsLen(rows)], true
}

func isEOFPacket(p []byte) bool { return len(p) == 9 && p[4] == mysql.EOF_HEADER }

func rowsLen(rows [][]byte) int {
	n := 0
	for _, r := range rows {
		n += len(r)
	}
	return n
}

// fetch answers COM_STMT_FETCH: the cursor's next rows, at most the count asked.
func (h *session) fetch(data []byte) any {
	if len(data) < 8 {
		return mysql.ErrMalformPacket
	}
	id := binary.LittleEndian.Uint32(data)
	st := h.stmts[id]
	if st == nil {
		return mysql.NewDefaultError(mysql.ER_UNKNOWN_STMT_HANDLER, 10, strconv.FormatUint(uint64(id), 10), "mysqld_stmt_fetch")
	}
	cur := st.cursor
	if cur == nil {
		return mysql.NewError(mysql.ER_STMT_HAS_NO_OPEN_CURSOR, "The statement ("+strconv.FormatUint(uint64(id), 10)+") has no open cursor")
	}
	asked := binary.LittleEndian.Uint32(data[4:])
	n := int(min(asked, uint32(len(cur.rows))))
	seq := h.conn.Sequence
	for _, r := range cur.rows[:n] {
		r[3] = seq
		seq++
		if _, err := h.out.Write(r); err != nil {
			return err
		}
	}
	h.conn.Sequence = seq
	cur.rows = cur.rows[n:]
	status := h.status() | mysql.SERVER_STATUS_CURSOR_EXISTS
	if uint32(n) < asked { // the end was read, as MariaDB reads it: fewer rows left than asked
		status = h.status() | mysql.SERVER_STATUS_LAST_ROW_SEND
		h.closeCursor(st)
	}
	h.eof = [9]byte{4: mysql.EOF_HEADER, 5: byte(cur.warnings), 6: byte(cur.warnings >> 8), 7: byte(status), 8: byte(status >> 8)}
	if err := h.conn.WritePacket(h.eof[:]); err != nil {
		return err
	}
	return noReply{}
}
