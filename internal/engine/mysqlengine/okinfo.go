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
// it keeps the info of the answer's first packet when that is an OK, and the first bytes of
// the latest packet, for the warning count of the EOF (or OK) that ends a result set's rows,
// which go-mysql drops on a connection with CLIENT_DEPRECATE_EOF. The answer is the last
// command's (a prepared statement's COM_STMT_EXECUTE, not its COM_STMT_PREPARE).
type okTap struct {
	net.Conn
	head []byte // the answer's first bytes, until its first packet is whole
	seen bool   // the first packet went by
	info string

	last     []byte // the latest packet's first bytes (at most lastKept), header included
	inHeader int    // bytes of the latest packet's header read, until all 4 are
	left     int    // bytes of the latest packet's payload not yet read
}

// lastKept is how much of the latest packet the tap keeps: an EOF or OK up to its warnings.
const lastKept = 32

func (t *okTap) Write(p []byte) (int, error) {
	if len(p) > 4 && p[3] == 0 && p[4] != mysql.COM_STMT_CLOSE { // a command: its answer comes next (COM_STMT_CLOSE has none)
		t.head, t.seen, t.info = t.head[:0], false, ""
		t.last, t.inHeader, t.left = t.last[:0], 0, 0
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
	t.follow(p[:max(n, 0)])
	return n, err
}

// follow reads the packet boundaries in b, the answer's next bytes, keeping the latest
// packet's first bytes.
func (t *okTap) follow(b []byte) {
	for len(b) > 0 {
		if t.left > 0 {
			k := min(t.left, len(b))
			if room := lastKept - len(t.last); room > 0 {
				t.last = append(t.last, b[:min(k, room)]...)
			}
			t.left, b = t.left-k, b[k:]
			continue
		}
		if t.inHeader == 0 { // a packet starts
			t.last = t.last[:0]
		}
		k := min(4-t.inHeader, len(b))
		t.last = append(t.last, b[:k]...)
		t.inHeader, b = t.inHeader+k, b[k:]
		if t.inHeader == 4 {
			t.inHeader, t.left = 0, packetLen(t.last)
		}
	}
}

// endWarnings is the warning count of the latest packet when it is an EOF (5 bytes: 0xfe,
// warnings, status) or an OK that ends rows (0xfe, affected rows, insert id, status,
// warnings); 0 for any other.
func (t *okTap) endWarnings() uint16 {
	if len(t.last) < 4 || t.inHeader != 0 || t.left != 0 {
		return 0
	}
	n, p := packetLen(t.last), t.last[4:]
	switch {
	case len(p) == 0 || p[0] != mysql.EOF_HEADER:
		return 0
	case n == 5 && len(p) >= 3:
		return uint16(p[1]) | uint16(p[2])<<8
	case n >= 7 && n < 1<<24-1:
		pos := 1
		for range 2 {
			_, _, k := mysql.LengthEncodedInt(p[min(pos, len(p)):])
			pos += k
		}
		if pos+4 <= len(p) {
			return uint16(p[pos+2]) | uint16(p[pos+3])<<8
		}
	}
	return 0
}

// tapOK puts an okTap under c's reads until the returned function gives the socket back and
// tells the info the tap saw, and the warning count of the packet that ended the answer's
// rows (see endWarnings).
func tapOK(c *client.Conn) (untap func() (info string, warnings uint16)) {
	t := &okTap{Conn: c.Conn.Conn}
	c.Conn.Conn = t
	return func() (string, uint16) {
		c.Conn.Conn = t.Conn
		return t.info, t.endWarnings()
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

// warningsMark begins the warnings WithWarnings puts after a command tag: a byte no command
// tag, count or info holds.
const warningsMark = "\x00"

// WithWarnings is a MySQL client's command tag (MySQLTag, or "SELECT n" after rows) with the
// statement's warning count and its warnings (SHOW WARNINGS, read from the connection it ran
// on before that connection served anyone else) after it; tag itself when there are none.
// SplitWarnings takes them apart: the frontend answers SHOW WARNINGS from them.
func WithWarnings(tag string, count uint16, ws []Warning) string {
	if count == 0 && len(ws) == 0 {
		return tag
	}
	var b strings.Builder
	b.WriteString(tag)
	b.WriteString(warningsMark)
	b.WriteString(strconv.FormatUint(uint64(count), 10))
	for _, w := range ws {
		b.WriteString(warningsMark)
		b.WriteString(w.Level)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatUint(uint64(w.Code), 10))
		b.WriteByte(' ')
		b.WriteString(strings.ReplaceAll(w.Message, warningsMark, ""))
	}
	return b.String()
}

// SplitWarnings is WithWarnings' parts: the tag, the warning count and the warnings.
func SplitWarnings(tag string) (base string, count uint16, ws []Warning) {
	base, rest, found := strings.Cut(tag, warningsMark)
	if !found {
		return tag, 0, nil
	}
	parts := strings.Split(rest, warningsMark)
	n, _ := strconv.ParseUint(parts[0], 10, 16)
	for _, p := range parts[1:] {
		level, p, _ := strings.Cut(p, " ")
		code, msg, _ := strings.Cut(p, " ")
		c, _ := strconv.ParseUint(code, 10, 16)
		ws = append(ws, Warning{Level: level, Code: uint16(c), Message: msg})
	}
	return base, uint16(n), ws
}
