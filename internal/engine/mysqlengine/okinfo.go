package mysqlengine

import (
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
// packet's warning count, status flags and info after it, each on a line of its own, when any
// is there (a status without more than the session's own flags is not); SplitMySQLTag takes
// them apart.
func MySQLTag(tag string, ok *mysql.Result, info string) string {
	status := ok.Status & StatementStatus
	if ok.Warnings == 0 && status == 0 && info == "" {
		return tag
	}
	return tag + "\n" + strconv.FormatUint(uint64(ok.Warnings), 10) + "\n" + strconv.FormatUint(uint64(status), 10) + "\n" + info
}

// StatementStatus are the status flags of an OK or EOF that tell of the statement that ended
// rather than of the session (MariaDB sets them for a CALL's or an UPDATE's full scan; a
// prepared CALL's OUT parameters come as a result set whose EOF says so): a frontend passes
// them on as they came, the session's own flags being its own.
const StatementStatus = mysql.SERVER_STATUS_NO_GOOD_INDEX_USED | mysql.SERVER_STATUS_NO_INDEX_USED | mysql.SERVER_QUERY_WAS_SLOW | mysql.SERVER_PS_OUT_PARAMS

// SplitMySQLTag is MySQLTag's parts: the command tag, and what the OK packet said (its
// warnings, statement status flags and info).
func SplitMySQLTag(tag string) (base string, ok mysql.Result) {
	base, rest, found := strings.Cut(tag, "\n")
	if !found {
		return tag, ok
	}
	parts := strings.SplitN(rest, "\n", 3)
	if len(parts) != 3 {
		return base, ok
	}
	warnings, _ := strconv.ParseUint(parts[0], 10, 16)
	status, _ := strconv.ParseUint(parts[1], 10, 16)
	ok.Warnings, ok.Status, ok.StatusMessage = uint16(warnings), uint16(status), parts[2]
	return base, ok
}
