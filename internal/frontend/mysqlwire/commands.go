package mysqlwire

import (
	"encoding/binary"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
)

// The command phase is this frontend's own: go-mysql reads and frames packets and writes
// results, but the commands are dispatched here, so prepared statements keep the parameters
// exactly as the client encoded them (relayed to a MySQL engine as they came, decoded
// for the others; see stmt.go), their types are remembered across executions (a client may
// bind them once), long data is kept, and COM_SET_OPTION can turn multi-statements on and off.

// noReply marks a command that has no response (COM_STMT_CLOSE, COM_STMT_SEND_LONG_DATA) or
// whose response the session wrote itself.
type noReply struct{}

// serveCommands answers the client's commands until it quits or the connection fails.
func (h *session) serveCommands() {
	c := h.conn
	h.s.admin.connections.Add(1)
	for !c.Closed() {
		h.gate.commandDone()
		if h.waitingForClient(true) {
			_ = h.out.w.Flush() // the last answer (a COMMIT's OK) waits in the buffer for a read
			return              // draining: the server is shutting down at this transaction boundary
		}
		if h.loopable() {
			ran, err := h.onLoop()
			c.ResetSequence()
			if err != nil {
				return
			}
			if ran {
				continue
			}
		}
		data, err := c.ReadPacket()
		h.waitingForClient(false)
		if err != nil || len(data) == 0 {
			return
		}
		gaveBack := h.loopGaveBack
		h.loopGaveBack = false
		if !h.lastWasQuery && !gaveBack { // else the loop was tried before the read, or refused it
			if ran, err := h.loopWith(data); ran || err != nil {
				c.ResetSequence()
				if err != nil {
					return
				}
				continue
			}
		}
		h.lastWasQuery = data[0] == mysql.COM_QUERY
		v := h.dispatch(data[0], data[1:])
		if _, none := v.(noReply); none {
			c.ResetSequence()
			continue
		}
		if err, ok := v.(error); ok {
			me := h.clientError(err)
			h.noteError(me)
			v = me
		}
		err = c.WriteValue(h.withMetadata(v))
		c.ResetSequence()
		if err != nil {
			return
		}
	}
}

// dispatch runs one command and returns what go-mysql writes back: a result, an error, a
// prepared statement, a field list, or noReply.
func (h *session) dispatch(cmd byte, data []byte) any {
	switch cmd {
	case mysql.COM_QUIT:
		h.conn.Close()
		return noReply{}
	case mysql.COM_QUERY:
		h.countQuestion()
		return reply(h.HandleQuery(string(data)))
	case mysql.COM_PING:
		return nil
	case mysql.COM_STATISTICS:
		return h.writeStatistics()
	case mysql.COM_INIT_DB:
		if err := h.knownDatabase(string(data)); err != nil {
			return err
		}
		return h.UseDB(string(data))
	case mysql.COM_FIELD_LIST:
		return h.fieldList(data)
	case mysql.COM_STMT_PREPARE:
		return h.prepare(string(data))
	case mysql.COM_STMT_EXECUTE:
		h.countQuestion()
		return reply(h.execute(data))
	case mysql.COM_STMT_CLOSE:
		if len(data) >= 4 {
			h.forgetStmt(binary.LittleEndian.Uint32(data))
		}
		return noReply{}
	case mysql.COM_STMT_SEND_LONG_DATA:
		h.longData(data)
		return noReply{}
	case mysql.COM_STMT_FETCH:
		return h.fetch(data)
	case mysql.COM_STMT_RESET:
		st, err := h.stmt(data, "stmt_reset")
		if err != nil {
			return err
		}
		h.forgetLong(st)
		h.closeCursor(st)
		st.longRefused = nil
		return nil
	case mysql.COM_SET_OPTION:
		return h.setOption(data)
	case mysql.COM_RESET_CONNECTION:
		h.resetSession()
		return nil
	case mysql.COM_CHANGE_USER:
		return h.changeUser(data)
	case comRefusedUnread:
		if refusal, seq, ok := h.gate.takeUnread(); ok {
			if refusal == errAnsweredNothing {
				return noReply{}
			}
			h.conn.Sequence = seq // the client sent more packets than go-mysql was handed
			return refusal
		}
	}
	return mysql.NewError(mysql.ER_UNKNOWN_COM_ERROR, "command "+strconv.Itoa(int(cmd))+" is not supported by queryflux")
}

// reply is a handler's answer as dispatch returns it.
func reply(r *mysql.Result, err error) any {
	if err != nil {
		return err
	}
	return r
}

// setOption handles COM_SET_OPTION: multi-statements on (0) or off (1); the answer is an EOF.
func (h *session) setOption(data []byte) any {
	if len(data) < 2 {
		return mysql.ErrMalformPacket
	}
	switch binary.LittleEndian.Uint16(data) {
	case 0:
		h.multiStatements = true
	case 1:
		h.multiStatements = false
	default:
		return mysql.NewError(mysql.ER_UNKNOWN_COM_ERROR, "COM_SET_OPTION: unknown option")
	}
	if err := h.writeEOF(); err != nil {
		h.conn.Close()
	}
	return noReply{}
}

var _ = server.Stmt{}
