package mysqlwire

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// The server's own status, which mariadb-admin (status, version, extended-status) and the
// mariadb CLI's status command ask whatever engine the statements go to: COM_STATISTICS'
// line, and SHOW [GLOBAL|SESSION] STATUS's rows (show.go), from the worker's own counts. Only
// what the worker knows is shown: no slow queries or open tables it does not keep.

// processStart is when this process started, as far as Uptime tells.
var processStart = time.Now()

// adminCounts are the server's counts for its status.
type adminCounts struct {
	questions   atomic.Int64 // statements clients sent (COM_QUERY, COM_STMT_EXECUTE) outside the event loop
	connections atomic.Int64 // sessions that logged in
}

// uptime is the process's age in whole seconds.
func uptime() int64 {
	return int64(time.Since(processStart) / time.Second)
}

// questions is every statement clients sent this server: those the sessions dispatched and
// those the event loop relayed.
func (s *Server) questions() int64 {
	return s.admin.questions.Load() + s.loopStatements.Load()
}

// threadsConnected is the number of logged-in client sessions.
func (s *Server) threadsConnected() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.sessions))
}

// statistics is COM_STATISTICS' answer, in MariaDB's format (sql_parse.cc); the worker keeps
// no slow-query count and opens no tables, so those are 0.
func (s *Server) statistics() string {
	up, q := uptime(), s.questions()
	var perSecond1000 int64
	if up > 0 {
		perSecond1000 = q * 1000 / up
	}
	frac := strconv.FormatInt(perSecond1000%1000, 10)
	for len(frac) < 3 {
		frac = "0" + frac
	}
	return "Uptime: " + strconv.FormatInt(up, 10) + "  Threads: " + strconv.FormatInt(s.threadsConnected(), 10) +
		"  Questions: " + strconv.FormatInt(q, 10) + "  Slow queries: 0  Opens: 0  Open tables: 0  Queries per second avg: " +
		strconv.FormatInt(perSecond1000/1000, 10) + "." + frac
}

// statusRows are SHOW STATUS's rows, sorted by name as MariaDB lists them: Questions and
// Queries are the session's own in SESSION scope (the default), the server's in GLOBAL; the
// others are the server's in both, as in MariaDB.
func (h *session) statusRows(global bool) [][]any {
	q := h.questions
	if global {
		q = h.s.questions()
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return [][]any{
		{"Connections", n(h.s.admin.connections.Load())},
		{"Queries", n(q)},
		{"Questions", n(q)},
		{"Threads_connected", n(h.s.threadsConnected())},
		{"Uptime", n(uptime())},
	}
}

// writeStatistics answers COM_STATISTICS: a packet of the text alone.
func (h *session) writeStatistics() any {
	text := h.s.statistics()
	pkt := make([]byte, 4, 4+len(text))
	if err := h.conn.WritePacket(append(pkt, text...)); err != nil {
		h.conn.Close()
	}
	return noReply{}
}

// countQuestion counts a statement the session dispatched.
func (h *session) countQuestion() {
	h.questions++
	h.s.admin.questions.Add(1)
}

// createDatabaseKnown is MariaDB's 1049 for SHOW CREATE {DATABASE|SCHEMA} [IF NOT EXISTS] db
// (its tokens, from SHOW) of a database the client could not USE; nil for any other statement,
// which the engine answers (package mysqlshow on one that is not MySQL).
func (h *session) createDatabaseKnown(toks []sqltok.Token) error {
	if len(toks) < 4 || !toks[1].IsWord("create") || !toks[2].IsWord("database", "schema") {
		return nil
	}
	i := 3
	if len(toks) == 7 && toks[3].IsWord("if") && toks[4].IsWord("not") && toks[5].IsWord("exists") {
		i = 6
	}
	if i != len(toks)-1 {
		return nil
	}
	db := toks[i].Text
	switch {
	case toks[i].Kind == sqltok.QuotedIdent && len(db) >= 2 && db[0] == '`':
		db = strings.ReplaceAll(db[1:len(db)-1], "``", "`")
	case toks[i].Kind != sqltok.Word:
		return nil
	}
	return h.knownDatabase(db)
}
