package mysqlwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Prepared statements. A COM_STMT_EXECUTE's parameters are read here as the binary protocol
// encodes them: relayed to a MySQL-protocol engine as they came (re-framed only), decoded into
// Go values for the other engines. Every type is decoded exactly: integers with their
// signedness, DECIMAL as its text, DATE/DATETIME/TIMESTAMP as a time.Time when the calendar has
// the value and as MySQL's own text otherwise ('0000-00-00', '2024-00-00'), TIME as its text
// (it spans ±838 hours), BLOB/BIT/GEOMETRY as bytes, the rest as strings.

// prepared is one client statement.
type prepared struct {
	sql    string
	params int
	types  []byte         // the parameter types last bound: a client may send them on its first execute only
	long   map[int][]byte // COM_STMT_SEND_LONG_DATA per parameter, until the statement runs or is reset
	// longRefused: a chunk went past the session's long-data budget (max_allowed_packet, or
	// what the session may hold); the next execute fails with it (as MySQL reports a parameter
	// longer than max_allowed_packet) and the data is dropped.
	longRefused error
	held        int     // bytes of the statement counted against the session's budget (heldBytes)
	cursor      *cursor // the cursor its last execution opened, until fetched to its end (cursor.go)
}

var errLongDataTooLong = mysql.NewError(mysql.ER_UNKNOWN_ERROR,
	"Parameter of prepared statement which is set through mysql_send_long_data() is longer than 'max_allowed_packet' bytes")

// stmtsMax bounds a session's open statements (MySQL's max_prepared_stmt_count default).
const stmtsMax = 16382

// What a session holds is counted in bytes too (heldmem): its statements' texts and their long
// data, against the connection's budget and the daemon's. stmtOverheadBytes stands for a
// statement's own structures.
const stmtOverheadBytes = 128

// takeHeld counts n bytes more held by the session, or refuses them as MariaDB refuses a
// statement past its max_session_mem_used (1290), or for the daemon's bound, past which MariaDB
// would be out of memory (1041). The session goes on.
func (h *session) takeHeld(n int) error {
	if err := h.heldBytes.Take(n); err != nil {
		return h.heldRefused(err)
	}
	return nil
}

// heldRefused counts a refusal of the held-bytes budget and says it as MariaDB would.
func (h *session) heldRefused(err *heldmem.Error) error {
	if err == nil { // the room came back meanwhile: say what was refused anyway
		err = &heldmem.Error{Held: h.heldBytes.Used()}
	}
	code, bound := uint16(mysql.ER_OPTION_PREVENTS_STATEMENT), "held_bytes"
	if err.Daemon {
		code, bound = mysql.ER_OUT_OF_RESOURCES, "daemon_held_bytes"
	}
	h.s.refusals.WithLabelValues("mysqlwire", bound).Inc()
	return mysql.NewError(code, err.Error())
}

// refuseUnread is the packet gate's refuseCmd: a COM_STMT_PREPARE whose statement could not be
// kept is refused from its header, as prepare would refuse it once read, and so is long data
// the session could not keep (as longData refuses it: at the statement's next execute), so
// that a client refused one 16 MiB command after another costs the daemon neither their copies
// nor their reading. payloadLen counts the command's head, and for a command in several
// packets its first packet only.
func (h *session) refuseUnread(head []byte, payloadLen int) error {
	switch head[0] {
	case mysql.COM_STMT_PREPARE:
		if err := h.heldBytes.Refusal(stmtOverheadBytes + payloadLen - 1); err != nil {
			return h.heldRefused(err)
		}
	case mysql.COM_STMT_SEND_LONG_DATA:
		return h.longDataUnread(head[1:], payloadLen-refuseHeadBytes)
	}
	return nil
}

// errAnsweredNothing is a command dropped unread that MySQL answers nothing (long data).
var errAnsweredNothing = errors.New("dropped unread: no answer")

// longDataUnread refuses, from its head (statement id, parameter), a long data chunk of n bytes
// or more that longData would not keep: for a statement or parameter that does not exist, or
// past the session's room (the statement's next execute says so).
func (h *session) longDataUnread(head []byte, n int) error {
	st := h.stmts[binary.LittleEndian.Uint32(head)]
	if st == nil || int(binary.LittleEndian.Uint16(head[4:])) >= st.params || st.longRefused != nil {
		return errAnsweredNothing
	}
	if h.longHeld+n > h.maxAllowedPacket() {
		st.longRefused = errLongDataTooLong
	} else if err := h.heldBytes.Refusal(n); err != nil {
		st.longRefused = h.heldRefused(err)
	} else {
		return nil
	}
	h.forgetLong(st)
	return errAnsweredNothing
}

// forgetStmt closes the statement id: its text and long data are no longer held.
func (h *session) forgetStmt(id uint32) {
	if st := h.stmts[id]; st != nil {
		h.forgetLong(st)
		h.closeCursor(st)
		h.heldBytes.Give(st.held)
		delete(h.stmts, id)
	}
}

// prepare handles COM_STMT_PREPARE. The statement is prepared on the engine when it runs: the
// engine is chosen per statement. Its answer carries the result's columns, as the engine
// describes them (stmtcolumns.go); an execution's are described again, with its rows.
func (h *session) prepare(sql string) any {
	if !query.AwaitReady(h.ctx, h.s.backend) {
		return errNotConfigured
	}
	held := stmtOverheadBytes + len(sql)
	if err := h.heldBytes.Refusal(held); err != nil { // before any work on a statement that cannot be kept
		return h.heldRefused(err)
	}
	sql = sqltok.ExpandExecutableComments(sql, h.s.version)
	if h.answersSet(sql) {
		if err := h.checkSet(sql); err != nil {
			return err
		}
	}
	if len(splitStatements(sql)) > 1 {
		return syntaxError(sql)
	}
	// A prepare executes nothing: it takes no capacity slot and no place in the queue
	// (docs/capacity.md), but is routed and checked as its executions will be.
	if c, ok := h.s.backend.(interface{ CheckPrepare(*query.Request) error }); ok {
		if err := c.CheckPrepare(h.request(sql, nil)); err != nil {
			return h.clientError(err)
		}
	}
	if len(h.stmts) >= stmtsMax {
		return mysql.NewError(mysql.ER_MAX_PREPARED_STMT_COUNT_REACHED, "Can't create more than max_prepared_stmt_count statements (current value: "+strconv.Itoa(stmtsMax)+")")
	}
	cols, err := h.preparedColumns(sql)
	if err != nil {
		return err
	}
	held = stmtOverheadBytes + len(sql)
	if err := h.takeHeld(held); err != nil {
		return err
	}
	if h.stmts == nil {
		h.stmts = map[uint32]*prepared{}
	}
	h.stmtID++
	st := &prepared{sql: sql, params: sqltok.CountParams(sql, sqltok.MySQL), held: held}
	h.stmts[h.stmtID] = st
	out := &server.Stmt{Query: sql}
	out.ID, out.Params = h.stmtID, st.params
	out.Columns, out.RawColumnFields = len(cols), cols
	return out
}

// stmt finds the statement data's first four bytes name.
func (h *session) stmt(data []byte, command string) (*prepared, error) {
	if len(data) < 4 {
		return nil, mysql.ErrMalformPacket
	}
	id := binary.LittleEndian.Uint32(data)
	st := h.stmts[id]
	if st == nil {
		return nil, mysql.NewDefaultError(mysql.ER_UNKNOWN_STMT_HANDLER, 10, strconv.FormatUint(uint64(id), 10), command)
	}
	return st, nil
}

// maxAllowedPacket is what @@max_allowed_packet answers (the largest message the packet gate
// lets in), and the most long data a session holds across all its statements: MySQL bounds
// each parameter by it, and one budget per session also bounds a client that spreads its
// chunks over many statements or parameters.
func (h *session) maxAllowedPacket() int { return h.s.opts.Limits.MessageBytesMax }

// longData keeps a COM_STMT_SEND_LONG_DATA chunk (statement id, parameter, bytes).
func (h *session) longData(data []byte) {
	st, err := h.stmt(data, "stmt_send_long_data")
	if err != nil || len(data) < 6 {
		return // the command has no response; MySQL reports the error at the next execute
	}
	i := int(binary.LittleEndian.Uint16(data[4:]))
	if i >= st.params {
		return
	}
	chunk := data[6:]
	if st.longRefused == nil && h.longHeld+len(chunk) > h.maxAllowedPacket() {
		st.longRefused = errLongDataTooLong
	}
	if st.longRefused == nil {
		st.longRefused = h.takeHeld(len(chunk))
	}
	if st.longRefused != nil {
		h.forgetLong(st)
		return
	}
	if st.long == nil {
		st.long = map[int][]byte{}
	}
	st.long[i] = append(st.long[i], chunk...)
	h.longHeld += len(chunk)
}

// forgetLong drops a statement's long data (it ran, was reset or closed) from the budget.
func (h *session) forgetLong(st *prepared) {
	for _, b := range st.long {
		h.longHeld -= len(b)
		h.heldBytes.Give(len(b))
	}
	st.long = nil
	if h.longHeld < 0 {
		panic("mysqlwire: long data budget went negative")
	}
}

// execute handles COM_STMT_EXECUTE; results go out in the binary protocol.
func (h *session) execute(data []byte) (*mysql.Result, error) {
	st, err := h.stmt(data, "stmt_execute")
	if err != nil {
		return nil, err
	}
	if !query.AwaitReady(h.ctx, h.s.backend) {
		return nil, errNotConfigured
	}
	if err := st.longRefused; err != nil {
		h.forgetLong(st)
		st.longRefused = nil
		return nil, err
	}
	bin, err := st.bind(data[4:])
	h.forgetLong(st)
	h.closeCursor(st)
	if err != nil {
		return nil, err
	}
	if h.answersSet(st.sql) {
		return &mysql.Result{}, h.set(st.sql) // only autocommit and isolation can change: others were refused at prepare
	}
	if len(data) > 4 && data[4]&cursorTypeReadOnly != 0 {
		return h.executeWithCursor(st, bin)
	}
	return h.run(st.sql, bin)
}

// binParams are one execution's parameters: as the client encoded them (for a relay) and
// decoded (for the Arrow path).
type binParams struct {
	raw  mysqlengine.StmtParams
	args []any
}

// bind reads an execute packet after the statement id: flags, iteration count, NULL bitmap,
// the new-types flag, types and values.
func (st *prepared) bind(data []byte) (*binParams, error) {
	if len(data) < 5 {
		return nil, mysql.ErrMalformPacket
	}
	// data[0] is the cursor flag (execute reads it, cursor.go). data[1:5] is the iteration
	// count (1).
	data = data[5:]
	n := st.params
	bin := &binParams{raw: mysqlengine.StmtParams{Count: n}}
	if n == 0 {
		return bin, nil
	}
	nb := (n + 7) / 8
	if len(data) < nb+1 {
		return nil, mysql.ErrMalformPacket
	}
	nulls, bound := data[:nb], data[nb]
	data = data[nb+1:]
	if bound == 1 {
		if len(data) < 2*n {
			return nil, mysql.ErrMalformPacket
		}
		st.types = append(st.types[:0], data[:2*n]...)
		data = data[2*n:]
	}
	if st.types == nil {
		return nil, mysql.NewError(mysql.ER_WRONG_ARGUMENTS, "Incorrect arguments to mysqld_stmt_execute: parameter types were never sent")
	}
	bin.raw.NullBitmap = append([]byte(nil), nulls...)
	bin.raw.Types = st.types
	bin.args = make([]any, n)
	for i := range n {
		typ, unsigned := st.types[2*i], st.types[2*i+1]&0x80 != 0
		if nulls[i/8]&(1<<(i%8)) != 0 || typ == mysql.MYSQL_TYPE_NULL {
			bin.raw.NullBitmap[i/8] |= 1 << (i % 8)
			continue
		}
		var v []byte
		if long, ok := st.long[i]; ok {
			if err := checkLongData(typ, long); err != nil {
				return nil, paramError(i, err)
			}
			v = long
		} else {
			size, err := valueSize(typ, data)
			if err != nil {
				return nil, paramError(i, err)
			}
			v, data = data[:size], data[size:]
		}
		if fixedSize(typ) < 0 {
			if _, ok := st.long[i]; !ok {
				_, _, n := mysql.LengthEncodedInt(v)
				v = v[n:]
			}
			bin.raw.Values = append(bin.raw.Values, mysql.PutLengthEncodedInt(uint64(len(v)))...)
		}
		bin.raw.Values = append(bin.raw.Values, v...)
		arg, err := decodeParam(typ, unsigned, v)
		if err != nil {
			return nil, paramError(i, err)
		}
		bin.args[i] = arg
	}
	return bin, nil
}

// paramError is MySQL's answer to an execute whose parameter i (from 0) is malformed.
func paramError(i int, err error) error {
	return mysql.NewError(mysql.ER_WRONG_ARGUMENTS, fmt.Sprintf("Incorrect arguments to mysqld_stmt_execute: parameter %d: %v", i+1, err))
}

// checkLongData refuses long data the type cannot hold: a fixed-width value is decoded (and
// relayed) at its width, so long data of another size would be read past its end.
func checkLongData(typ byte, long []byte) error {
	switch n := fixedSize(typ); {
	case n < 0 && !knownType(typ):
		return fmt.Errorf("unknown type %d", typ)
	case n >= 0 && len(long) != n:
		return fmt.Errorf("%d bytes of long data for a type of %d bytes", len(long), n)
	}
	return nil
}

// fixedSize is the size of a fixed-width binary value, -1 for a length-encoded one.
func fixedSize(typ byte) int {
	switch typ {
	case mysql.MYSQL_TYPE_TINY:
		return 1
	case mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_YEAR:
		return 2
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT:
		return 4
	case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE:
		return 8
	}
	return -1
}

// valueSize is how many bytes at data the next value of type typ takes (length included).
func valueSize(typ byte, data []byte) (int, error) {
	if n := fixedSize(typ); n >= 0 {
		if len(data) < n {
			return 0, fmt.Errorf("its %d-byte value runs past the end of the packet (%d bytes left)", n, len(data))
		}
		return n, nil
	}
	if !knownType(typ) {
		return 0, fmt.Errorf("unknown type %d", typ)
	}
	// mysql.LengthEncodedInt would index past a length cut short: lenencInt checks.
	l, isNull, n, err := lenencInt(data)
	switch {
	case len(data) == 0:
		return 0, errors.New("its value is missing: the packet ends before it")
	case err == errLenencCut:
		return 0, errors.New("its length is cut short")
	case err != nil:
		return 0, errors.New("its length starts with 0xff, which is not a length-encoded integer")
	case isNull:
		return 0, errors.New("its length is NULL (0xfb); a NULL value goes in the NULL bitmap")
	case l > uint64(len(data)-n):
		return 0, fmt.Errorf("its length of %d bytes runs past the end of the packet (%d bytes left)", l, len(data)-n)
	}
	return n + int(l), nil
}

func knownType(typ byte) bool {
	switch typ {
	case mysql.MYSQL_TYPE_DECIMAL, mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_BIT,
		mysql.MYSQL_TYPE_JSON, mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET, mysql.MYSQL_TYPE_TINY_BLOB,
		mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_VAR_STRING,
		mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_VECTOR,
		mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_DATETIME,
		mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIME2:
		return true
	}
	return false
}

// decodeParam turns one binary value (without its length) into the Go value engines take.
func decodeParam(typ byte, unsigned bool, v []byte) (any, error) {
	le := binary.LittleEndian
	integer := func(u uint64, bits int) any {
		if unsigned {
			return u
		}
		return int64(u<<(64-bits)) >> (64 - bits) // sign-extended
	}
	switch typ {
	case mysql.MYSQL_TYPE_TINY:
		return integer(uint64(v[0]), 8), nil
	case mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_YEAR:
		return integer(uint64(le.Uint16(v)), 16), nil
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG:
		return integer(uint64(le.Uint32(v)), 32), nil
	case mysql.MYSQL_TYPE_LONGLONG:
		return integer(le.Uint64(v), 64), nil
	case mysql.MYSQL_TYPE_FLOAT:
		return float64(math.Float32frombits(le.Uint32(v))), nil
	case mysql.MYSQL_TYPE_DOUBLE:
		return math.Float64frombits(le.Uint64(v)), nil
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return decodeDateTime(v, true)
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2:
		return decodeDateTime(v, false)
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return decodeTime(v)
	case mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BLOB,
		mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_BIT, mysql.MYSQL_TYPE_VECTOR:
		return append([]byte(nil), v...), nil
	}
	return string(v), nil
}

// decodeDateTime reads a binary DATE/DATETIME (length 0, 4, 7 or 11). A value the calendar has
// is a time.Time in UTC; a zero or partly zero one ('0000-00-00', '2024-00-00') is MySQL's text.
func decodeDateTime(v []byte, dateOnly bool) (any, error) {
	var y, mo, d, h, mi, s, us int
	switch len(v) {
	case 11:
		us = int(binary.LittleEndian.Uint32(v[7:]))
		fallthrough
	case 7:
		h, mi, s = int(v[4]), int(v[5]), int(v[6])
		fallthrough
	case 4:
		y, mo, d = int(binary.LittleEndian.Uint16(v)), int(v[2]), int(v[3])
	case 0:
	default:
		return nil, fmt.Errorf("a date of %d bytes", len(v))
	}
	if mo > 12 || d > 31 || h > 23 || mi > 59 || s > 59 || us > 999999 {
		return nil, fmt.Errorf("%04d-%02d-%02d %02d:%02d:%02d.%06d is no date", y, mo, d, h, mi, s, us)
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, us*1000, time.UTC)
	if y >= 1 && mo >= 1 && d >= 1 && t.Day() == d {
		return t, nil
	}
	text := fmt.Sprintf("%04d-%02d-%02d", y, mo, d)
	if !dateOnly {
		text += fmt.Sprintf(" %02d:%02d:%02d", h, mi, s)
		if us != 0 {
			text += fmt.Sprintf(".%06d", us)
		}
	}
	return text, nil
}

// decodeTime reads a binary TIME (length 0, 8 or 12) as MySQL's text, [-]HHH:MM:SS[.ffffff].
func decodeTime(v []byte) (any, error) {
	if len(v) == 0 {
		return "00:00:00", nil
	}
	if len(v) != 8 && len(v) != 12 {
		return nil, fmt.Errorf("a time of %d bytes", len(v))
	}
	sign := ""
	if v[0] == 1 {
		sign = "-"
	}
	hours := int64(binary.LittleEndian.Uint32(v[1:]))*24 + int64(v[5])
	text := fmt.Sprintf("%s%02d:%02d:%02d", sign, hours, v[6], v[7])
	if len(v) == 12 {
		text += fmt.Sprintf(".%06d", binary.LittleEndian.Uint32(v[8:]))
	}
	return text, nil
}
