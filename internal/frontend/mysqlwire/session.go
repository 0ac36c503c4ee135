package mysqlwire

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/relayloop"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/node/proxy"
)

// session is one client connection's state; go-mysql calls it for each command.
type session struct {
	s      *Server
	ctx    context.Context
	conn   *server.Conn // nil during the handshake
	remote string
	user   string // the logged-in user (COM_CHANGE_USER changes it, under mu)
	salt   []byte // the salt the login's password was scrambled with (COM_CHANGE_USER's too)
	db     string
	out    *flushOnReadConn // flushed after each batch, so slow results still stream
	// questions counts the statements it sent outside the event loop (SHOW SESSION STATUS, admin.go).
	questions int64
	// lastInsertID is the first AUTO_INCREMENT value the session's last INSERT that generated
	// one generated (insertID), what LAST_INSERT_ID() answers on an engine that asks (DuckDB).
	lastInsertID uint64
	raw          net.Conn // the client connection, for KILL CONNECTION

	headers         map[string]string    // the client's connection attributes, for routing (read only)
	stmts           map[uint32]*prepared // the client's prepared statements, by id
	stmtID          uint32               // the last statement id given out
	longHeld        int                  // COM_STMT_SEND_LONG_DATA bytes held across stmts (at most maxAllowedPacket())
	heldBytes       *heldmem.Budget      // what stmts hold, long data included (stmt.go)
	multiStatements bool                 // CLIENT_MULTI_STATEMENTS, or COM_SET_OPTION's
	collation       uint8                // the client's collation, 0 for the default (charset.go)
	charsetOnEngine bool                 // a character_set_* variable was set alone, on the held connection: the engine answers them (charset.go)
	onEngine        map[string]bool      // the other engineVariables a SET ran on the held connection: the engine answers them (setvars.go)
	metadata        bool                 // MariaDB's extended metadata, offered and asked for (metadata.go)
	more            bool                 // more results follow this statement's (multi-statements)
	failed          bool                 // an error packet was written for the statement (it ends stacked statements)
	warnings        uint16               // the running statement's warning count, for its EOF
	divZeros        int                  // the running statement's divisions by zero per row answered (divzero.go)
	stmtStatus      uint16               // the engine's status flags of the statement, for its EOF (mysqlengine.StatementStatus)
	eof             [9]byte              // writeEOF's packet (go-mysql copies it out)
	diag            []diagnostic         // the last statement's warnings or error (SHOW WARNINGS)

	pinned         engine.Session // the engine connection of an open transaction, if any
	held           bool           // pinned until the client disconnects, for its named lock (GET_LOCK) or user variables (SET @v)
	autocommitOff  bool           // SET autocommit=0: every statement runs in a pinned transaction
	emptyTx        bool           // the pinned transaction was opened for the running statement (autocommit off)
	stmtRollback   bool           // the pinned engine aborts a transaction on error: statements run after a savepoint (stmtrollback.go)
	stmtSavepoints int            // the proxy's savepoints open in the pinned transaction (stmtrollback.go)
	lastErr        uint16         // the error number of the last error packet written
	engineNoted    bool           // the engine gave the running statement warnings of its own
	isolation      string         // SET SESSION TRANSACTION ISOLATION LEVEL's level, "" for the engine's default
	timeZone       string         // SET time_zone's value as MariaDB reads it back, "" for the default

	mu     sync.Mutex
	cancel context.CancelFunc // of the running statement, for KILL QUERY from another session

	idleMu     sync.Mutex
	idle       bool     // waiting for the client's next command (Drain wakes idle sessions)
	idlePinned bool     // and holding a pinned engine connection (a transaction or a named lock)
	onloop     *loopRun // while the event loop relays the session (loop.go)
	killed     bool     // KILL CONNECTION from another session

	// The event loop (loop.go): the client's socket (nil unless plain TCP), the gate reading
	// it, whether the last command was a COM_QUERY, hand-overs counted, and a statement the
	// loop handed over admitted (with its request) or refused.
	lc                       *relayloop.Conn
	gate                     *packetGate
	lastWasQuery             bool
	loopGaveBack             bool // the next command read is one the loop handed back
	loopWriteStalled         bool // the loop ended the client: it stopped reading (writestall.go)
	loopMisses, loopHandOffs int
	loopBackoff              int
	admitted                 *proxy.Admission
	admittedReq              *query.Request
	refused                  error
}

// written is returned to go-mysql after the session wrote the whole response itself: a
// resultset already marked done is something go-mysql writes nothing more for.
func written() *mysql.Result {
	return &mysql.Result{Resultset: &mysql.Resultset{
		Fields:        []*mysql.Field{{}},
		Streaming:     mysql.StreamingMultiple,
		StreamingDone: true,
	}}
}

// UseDB takes the handshake's database (go-mysql's call), and COM_INIT_DB's once it is known
// (database.go).
func (h *session) UseDB(db string) error {
	h.db = db
	return nil
}

// HandleQuery handles COM_QUERY.
func (h *session) HandleQuery(sql string) (*mysql.Result, error) {
	sql = sqltok.ExpandExecutableComments(sql, h.s.version)
	if r, err, ok := h.local(sql); ok {
		return r, err
	}
	if !query.AwaitReady(h.ctx, h.s.backend) {
		return nil, errNotConfigured
	}
	return h.runAll(sql)
}

// HandleFieldList completes go-mysql's Handler; the session answers COM_FIELD_LIST itself
// (fieldlist.go).
func (h *session) HandleFieldList(string, string) ([]*mysql.Field, error) {
	return nil, errOwnDispatch
}

// HandleStmtPrepare, HandleStmtExecute, HandleStmtClose and HandleOtherCommand complete
// go-mysql's Handler; the session dispatches commands itself (commands.go) and never gets here.
func (h *session) HandleStmtPrepare(string) (int, int, any, error) { return 0, 0, nil, errOwnDispatch }

func (h *session) HandleStmtExecute(any, string, []any) (*mysql.Result, error) {
	return nil, errOwnDispatch
}

func (h *session) HandleStmtClose(any) error { return errOwnDispatch }

func (h *session) HandleOtherCommand(byte, []byte) error { return errOwnDispatch }

var errOwnDispatch = errors.New("mysqlwire: command dispatched by go-mysql, not the session")

// errLocalInfileOff is MariaDB's refusal of LOAD DATA LOCAL INFILE to a client without
// CLIENT_LOCAL_FILES, which an engine that is not MySQL's gives every client: only MariaDB's
// relay asks for the client's file (mysqlengine's LocalFile).
var errLocalInfileOff = mysql.NewError(4166, "The used command is not allowed because the MariaDB server or client has disabled the local infile capability")

// run sends sql to the backend and writes the answer (rows, OK or error) to the client:
// text rows, or binary ones for a prepared statement's execution (bin).
func (h *session) run(sql string, bin *binParams) (*mysql.Result, error) {
	var args []any
	if bin != nil {
		args = bin.args
	}
	binary := bin != nil
	h.warnings, h.lastErr, h.engineNoted, h.divZeros = 0, 0, false, 0
	h.forgetDiagnostics(sql)
	if mysqlengine.LoadsLocalFile(sql) && !h.routesToMySQL() {
		h.writeError(errLocalInfileOff)
		return written(), nil
	}
	sent := sql
	if isSetStatement(sql) {
		sent = engineSetText(sql)
	}
	if rewritten, perRow := zeroDivisions(sql); rewritten != "" && !h.routesToMySQL() { // divzero.go
		sent = rewritten
		if perRow > 0 && h.warnsDivisionByZero() {
			h.divZeros = perRow
		}
	}
	req := h.request(sent, args)
	counted := h.divideOnPostgreSQL(req, sql, sent, args) // divops.go, decimals.go
	ctx, cancel := context.WithCancel(h.ctx)
	h.mu.Lock()
	h.cancel = cancel
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.cancel = nil
		h.mu.Unlock()
		cancel()
	}()
	defer h.out.watchAfter(watchDelay, cancel)()
	if done, err := h.pinFor(ctx, req); done || err != nil {
		if err != nil {
			h.writeError(err)
			return written(), nil
		}
		h.syncTx()
		return &mysql.Result{}, nil
	}
	if h.pinned == nil {
		if res, err, ok := h.relay(ctx, cancel, req, bin); ok {
			h.syncTx()
			return res, err
		}
	}
	if d, ok := parseDatabaseDDL(sql); ok && !h.routesToMySQL() && (!d.schema || h.routesToPostgreSQL(req)) { // databaseddl.go
		res, err := h.runDatabaseDDL(ctx, d, req)
		if err != nil {
			h.writeError(err)
			res = written()
		}
		h.syncTx()
		return res, nil
	}
	notes := h.ddlNotes(ctx, sql) // ddlnotes.go
	execute := h.s.backend.Execute
	var guard stmtGuard
	if h.pinned != nil {
		execute = h.pinned.Execute
		guard = h.guardStatement(ctx, sql)
	}
	rows, err := execute(ctx, req)
	if err != nil {
		h.writeError(err)
		h.settleStatement(guard, sql, h.lastErr)
		h.endEmptyTx()
		h.syncTx()
		return written(), nil
	}
	h.failed = false
	if counted {
		rows = newDivZeroRows(rows)
	}
	res, err := h.answer(ctx, rows, binary)
	rows.Close()
	h.settleStatement(guard, sql, h.lastErr)
	if notes != nil && err == nil && !h.failed && res != nil && res.Warnings == 0 && !h.engineNoted { // the engine's own notes stand (duckengine's DROP TABLE)
		h.diag, res.Warnings = notes, uint16(len(notes))
	}
	h.endEmptyTx()
	if err == nil && !h.failed && h.pinned != nil && isSetStatement(sql) {
		if err := h.followEngineSet(sql); err != nil {
			h.writeError(err)
			return written(), nil
		}
	}
	h.syncTx()
	return res, err
}

func (h *session) request(sql string, args []any) *query.Request {
	r := new(query.Request)
	h.fill(r, sql, args)
	return r
}

// fill sets every field of r to the request of sql (with args) on this client connection.
func (h *session) fill(r *query.Request, sql string, args []any) {
	h.fillAs(r, h.withSessionValues(sql), args)
	if r.SQL != sql {
		r.ClientSQL = sql // columns are named, and PROCESSLIST shows the statement, as written
	}
}

// fillAs is fill of a statement known to name no session value (sql is sent as it is).
func (h *session) fillAs(r *query.Request, sql string, args []any) {
	*r = query.Request{
		SQL:              sql,
		Args:             args,
		User:             h.user,
		Protocol:         query.ProtocolMySQL,
		Database:         h.db,
		ClientAddr:       h.remote,
		SessionID:        h.conn.ConnectionID(),
		Headers:          h.headers,
		LastInsertID:     h.lastInsertID,
		FoundRows:        h.conn.HasCapability(mysql.CLIENT_FOUND_ROWS),
		IgnoreSpace:      h.conn.HasCapability(mysql.CLIENT_IGNORE_SPACE),
		ExtendedMetadata: h.metadata,
		MultiResults:     h.conn.HasCapability(mysql.CLIENT_MULTI_RESULTS),
		PSMultiResults:   h.conn.HasCapability(mysql.CLIENT_PS_MULTI_RESULTS),
		LocalFiles:       h.conn.HasCapability(mysql.CLIENT_LOCAL_FILES),
		Collation:        h.collation,
	}
}

// answer writes a statement's rows (or its OK) to the client: each of its results, when it has
// several (a CALL's: query.ResultSets), all but the last marked SERVER_MORE_RESULTS_EXISTS.
func (h *session) answer(ctx context.Context, rows query.Rows, binary bool) (*mysql.Result, error) {
	for {
		if rows.Schema() == nil {
			res, err := h.finishNoRows(ctx, rows)
			if !moreResults(rows) {
				return res, err
			}
			if err := h.writeMore(func() error { return h.conn.WriteValue(res) }); err != nil {
				return nil, err
			}
		} else if err := h.writeRows(ctx, rows, binary); err != nil {
			return nil, err // the connection is broken; go-mysql closes it
		} else if !moreResults(rows) {
			return written(), nil
		}
		if err := rows.(query.ResultSets).NextResult(ctx); err != nil {
			h.writeError(err)
			return written(), nil
		}
	}
}

// moreResults reports whether another result follows the one rows ended.
func moreResults(rows query.Rows) bool {
	rs, ok := rows.(query.ResultSets)
	return ok && rs.MoreResults()
}

// writeMore writes the end of a result with SERVER_MORE_RESULTS_EXISTS in its status.
func (h *session) writeMore(write func() error) error {
	outer := h.more
	h.more = true
	h.syncTx()
	defer func() {
		h.more = outer
		h.syncTx()
	}()
	return write()
}

// pinFor pins an engine connection when req starts a transaction and the backend can pin one
// (engine.SessionOpener): the transaction's statements then all run there, as on a direct
// connection. Without it, statements run on pooled connections. With autocommit off, every
// statement but COMMIT and ROLLBACK starts one (START TRANSACTION on the pinned connection
// first), as MySQL starts one implicitly. done is true when pinFor answered req itself (a
// ROLLBACK of a transaction whose connection failed). The session's isolation level
// (setvars.go) is set on the pinned connection for that transaction only, before it starts.
//
// A statement whose effect lasts the client's session, a named lock or a user variable, holds
// the pinned connection (held) until the client disconnects, as its own connection would.
func (h *session) pinFor(ctx context.Context, req *query.Request) (done bool, err error) {
	hold := takesNamedLock(req.SQL) || namesUserVariable(req.SQL) || setsEngineVariables(req.SQL)
	if h.pinned != nil {
		h.held = h.held || hold
		if h.pinned.TxStatus() == 'E' && isTxEnd(req.SQL) {
			h.unpin()
			if sqltok.FirstKeywordIs(req.SQL, sqltok.MySQL, "commit") {
				h.syncTx()
				return false, errFailedCommit
			}
			return true, nil
		}
		// A held connection outside a transaction, autocommit off: the statement opens one, as
		// on a fresh pin (Connector/J's SET sql_mode at connect holds the connection before its
		// setAutoCommit(false); without this, its UPDATE committed at once and ROLLBACK undid
		// nothing).
		if h.held && h.autocommitOff && h.pinned.TxStatus() == 'I' && !isTxEnd(req.SQL) && !beginsTransaction(req.SQL) && !readsNoTable(req.SQL) {
			h.emptyTx = true
			return false, h.startPinned(ctx, false)
		}
		return false, nil
	}
	explicit := beginsTransaction(req.SQL)
	implicit := h.autocommitOff && !explicit && !isTxEnd(req.SQL) && !readsNoTable(req.SQL)
	if !explicit && !hold && !implicit {
		return false, nil
	}
	opener, ok := h.s.backend.(engine.SessionOpener)
	if !ok {
		return false, nil // autocommit=0 was refused (setvars.go): only an explicit BEGIN gets here
	}
	s, err := opener.OpenSession(h.ctx, req)
	if err != nil {
		return false, err
	}
	h.pinned, h.held = s, hold
	h.stmtRollback, h.stmtSavepoints = h.rollsBackStatements(req), 0
	if hold && !explicit && !implicit {
		return false, nil // no transaction: the connection is kept for its lock or variables
	}
	if err := h.startPinned(ctx, explicit); err != nil {
		h.unpin()
		return false, err
	}
	h.emptyTx = implicit
	return false, nil
}

// endEmptyTx ends the transaction the session opened for the statement that just ran, with
// autocommit off, when that statement failed before it locked a table (failedBeforeTables):
// MariaDB would have started none, and one the proxy keeps open says IN_TRANS to the client
// where MariaDB's status does not. Nothing ran in it, so the ROLLBACK loses nothing. A statement
// that failed at a row (a duplicate key) started one on MariaDB too, and it stays.
func (h *session) endEmptyTx() {
	empty := h.emptyTx
	h.emptyTx = false
	if !empty || !h.failed || !failedBeforeTables(h.diag) || h.pinned == nil || h.pinned.TxStatus() != 'T' {
		return
	}
	if err := h.execPinned(h.ctx, "ROLLBACK"); err != nil {
		h.unpin()
	}
}

// failedBeforeTables: the statement's error (diag, noteError's) is one MariaDB raises before it
// locks a table, or the proxy's own refusal: a syntax error, an unknown table or database, no
// database, no privilege, not supported (1235) or not allowed (1227).
func failedBeforeTables(diag []diagnostic) bool {
	if len(diag) != 1 || diag[0].Level != "Error" {
		return false
	}
	switch diag[0].Code {
	case mysql.ER_PARSE_ERROR, mysql.ER_SYNTAX_ERROR, mysql.ER_NO_SUCH_TABLE, mysql.ER_BAD_DB_ERROR, mysql.ER_NO_DB_ERROR,
		mysql.ER_TABLEACCESS_DENIED_ERROR, mysql.ER_DBACCESS_DENIED_ERROR, mysql.ER_UNKNOWN_TABLE, mysql.ER_BAD_TABLE_ERROR,
		mysql.ER_NOT_SUPPORTED_YET, mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR:
		return true
	}
	return false
}

// readsNoTable reports whether sql is a statement MariaDB runs with autocommit off without
// starting a transaction, one that reads and writes no table: SET, DO, or a SELECT without FROM
// (or FROM DUAL) calling none but noTableFunctions (a stored function may read tables). The proxy starts
// none for it either, so the client's status says no transaction where MariaDB's would not.
func readsNoTable(sql string) bool {
	if !sqltok.FirstKeywordIs(sql, sqltok.MySQL, "set", "do", "select") {
		return false
	}
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	for i, t := range toks {
		switch {
		case t.IsWord("into") && intoNoTable(toks[i+1:]):
			// SELECT ... INTO @v, INTO OUTFILE: MariaDB opens no transaction for them
		case t.IsWord("from") && (i+1 == len(toks) || !toks[i+1].IsWord("dual")), t.IsWord("into", "for", "lock"):
			return false // a table, FOR UPDATE
		case t.Kind == sqltok.Word && i+1 < len(toks) && toks[i+1].Text == "(" && !noTableFunctions[strings.ToLower(t.Text)]:
			return false
		}
	}
	return true
}

// intoNoTable reports whether the tokens after a SELECT's INTO name user variables (@v, @`v`)
// or a file (OUTFILE, DUMPFILE), which MariaDB writes without a transaction, rather than
// anything else (a procedure's local variable, a table in another dialect).
func intoNoTable(toks []sqltok.Token) bool {
	return len(toks) > 1 && (toks[0].Text == "@" && toks[1].Kind != sqltok.Operator || toks[0].IsWord("outfile", "dumpfile"))
}

// noTableFunctions are built-in functions a statement without FROM calls without reading a
// table (drivers' and applications' SELECT NOW(), VERSION(), ...).
var noTableFunctions = map[string]bool{"now": true, "version": true, "database": true, "schema": true, "user": true,
	"current_user": true, "connection_id": true, "last_insert_id": true, "concat": true, "coalesce": true,
	"ifnull": true, "if": true, "cast": true, "convert": true, "found_rows": true, "row_count": true,
	"current_timestamp": true, "utc_timestamp": true, "unix_timestamp": true, "sysdate": true, "curdate": true,
	"curtime": true, "rand": true, "uuid": true, "length": true, "char_length": true, "hex": true, "upper": true,
	"lower": true, "md5": true, "sha1": true, "sha2": true, "abs": true, "round": true, "floor": true, "ceil": true}

// startPinned prepares the newly pinned connection: the session's isolation level for the
// next transaction, then START TRANSACTION unless the client's own BEGIN is to run next.
func (h *session) startPinned(ctx context.Context, explicit bool) error {
	if h.isolation != "" {
		if err := h.execPinned(ctx, "SET TRANSACTION ISOLATION LEVEL "+h.isolation); err != nil {
			return err
		}
	}
	if explicit {
		return nil
	}
	return h.execPinned(ctx, "START TRANSACTION")
}

// execPinned runs a statement of the proxy's own (no rows) on the pinned connection.
func (h *session) execPinned(ctx context.Context, sql string) error {
	rows, err := h.pinned.Execute(ctx, h.request(sql, nil))
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		if _, err := rows.Next(ctx); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// syncTx unpins the session once the engine reports the transaction over, and keeps the
// status flags of OK and EOF packets (autocommit, in transaction) in step.
func (h *session) syncTx() {
	if h.pinned != nil && h.pinned.TxStatus() == 'I' && !h.held {
		h.unpin()
	}
	h.conn.UnsetStatus(mysql.SERVER_STATUS_AUTOCOMMIT | mysql.SERVER_STATUS_IN_TRANS | mysql.SERVER_MORE_RESULTS_EXISTS)
	h.conn.SetStatus(h.status())
}

// status is the client session's SERVER_STATUS flags.
func (h *session) status() uint16 {
	var s uint16
	if !h.autocommitOff {
		s |= mysql.SERVER_STATUS_AUTOCOMMIT
	}
	if h.more {
		s |= mysql.SERVER_MORE_RESULTS_EXISTS
	}
	if h.pinned != nil && (!h.held || h.pinned.TxStatus() != 'I') {
		s |= mysql.SERVER_STATUS_IN_TRANS
	}
	return s
}

func (h *session) unpin() {
	if h.pinned != nil {
		_ = h.pinned.Close()
		h.pinned, h.held = nil, false
		h.stmtRollback, h.stmtSavepoints = false, 0
		h.charsetOnEngine = false // the engine's character sets went with its connection
		h.onEngine = nil
	}
}

// namedLock finds GET_LOCK: a named lock belongs to the engine connection that took it, so
// the session keeps that connection (pinned) until the client disconnects, and closing it
// then releases the lock, as the client's own connection ending would.
var namedLock = regexp.MustCompile(`(?i)\bget_lock\s*\(`)

func takesNamedLock(sql string) bool {
	return (strings.Contains(sql, "_lock") || strings.Contains(sql, "_LOCK") || strings.Contains(sql, "_Lock")) && namedLock.MatchString(sql)
}

// beginsTransaction and isTxEnd read sql's first keyword after blanks and comments, so a
// driver's /* tag */ BEGIN pins a connection as BEGIN does.
func beginsTransaction(sql string) bool {
	return sqltok.FirstKeywordIs(sql, sqltok.MySQL, "begin", "start")
}

func isTxEnd(sql string) bool {
	return sqltok.FirstKeywordIs(sql, sqltok.MySQL, "rollback", "commit") && !rollsBackToSavepoint(sql)
}

// rollsBackToSavepoint reports whether sql is ROLLBACK [WORK] TO [SAVEPOINT] name, which ends
// no transaction: taken for a ROLLBACK, it rolled the whole transaction back and unpinned,
// and the client's COMMIT after it was answered OK with nothing committed.
func rollsBackToSavepoint(sql string) bool {
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	return len(toks) > 2 && toks[0].IsWord("rollback") && (toks[1].IsWord("to") || toks[1].IsWord("work") && toks[2].IsWord("to"))
}

// attributes are the client's connection attributes (program_name, _client_name, ...), which
// routing reads: copied once at login, shared by the session's requests.
func (h *session) attributes() map[string]string {
	attrs := h.conn.Attributes()
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]string, len(attrs))
	for k, v := range attrs {
		out[k] = v
	}
	return out
}

func (h *session) finishNoRows(ctx context.Context, rows query.Rows) (*mysql.Result, error) {
	for {
		_, err := rows.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			h.writeError(err)
			return written(), nil
		}
	}
	tag, _, ws := mysqlengine.SplitWarnings(rows.Tag())
	h.noteWarnings(ws)
	tag, ok := mysqlengine.SplitMySQLTag(tag)
	id, generated := insertID(tag)
	if generated {
		h.lastInsertID = id
	}
	if ok.StatusMessage == "" {
		ok.StatusMessage = updateInfo(tag)
	}
	ok.AffectedRows, ok.InsertId = affectedRows(tag), id
	return &ok, nil
}

// updateInfo is the OK packet's info of an UPDATE whose engine counted the rows it matched and
// changed as MySQL does (DuckDB's tag "UPDATE matched:3 changed:1 1"): "Rows matched: 3
// Changed: 1  Warnings: 0", as MySQL writes it (mysql2 reads its changedRows there); "" for
// any other tag.
func updateInfo(tag string) string {
	f := strings.Fields(tag)
	if len(f) != 4 || f[0] != "UPDATE" {
		return ""
	}
	matched, ok1 := strings.CutPrefix(f[1], "matched:")
	changed, ok2 := strings.CutPrefix(f[2], "changed:")
	if !ok1 || !ok2 {
		return ""
	}
	return "Rows matched: " + matched + "  Changed: " + changed + "  Warnings: 0"
}

// insertID reads the insert id an engine that keeps AUTO_INCREMENT columns itself (DuckDB)
// puts in an INSERT's command tag, where PostgreSQL's has an oid: "INSERT 5 2", 5 generated
// (the first of them: LAST_INSERT_ID() takes it); "INSERT explicit:7 1", no id generated and
// 7 the last one given (the OK packet carries it, LAST_INSERT_ID() stays); 0 for none.
func insertID(tag string) (id uint64, generated bool) {
	f := strings.Fields(tag)
	if len(f) != 3 || f[0] != "INSERT" {
		return 0, false
	}
	given, explicit := strings.CutPrefix(f[1], "explicit:")
	id, _ = strconv.ParseUint(given, 10, 64)
	return id, id != 0 && !explicit
}

// affectedRows reads the count at the end of a command tag ("INSERT 0 3" → 3).
func affectedRows(tag string) uint64 {
	i := strings.LastIndexByte(tag, ' ')
	n, err := strconv.ParseUint(tag[i+1:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// writeRows writes a resultset: column count, definitions, EOF, rows, then EOF (or an error
// packet if the stream fails midway).
func (h *session) writeRows(ctx context.Context, rows query.Rows, binary bool) error {
	schema := rows.Schema()
	cols := make([]column, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = columnFor(f)
		inClientCollation(&cols[i], f, h.collation)
	}
	buf := make([]byte, 4, 1024)
	if err := h.conn.WritePacket(append(buf, mysql.PutLengthEncodedInt(uint64(len(cols)))...)); err != nil {
		return err
	}
	for i := range cols {
		if err := h.conn.WritePacket(h.appendField(buf[:4], cols[i].field, cols[i].extended)); err != nil {
			return err
		}
	}
	if err := h.writeEOF(); err != nil {
		return err
	}
	answered := 0
	for {
		batch, err := rows.Next(ctx)
		if err == io.EOF && moreResults(rows) {
			return h.writeMore(h.writeEOF)
		}
		if err == io.EOF {
			_, n, ws := mysqlengine.SplitWarnings(rows.Tag())
			if total := answered*h.divZeros + countedZeros(rows); n == 0 && total > 0 {
				ws, n = divZeroWarnings(total), uint16(min(total, 0xffff))
			}
			h.noteWarnings(ws)
			h.warnings = n
			return h.writeEOF()
		}
		if batch != nil {
			answered += int(batch.NumRows())
		}
		if err != nil {
			return h.writeErrorPacket(h.clientError(err))
		}
		if err := h.writeBatch(batch, cols, binary, &buf); err != nil {
			return err
		}
		if err := h.out.w.Flush(); err != nil {
			return err
		}
	}
}

func (h *session) writeBatch(batch arrow.RecordBatch, cols []column, binary bool, buf *[]byte) error {
	n := int(batch.NumRows())
	if int(batch.NumCols()) != len(cols) {
		panic("mysqlwire: batch has " + strconv.Itoa(int(batch.NumCols())) + " columns, schema " + strconv.Itoa(len(cols)))
	}
	for i := 0; i < n; i++ {
		row := (*buf)[:4]
		if binary {
			row = appendBinaryRow(row, cols, batch, i)
		} else {
			for c := range cols {
				row = appendText(row, &cols[c], batch.Column(c), i)
			}
		}
		if err := h.conn.WritePacket(row); err != nil {
			return err
		}
		*buf = row
	}
	return nil
}

func appendBinaryRow(row []byte, cols []column, batch arrow.RecordBatch, i int) []byte {
	row = append(row, 0x00)
	bitmapAt := len(row)
	for range (len(cols) + 7 + 2) / 8 {
		row = append(row, 0)
	}
	for c := range cols {
		a := batch.Column(c)
		if cols[c].isNull || a.IsNull(i) || cols[c].temporal && !binaryYear(a, i) {
			row[bitmapAt+(c+2)/8] |= 1 << ((c + 2) % 8)
			continue
		}
		row = appendBinary(row, &cols[c], a, i)
	}
	return row
}

// binaryYear reports whether row i of the date or timestamp a has a year the binary protocol
// carries: 0 to 9999, as MySQL's own values. Another (DuckDB's infinity, 5881580-07-11, and its
// years BC or past 9999) is sent as NULL, as MySQL answers a date that overflows. Its two bytes
// would wrap, and go-sql-driver panicked formatting a year past 9999 (the application with it).
func binaryYear(a arrow.Array, i int) bool {
	y := timestampAt(a, i).Year()
	return 0 <= y && y <= 9999
}

func (h *session) writeEOF() error {
	status, w := h.status()|h.stmtStatus, h.warnings
	h.eof = [9]byte{4: mysql.EOF_HEADER, 5: byte(w), 6: byte(w >> 8), 7: byte(status), 8: byte(status >> 8)}
	return h.conn.WritePacket(h.eof[:])
}

// writeError writes err as an error packet (go-mysql would lose the code of errors returned
// from COM_STMT_EXECUTE, so the session writes them itself).
func (h *session) writeError(err error) {
	me := h.clientError(err)
	h.noteError(me)
	if werr := h.writeErrorPacket(me); werr != nil {
		h.conn.Close()
	}
}

func (h *session) writeErrorPacket(me *mysql.MyError) error {
	h.failed, h.lastErr = true, me.Code
	data := make([]byte, 4, 16+len(me.Message))
	data = append(data, mysql.ERR_HEADER, byte(me.Code), byte(me.Code>>8), '#')
	state := me.State
	if len(state) != 5 {
		state = sqlstate.MySQLGeneralError
	}
	data = append(data, state...)
	data = append(data, me.Message...)
	return h.conn.WritePacket(data)
}

// Session statements answered by the proxy itself: outside a transaction it keeps no engine
// session, so SET has no engine to reach (setvars.go), and clients ask these variables before
// any real query.
var (
	killStmt      = regexp.MustCompile(`(?is)^kill\s+(?:hard\s+|soft\s+)?(query\s+|connection\s+)?(\d+)\s*;?\s*$`)
	useStmt       = regexp.MustCompile("(?is)^use\\s+`?([^`;\\s]+)`?\\s*;?\\s*$")
	selectVarStmt = regexp.MustCompile(`(?is)^select\s+(@@[\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*@@[\w.]+(?:\s+as\s+\w+)?)*)\s*(?:limit\s+\d+)?\s*;?\s*$`)
	varItem       = regexp.MustCompile(`(?is)(@@[\w.]+)(?:\s+as\s+(\w+))?`)
)

func (h *session) local(sql string) (*mysql.Result, error, bool) {
	sql = strings.TrimSpace(sql)
	if !mayBeLocal(sql) {
		return nil, nil, false
	}
	if m := useStmt.FindStringSubmatch(sql); m != nil {
		if err := h.knownDatabase(m[1]); err != nil {
			return nil, err, true
		}
		h.db = m[1]
		return nil, nil, true
	}
	if h.answersSet(sql) {
		collation, autocommitOff := h.collation, h.autocommitOff
		err := h.set(sql) // see setvars.go
		return h.trackedSet(collation, autocommitOff, err), err, true
	}
	if m := killStmt.FindStringSubmatch(withoutLeadingComments(sql)); m != nil {
		return nil, h.kill(m[2], strings.EqualFold(strings.TrimSpace(m[1]), "connection")), true
	}
	if r, ok := h.showDiagnostics(sql); ok {
		return r, nil, true
	}
	if r, err, ok := h.showLocal(sql); ok {
		return r, err, true
	}
	if selectVarStmt.MatchString(sql) {
		r, ok := h.selectVars(sql)
		return r, nil, ok
	}
	return nil, nil, false
}

// withoutLeadingComments is sql from its first keyword on (a client's KILL QUERY may carry a
// tag comment); sql itself when it starts with no comment.
func withoutLeadingComments(sql string) string {
	if sql[0] != '/' && sql[0] != '#' && sql[0] != '-' {
		return sql
	}
	sc := sqltok.NewScanner(sql, sqltok.MySQL)
	if t, ok := sc.NextSignificant(); ok {
		return sql[t.Pos:]
	}
	return sql
}

// mayBeLocal is false for a statement local never answers: one that starts with none of their
// keywords (or a SELECT without @@), so that most statements skip its patterns.
func mayBeLocal(sql string) bool {
	if len(sql) < 3 {
		return false
	}
	switch sql[0] | 0x20 {
	case 'u', 'k', '/', '#', '-':
		return true // USE, KILL, or a comment before the keyword (SET's check reads past it)
	case 's':
		return sql[1]|0x20 != 'e' || sql[2]|0x20 != 'l' || strings.Contains(sql, "@@") // SET, SHOW, SELECT @@
	}
	return false
}

func (h *session) selectVars(sql string) (*mysql.Result, bool) {
	items := varItem.FindAllStringSubmatch(sql, -1)
	names := make([]string, len(items))
	values := make([]any, len(items))
	for i, it := range items {
		v, ok := h.variable(it[1])
		if !ok {
			return nil, false // let the engine answer variables the proxy does not know
		}
		names[i], values[i] = it[1], v
		if it[2] != "" {
			names[i] = it[2]
		}
	}
	rs := textResultset(names, [][]any{values})
	for i, f := range rs.Fields {
		if s, ok := values[i].(string); ok { // as MariaDB describes a variable's text: its length in the client's set
			f.ColumnLength = uint32(len(s)) * 4
			localInClientCollation(f, h.collation)
		}
	}
	return mysql.NewResult(rs), true
}

func (h *session) variable(name string) (any, bool) {
	n := strings.ToLower(strings.TrimPrefix(name, "@@"))
	n = strings.TrimPrefix(strings.TrimPrefix(n, "session."), "global.")
	if h.onEngine[n] {
		return nil, false // the client set it on its held connection: the engine's value is the session's
	}
	switch n {
	case "warning_count":
		return int64(len(h.diag)), true
	case "error_count":
		return int64(len(h.diagnostics("errors"))), true
	case "version_comment":
		return "QueryFlux", true
	case "version":
		return h.s.opts.ServerVersion, true
	case "max_allowed_packet":
		return int64(h.maxAllowedPacket()), true
	case "autocommit":
		if h.autocommitOff {
			return int64(0), true
		}
		return int64(1), true
	case "transaction_isolation", "tx_isolation":
		if h.isolation != "" {
			return strings.ReplaceAll(h.isolation, " ", "-"), true
		}
		return "REPEATABLE-READ", true
	case "transaction_read_only", "tx_read_only":
		return int64(0), true
	case "in_transaction": // what the OK packets' SERVER_STATUS_IN_TRANS says
		if h.routesToMySQL() {
			return nil, false
		}
		if h.status()&mysql.SERVER_STATUS_IN_TRANS != 0 {
			return int64(1), true
		}
		return int64(0), true
	case "time_zone":
		return cmp.Or(h.timeZone, timeZoneDefault), true
	case "system_time_zone":
		return "UTC", true
	case "character_set_client", "character_set_connection", "character_set_results":
		return collationOf(h.collation).Charset, !h.charsetOnEngine
	case "collation_connection":
		return collationOf(h.collation).Name, !h.charsetOnEngine
	case "character_set_server":
		return "utf8mb4", true
	case "collation_server":
		return "utf8mb4_general_ci", true
	case "sql_mode":
		if h.routesToMySQL() {
			return nil, false // the engine's own, which its server's configuration may have changed
		}
		return mariadbSQLMode, true
	case "lower_case_table_names":
		return int64(0), true
	case "wait_timeout", "interactive_timeout":
		return int64(28800), true
	case "auto_increment_increment", "auto_increment_offset":
		return int64(1), true
	case "character_set_database":
		return "utf8mb4", true
	case "collation_database":
		return "utf8mb4_general_ci", true
	case "default_storage_engine":
		return "InnoDB", true
	case "init_connect":
		return "", true
	case "license":
		return "GPL", true
	case "net_read_timeout":
		return int64(30), true
	case "net_write_timeout":
		return int64(60), true
	case "performance_schema", "sql_auto_is_null":
		return int64(0), true
	case "query_cache_size":
		return int64(1048576), true
	case "query_cache_type":
		return "OFF", true
	case "sql_select_limit":
		return sqlSelectLimitDefault, true
	}
	return nil, false
}

// mariadbSQLMode is MariaDB's default @@sql_mode (10.2.4 on): what a client is told on an engine
// that is not MySQL, as a MariaDB server left at its defaults tells it.
const mariadbSQLMode = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"

// engineRouter is a backend that tells which engine a statement routes to (proxy.Core).
type engineRouter interface {
	RoutesTo(q *query.Request, is func(query.Engine) bool) bool
}

// routesToMySQL reports whether the session's statements go to a MySQL engine, which answers
// its server's variables itself (canRelay: a MySQL engine, relayed or not).
func (h *session) routesToMySQL() bool {
	r, ok := h.s.backend.(engineRouter)
	if !ok {
		return false
	}
	var q query.Request
	h.fillAs(&q, "SELECT 1", nil) // routed as the session's statements are; it names no session value
	return r.RoutesTo(&q, canRelay)
}

var _ server.Handler = (*session)(nil)

// kill handles KILL [QUERY|CONNECTION] id for a session of the same user (the mariadb CLI
// sends KILL QUERY on Ctrl-C): the running statement's context is cancelled, and for
// CONNECTION the session's connection is closed.
// It never reaches an engine, whose thread ids mean something else.
func (h *session) kill(idText string, connection bool) error {
	id, err := strconv.ParseUint(idText, 10, 32)
	h.s.mu.Lock()
	target := h.s.sessions[uint32(id)]
	h.s.mu.Unlock()
	if err != nil || target == nil {
		return mysql.NewError(mysql.ER_NO_SUCH_THREAD, "Unknown thread id: "+idText)
	}
	target.mu.Lock()
	if target.user != h.user { // under target.mu: COM_CHANGE_USER changes it
		target.mu.Unlock()
		return mysql.NewError(mysql.ER_NO_SUCH_THREAD, "Unknown thread id: "+idText)
	}
	if target.cancel != nil {
		target.cancel()
	}
	target.mu.Unlock()
	if connection && target != h {
		target.closeConn()
	}
	return nil
}

// closeConn ends the session's connection from another goroutine: a socket the event loop
// holds is taken off it first, and the session then ends.
func (h *session) closeConn() {
	h.idleMu.Lock()
	defer h.idleMu.Unlock()
	h.killed = true
	if lr := h.onloop; lr != nil {
		lr.hd.Stop()
		return
	}
	_ = h.raw.Close()
}

func (h *session) isKilled() bool {
	h.idleMu.Lock()
	defer h.idleMu.Unlock()
	return h.killed
}
