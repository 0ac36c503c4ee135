package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/pgcopy"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// The frontend's own path: statements that are not forwarded to a PostgreSQL engine
// connection (forward.go) run through the proxy core's Execute, and their rows come back as
// Arrow batches encoded here. That is every statement for engines of other kinds (DuckDB,
// Trino, MySQL), and for a group whose results the core needs (a result cache,
// settings.passthrough: false). A statement outside a transaction runs on whichever pooled
// engine connection is free, and BEGIN pins one for the transaction (conn.session); so a
// session-level SET that would stay behind on a pooled connection is refused
// (CheckSessionState), and client-protocol settings are answered here (session.go).

// flushBytesMax is how many bytes of rows are buffered before they are written to the client.
const flushBytesMax = 64 << 10

// preparedStmt is a parsed statement (Parse), named or unnamed.
type preparedStmt struct {
	sql       string
	named     bool     // prepared under a name (not the unnamed statement)
	paramOIDs []uint32 // declared by the client; 0 = unspecified, refined by Describe
	desc      *engine.Description
	result    *arrow.Schema // a named statement's first run's columns (resultChanged)
	key       string        // on engine connections: the SQL and declared types (stmtKey)
	held      int           // bytes counted against the connection's budget (keepStmt)
}

// portal is a bound statement (Bind), and once started, its open result stream.
type portal struct {
	stmt    *preparedStmt
	args    []any
	formats []int16 // result format codes as Bind gave them

	ctx     context.Context
	cancel  context.CancelFunc
	rows    query.Rows // nil until started
	encs    []columnEncoder
	cur     arrow.RecordBatch
	row     int
	sent    int64
	started bool
	copyOut *pgcopy.Statement // a COPY ... TO STDOUT's: its rows go as COPY data
	// suspended: an Execute stopped at its row limit; done: one completed the portal.
	suspended, done bool
	cursor          *cursor // a SQL cursor's portal (DECLARE), else nil
	held            int     // bytes counted against the connection's budget: values, held rows
}

func (c *conn) simpleQuery(sql string) error {
	stmts := SplitStatements(sql)
	if len(stmts) == 0 {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
	}
	for _, s := range stmts {
		p := &portal{stmt: &preparedStmt{sql: s}}
		err := c.runSimple(p)
		c.finishPortal(p)
		if err != nil {
			var ioe *ioError
			if errors.As(err, &ioe) {
				return err
			}
			c.sendError(err)
			break
		}
	}
	c.syncTxStatus()
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus})
	return c.flush()
}

func (c *conn) runSimple(p *portal) error {
	if err := c.startPortal(p); err != nil {
		return err
	}
	if p.copyOut != nil {
		return c.sendCopyOut(p)
	}
	if p.rows.Schema() != nil {
		c.be.Send(c.rowDescription(p.rows.Schema(), p.encs))
	}
	return c.executePortal(p, 0)
}

// startPortal runs p's statement on the backend and prepares its column encoders.
func (c *conn) startPortal(p *portal) error {
	if p.started {
		return nil
	}
	p.started = true
	if isCursorStatement(p.stmt.sql) {
		return c.cursorStatement(p)
	}
	if rows, local, err := c.localStatement(p.stmt.sql); local {
		p.rows = rows
		return err
	}
	if err := c.holdCursorsForCommit(p.stmt.sql); err != nil {
		return err
	}
	if !query.AwaitReady(c.ctx, c.srv.backend) {
		return query.ErrNotConfigured
	}
	p.ctx, p.cancel = context.WithCancel(c.ctx)
	req := c.request(p.stmt.sql, p.args)
	req.ArgOIDs = p.stmt.paramOIDs[:min(len(p.stmt.paramOIDs), len(p.args))]
	if err := c.openSessionFor(req); err != nil {
		return err
	}
	execute := c.srv.backend.Execute
	if c.session != nil {
		execute = c.session.Execute
	}
	var src *copySource
	unwatch := func() {}
	if cp, ok, err := copyStatement(req); ok && err != nil {
		return err
	} else if ok && cp.In {
		src = &copySource{c: c, binary: cp.Binary} // the engine reads the client while it runs: no watch of the socket
		req.CopyIn = src
	} else if ok {
		req.CopyOut, p.copyOut = true, &cp
	}
	// A COMMIT of a transaction that did not fail keeps its plain SET TIME ZONE (txzone.go).
	committing := c.zones != nil && c.session != nil && c.session.TxStatus() == 'T' &&
		sqltok.FirstKeywordIs(p.stmt.sql, sqltok.Postgres, "commit", "end")
	c.beginRun(p.cancel)
	if src == nil {
		unwatch = c.watchSlow(p.cancel)
	}
	rows, err := execute(p.ctx, req)
	unwatch()
	c.endRun()
	if err == nil && c.zones != nil {
		c.zoneStatement(p.stmt.sql, committing)
	}
	if src != nil {
		if ferr := src.finish(); ferr != nil {
			if rows != nil {
				_ = rows.Close()
			}
			return ferr
		}
	}
	if err != nil {
		return c.runError(err)
	}
	kept := p.stmt.result != nil
	if err := resultChanged(p.stmt, rows.Schema()); err != nil {
		_ = rows.Close()
		c.failTx()
		return err
	}
	if !kept && p.stmt.result != nil {
		if err := c.holdSchema(p.stmt, p.stmt.result.Fields()); err != nil {
			p.stmt.result = nil
			_ = rows.Close()
			c.failTx()
			return err
		}
	}
	p.rows = rows
	if schema := rows.Schema(); schema != nil {
		encs, err := encodersFor(c.typeMap, schema, p.formats)
		if err != nil {
			return err
		}
		p.encs = encs
	}
	return nil
}

// resultChanged refuses, as PostgreSQL does, the run of a named statement whose columns are no
// longer those its Describe or its first run gave the client: a client that keeps a statement
// also keeps its description (JDBC reads the rows of a Bind/Execute by it, with no new
// Describe), so rows of other columns would be misread. The client prepares it again, as it
// does on PostgreSQL (pgjdbc on this error, by itself). A Describe is held to the columns'
// number and names only: an engine may describe a type a little differently than its run
// answers it (DuckDB's DESCRIBE), which a client reads alike in text; a run is held to the
// first run's types too.
func resultChanged(st *preparedStmt, schema *arrow.Schema) error {
	if !st.named || schema == nil {
		return nil
	}
	if st.result != nil {
		if sameColumns(st.result, schema, true) {
			return nil
		}
	} else if st.desc == nil || st.desc.Schema == nil || sameColumns(st.desc.Schema, schema, false) {
		st.result = schema
		return nil
	}
	// pgjdbc prepares the statement again and retries when the error names PostgreSQL's routine.
	return &pgconn.PgError{Severity: "ERROR", Code: sqlstate.FeatureNotSupported, Message: "cached plan must not change result type", Routine: "RevalidateCachedQuery"}
}

// sameColumns: was and now have the same columns by number and name, and by PostgreSQL type
// when typed.
func sameColumns(was, now *arrow.Schema, typed bool) bool {
	if was.NumFields() != now.NumFields() {
		return false
	}
	for i := range now.NumFields() {
		if was.Field(i).Name != now.Field(i).Name {
			return false
		}
		if typed {
			a, _ := engine.PGTypeOf(was.Field(i))
			b, _ := engine.PGTypeOf(now.Field(i))
			if a != b {
				return false
			}
		}
	}
	return true
}

// executePortal sends up to rowsMax rows (0 = all) of a started portal, then PortalSuspended
// when it stopped at rowsMax, else CommandComplete. Like PostgreSQL it does not look ahead: a
// limit that uses up the rows suspends the portal, and the next Execute completes it with
// none.
func (c *conn) executePortal(p *portal, rowsMax int64) error {
	if p.rows == nil || p.done {
		return nil
	}
	if p.copyOut != nil {
		// All its data, whatever the row limit: PostgreSQL's COPY ignores it too.
		c.beginRun(p.cancel)
		defer c.endRun()
		defer c.watchSlow(p.cancel)()
		return c.sendCopyOut(p)
	}
	c.beginRun(p.cancel)
	defer c.endRun()
	defer c.watchSlow(p.cancel)()
	var n int64
	for p.rows.Schema() != nil {
		if rowsMax > 0 && n == rowsMax {
			p.suspended = true
			c.be.Send(&pgproto3.PortalSuspended{})
			return nil
		}
		if p.cur == nil || p.row >= int(p.cur.NumRows()) {
			p.cur, p.row = nil, 0
			batch, err := p.rows.Next(p.ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				return c.runError(err)
			}
			p.cur = batch
			continue
		}
		if err := c.sendRow(p.cur, p.row, p.encs); err != nil {
			return err
		}
		p.row++
		p.sent++
		n++
		if c.unflushed > flushBytesMax {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	p.done = true
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(commandTag(p, n))})
	return nil
}

// executeDone answers an Execute of the completed portal name as PostgreSQL does: a query
// completes again with no rows; another statement cannot run twice.
func (c *conn) executeDone(name string, p *portal) error {
	if p.rows == nil || p.rows.Schema() == nil {
		return &query.Error{Code: sqlstate.ObjectNotInPrerequisiteState, Message: fmt.Sprintf("portal %q cannot be run", name)}
	}
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 0")})
	return nil
}

// commandTag is the engine's tag, or one derived from what was sent. A query's portal that
// was suspended completes with the rows of its last Execute (n), as in PostgreSQL.
func commandTag(p *portal, n int64) string {
	tag := p.rows.Tag()
	if tag == "" && p.rows.Schema() != nil {
		tag = "SELECT " + strconv.FormatInt(p.sent, 10)
	}
	if strings.HasPrefix(tag, "SELECT ") && sqltok.FirstKeywordIs(p.stmt.sql, sqltok.Postgres, "show") {
		return "SHOW" // an engine answers SHOW with a SELECT of the value (DuckDB)
	}
	if p.suspended && strings.HasPrefix(tag, "SELECT ") {
		return "SELECT " + strconv.FormatInt(n, 10)
	}
	if tag != "" {
		return tag
	}
	fields := strings.Fields(p.stmt.sql)
	if len(fields) == 0 {
		return ""
	}
	return strings.ToUpper(fields[0])
}

func (c *conn) sendRow(rec arrow.RecordBatch, row int, encs []columnEncoder) error {
	c.scratch = c.scratch[:0]
	ends := c.ends[:0]
	for i, enc := range encs {
		col := rec.Column(i)
		if col.IsNull(row) {
			ends = append(ends, -1)
			continue
		}
		var err error
		c.scratch, err = enc.fn(col, row, c.scratch)
		if err != nil {
			return &query.Error{Code: sqlstate.DataException, Message: fmt.Sprintf("column %q: %v", rec.ColumnName(i), err)}
		}
		ends = append(ends, len(c.scratch))
	}
	c.ends = ends
	c.values = c.values[:0]
	start := 0
	for _, end := range ends {
		if end < 0 {
			c.values = append(c.values, nil)
			continue
		}
		v := c.scratch[start:end:end]
		if v == nil { // empty, before scratch held anything: a nil value would be sent as NULL
			v = []byte{}
		}
		c.values = append(c.values, v)
		start = end
	}
	c.be.Send(&pgproto3.DataRow{Values: c.values})
	c.unflushed += len(c.scratch) + 4*len(ends)
	return nil
}

func (c *conn) rowDescription(schema *arrow.Schema, encs []columnEncoder) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{Fields: make([]pgproto3.FieldDescription, schema.NumFields())}
	for i, f := range schema.Fields() {
		rd.Fields[i] = fieldDescription(f, encFormat(encs, i))
	}
	return rd
}

func encFormat(encs []columnEncoder, i int) int16 {
	if encs == nil {
		return 0
	}
	return encs[i].format
}

// runError turns a cancelled context into PostgreSQL's query_canceled.
func (c *conn) runError(err error) error {
	if c.cancelRequested.Load() && (errors.Is(err, context.Canceled) || isPGCancel(err)) {
		return &query.Error{Code: sqlstate.QueryCanceled, Message: "canceling statement due to user request"}
	}
	return err
}

func isPGCancel(err error) bool {
	var qe *query.Error
	return errors.As(err, &qe) && qe.Code == sqlstate.QueryCanceled
}

// finishPortal ends p. Its context is cancelled first, so a result abandoned half-way is
// cancelled on the engine rather than read to its end by Close.
func (c *conn) finishPortal(p *portal) {
	if p.cancel != nil {
		p.cancel()
	}
	if p.rows != nil {
		_ = p.rows.Close()
		p.rows = nil
	}
	p.cur = nil
}

func (c *conn) closePortal(name string) {
	if p, ok := c.portals[name]; ok {
		c.finishPortal(p)
		c.held.Give(p.held)
		delete(c.portals, name)
	}
}

// Extended protocol.

func (c *conn) parse(m *pgproto3.Parse) error {
	if err := c.checkNewStatement(m.Name); err != nil {
		return err
	}
	if err := c.checkParse(m); err != nil {
		return err
	}
	stmts := SplitStatements(m.Query)
	if len(stmts) > 1 {
		return &query.Error{Code: sqlstate.SyntaxError, Message: "cannot insert multiple commands into a prepared statement"}
	}
	sql := ""
	if len(stmts) == 1 {
		sql = stmts[0]
	}
	if err := c.keepStmt(m.Name, &preparedStmt{sql: sql, named: m.Name != "", paramOIDs: append([]uint32(nil), m.ParameterOIDs...)}); err != nil {
		return err
	}
	c.be.Send(&pgproto3.ParseComplete{})
	return nil
}

func (c *conn) bind(m *pgproto3.Bind) error {
	st, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return &query.Error{Code: sqlstate.InvalidSQLStatementName, Message: fmt.Sprintf("prepared statement %q does not exist", m.PreparedStatement)}
	}
	if m.DestinationPortal != "" {
		if _, exists := c.portals[m.DestinationPortal]; exists {
			return &query.Error{Code: sqlstate.DuplicateCursor, Message: fmt.Sprintf("portal %q already exists", m.DestinationPortal)}
		}
		if err := c.checkNewPortal(m.DestinationPortal, len(c.portals)); err != nil {
			return err
		}
	} else {
		c.closePortal("")
	}
	held := heldOverheadBytes + len(m.DestinationPortal) + 2*len(m.ResultFormatCodes)
	for _, v := range m.Parameters {
		held += len(v)
	}
	if err := c.checkRoom(held); err != nil { // before the values are decoded
		return err
	}
	if st.desc == nil && st.sql != "" && binaryUntyped(st, m) {
		// node-postgres sends a Buffer as a binary value of no type: learn it from the engine.
		if err := c.learnTypes(st); err != nil {
			return err
		}
	}
	used := sqltok.CountParams(st.sql, sqltok.Postgres)
	if want := max(len(st.paramOIDs), used); len(m.Parameters) != want {
		// As PostgreSQL: an engine would bind what it is given and ignore a value too many.
		return &query.Error{Code: sqlstate.ProtocolViolation, Message: fmt.Sprintf(
			"bind message supplies %d parameters, but prepared statement \"%s\" requires %d", len(m.Parameters), m.PreparedStatement, want)}
	}
	args, err := decodeParams(c.typeMap, st.paramOIDs, m.ParameterFormatCodes, m.Parameters)
	if err != nil {
		return err
	}
	if used > 0 && len(args) > used {
		// Parameters the client declared beyond the last $n the statement uses: PostgreSQL
		// checks their values and binds them to nothing; an engine would refuse them.
		args = args[:used]
	}
	if err := c.takeHeld(held); err != nil {
		return err
	}
	c.portals[m.DestinationPortal] = &portal{stmt: st, args: args, formats: append([]int16(nil), m.ResultFormatCodes...), held: held}
	c.be.Send(&pgproto3.BindComplete{})
	return nil
}

func (c *conn) describe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		st, ok := c.stmts[m.Name]
		if !ok {
			return &query.Error{Code: sqlstate.InvalidSQLStatementName, Message: fmt.Sprintf("prepared statement %q does not exist", m.Name)}
		}
		return c.describeStatement(st)
	case 'P':
		p, ok := c.portals[m.Name]
		if !ok {
			return &query.Error{Code: sqlstate.InvalidCursorName, Message: fmt.Sprintf("portal %q does not exist", m.Name)}
		}
		// The columns of a portal are known once it runs: start it now, Execute streams it.
		if p.stmt.sql == "" {
			c.be.Send(&pgproto3.NoData{})
			return nil
		}
		if err := c.startPortal(p); err != nil {
			return err
		}
		if p.rows.Schema() == nil || p.copyOut != nil { // a COPY's rows go as COPY data
			c.be.Send(&pgproto3.NoData{})
			return nil
		}
		c.be.Send(c.rowDescription(p.rows.Schema(), p.encs))
		return nil
	}
	return &query.Error{Code: sqlstate.ProtocolViolation, Message: fmt.Sprintf("invalid Describe object type %q", m.ObjectType)}
}

// describer is what describes a statement: inside a transaction its pinned session (the
// statement may use what the transaction made, and a second slot could deadlock at
// maxRunningQueries 1), else the backend.
func (c *conn) describer() (engine.Describer, bool) {
	if c.session != nil {
		d, ok := c.session.(engine.Describer)
		return d, ok
	}
	d, ok := c.srv.backend.(engine.Describer)
	return d, ok
}

// describeStatement answers with parameter types and columns: exactly when the backend is an
// engine.Describer, else from the client's declared types and without columns.
func (c *conn) describeStatement(st *preparedStmt) error {
	if st.sql == "" {
		c.be.Send(&pgproto3.ParameterDescription{})
		c.be.Send(&pgproto3.NoData{})
		return nil
	}
	if err := c.learnTypes(st); err != nil {
		return err
	}
	c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: st.paramOIDs})
	if st.desc.Schema == nil {
		c.be.Send(&pgproto3.NoData{})
		return nil
	}
	c.be.Send(c.rowDescription(st.desc.Schema, nil))
	return nil
}

// learnTypes describes st once: its parameter types where the client left them unspecified
// (0), and its columns.
func (c *conn) learnTypes(st *preparedStmt) error {
	if st.desc != nil {
		return nil
	}
	if err := c.describeOnce(st); err != nil {
		return err
	}
	if err := c.holdSchema(st, descFields(st.desc)); err != nil {
		st.desc = nil
		return err
	}
	return nil
}

// describeOnce sets st.desc: what a SET, a cursor statement or the engine says of st.
func (c *conn) describeOnce(st *preparedStmt) error {
	if st.desc == nil && startsWithSetOrReset(st.sql) {
		// A SET or RESET answers no rows and takes no parameter, as PostgreSQL describes it; what
		// it sets is checked when it runs (localStatement). An engine asked to describe it may not
		// read PostgreSQL's forms of it (DuckDB: SET search_path TO "$user", public).
		st.desc = &engine.Description{}
	}
	if st.desc == nil && isCursorStatement(st.sql) {
		desc, err := c.describeCursorStatement(st.sql)
		if err != nil {
			return err
		}
		st.desc = desc
	}
	if st.desc == nil {
		if d, ok := c.describer(); ok {
			if !query.AwaitReady(c.ctx, c.srv.backend) {
				return query.ErrNotConfigured
			}
			ctx, cancel := context.WithCancel(c.srv.baseCtx)
			c.beginRun(cancel)
			req := c.request(st.sql, nil)
			req.ArgOIDs = st.paramOIDs // as the client declared them
			desc, err := d.Describe(ctx, req)
			c.endRun()
			cancel()
			if err != nil {
				return c.runError(err)
			}
			st.desc = desc
		} else {
			// Unknown types stay 0 ("unspecified"): clients then send text, which the engine
			// parses against the types it infers.
			st.desc = &engine.Description{}
			for len(st.paramOIDs) < sqltok.CountParams(st.sql, sqltok.Postgres) {
				st.paramOIDs = append(st.paramOIDs, 0)
			}
		}
		for i, f := range st.desc.Params {
			oid, _ := engine.PGTypeOf(f)
			if i >= len(st.paramOIDs) {
				st.paramOIDs = append(st.paramOIDs, 0)
			}
			if st.paramOIDs[i] == 0 {
				st.paramOIDs[i] = oid
			}
		}
	}
	return nil
}

// binaryUntyped reports whether m sends a binary parameter whose type neither the client nor
// a description gave: it cannot be decoded before the statement is described.
func binaryUntyped(st *preparedStmt, m *pgproto3.Bind) bool {
	for i, v := range m.Parameters {
		if v != nil && formatFor(m.ParameterFormatCodes, i) == pgtype.BinaryFormatCode && (i >= len(st.paramOIDs) || st.paramOIDs[i] == 0) {
			return true
		}
	}
	return false
}

func (c *conn) execute(m *pgproto3.Execute) error {
	p, ok := c.portals[m.Portal]
	if !ok {
		return &query.Error{Code: sqlstate.InvalidCursorName, Message: fmt.Sprintf("portal %q does not exist", m.Portal)}
	}
	if p.stmt.sql == "" {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	if p.done {
		return c.executeDone(m.Portal, p)
	}
	if err := c.startPortal(p); err != nil {
		return err
	}
	return c.executePortal(p, int64(m.MaxRows))
}

func (c *conn) close(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		c.dropStmt(m.Name)
	case 'P':
		c.closePortal(m.Name)
	default:
		return &query.Error{Code: sqlstate.ProtocolViolation, Message: fmt.Sprintf("invalid Close object type %q", m.ObjectType)}
	}
	c.be.Send(&pgproto3.CloseComplete{})
	return nil
}
