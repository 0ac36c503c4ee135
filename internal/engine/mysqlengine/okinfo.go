package mysqlengine

import (
	"encoding/binary"
	"net"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// What a statement's OK packet tells a MySQL client beyond its counts, on the Arrow path: its
// warning count and its info ("Rows matched: 2  Changed: 1  Warnings: 0", mysql2's changedRows;
// "Records: 2  Duplicates: 0  Warnings: 0"). go-mysql's client skips the info, so okTap keeps
// it as it goes by; both travel to the frontend after the command tag (MySQLTag), through
// whatever wraps the engine's rows.

// okTap sits between go-mysql and a connection's socket while one statement's answer is read:
// it keeps the info of the answer's first packet when that is an OK. The answer is the last
// command's (a prepared statement's COM_STMT_EXECUTE, not its COM_STMT_PREPARE).
type okTap struct {
	net.Conn
	head []byte // the answer's first bytes, until its first packet is whole
	seen bool   // the first packet went by
	info string
}

func (t *okTap) Write(p []byte) (int, error) {
	if len(p) > 4 && p[3] == 0 && p[4] != mysql.COM_STMT_CLOSE { // a command: its answer comes next (COM_STMT_CLOSE has none)
		t.head, t.seen, t.info = t.head[:0], false, ""
	}
	return t.Conn.Write(p)
}

func (t *okTap) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	if !t.seen && n > 0 {
		t.head = append(t.head, p[:n]...)
		if len(t.head) >= 4 && len(t.head) >= 4+packetLen(t.head) {
			t.seen = true
			if payload := t.head[4 : 4+packetLen(t.head)]; len(payload) > 0 && payload[0] == mysql.OK_HEADER {
				t.info = okPacketInfo(payload)
			}
			t.head = nil
		}
	}
	return n, err
}

// tapOK puts an okTap under c's reads until the returned function gives the socket back and
// tells the info the tap saw.
func tapOK(c *client.Conn) (untap func() string) {
	t := &okTap{Conn: c.Conn.Conn}
	c.Conn.Conn = t
	return func() string {
		c.Conn.Conn = t.Conn
		return t.info
	}
}

// okPacketInfo reads an OK payload's info: after its header, affected rows and insert id
// (length-encoded), status and warnings.
func okPacketInfo(p []byte) string {
	pos := 1
	for range 2 {
		_, _, n := mysql.LengthEncodedInt(p[min(pos, len(p)):])
		pos += n
	}
	if pos+4 > len(p) {
		return ""
	}
	return OKInfo(p[pos+4:])
}

// MySQLTag is the command tag of a statement without rows for a MySQL client with its OK
// packet's warning count and info after it, each on a line of its own, when either is there;
// SplitMySQLTag takes them apart.
func MySQLTag(tag string, warnings uint16, info string) string {
	if warnings == 0 && info == "" {
		return tag
	}
	return tag + "\n" + strconv.FormatUint(uint64(warnings), 10) + "\n" + info
}

// SplitMySQLTag is MySQLTag's parts: the command tag, the warning count and the info.
func SplitMySQLTag(tag string) (base string, warnings uint16, info string) {
	base, rest, ok := strings.Cut(tag, "\n")
	if !ok {
		return tag, 0, ""
	}
	count, info, _ := strings.Cut(rest, "\n")
	n, _ := strconv.ParseUint(count, 10, 16)
	return base, uint16(n), info
}

// drainResults reads, to their end, the results that follow the one go-mysql read (a CALL's
// further result sets, which go-mysql's streaming read leaves unread), so that the connection
// serves on: deprecateEOF is whether result sets end with an OK rather than EOFs. sets counts
// the result sets among them (a CALL's last result is an OK); err is the server's error if one
// ends them.
func drainResults(c *client.Conn, deprecateEOF bool) (sets int, err error) {
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return sets, err
		}
		switch p[0] {
		case mysql.OK_HEADER:
			if okStatus(p)&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
				return sets, nil
			}
			continue
		case mysql.ERR_HEADER:
			return sets, c.HandleErrorPacket(p)
		}
		sets++
		columns, _, _ := mysql.LengthEncodedInt(p)
		if !deprecateEOF {
			columns++ // the EOF after the definitions
		}
		for range columns {
			if _, err := c.ReadPacket(); err != nil {
				return sets, err
			}
		}
		var status uint16
		for {
			row, err := c.ReadPacket()
			if err != nil {
				return sets, err
			}
			if row[0] == mysql.ERR_HEADER {
				return sets, c.HandleErrorPacket(row)
			}
			if row[0] == mysql.EOF_HEADER && deprecateEOF && len(row) < maxPayload {
				status = okStatus(row)
				break
			}
			if row[0] == mysql.EOF_HEADER && len(row) < 9 {
				status = binary.LittleEndian.Uint16(row[3:])
				break
			}
		}
		if status&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
			return sets, nil
		}
	}
}
