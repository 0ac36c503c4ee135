package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// SQL cursors on the frontend's own path (DuckDB, and any engine whose statements are not
// forwarded): DECLARE runs the cursor's query as a portal named after the cursor, FETCH and
// MOVE read it forward, CLOSE ends it. psycopg's named cursors (DECLARE "c" CURSOR ... FOR,
// FETCH FORWARD n FROM "c", a Describe of portal "c", CLOSE "c") and psycopg2's work so, as the
// portals PostgreSQL shares with cursors: a Describe or Close of the portal names the cursor.
// A cursor ends with its transaction, unless declared WITH HOLD: then what is left of its
// result is read into memory (at most cursorHeldBytesMax) when the transaction commits, or at
// once outside one, as PostgreSQL materializes it. Only forward reads are possible (a
// streamed result cannot go back): PRIOR, BACKWARD and negative counts are refused, as on a
// PostgreSQL NO SCROLL cursor.

// cursorHeldBytesMax bounds what one WITH HOLD cursor keeps in memory past its transaction.
const cursorHeldBytesMax = 256 << 20

// cursor is what a portal declared by DECLARE knows beyond its query.
type cursor struct {
	name    string
	hold    bool // WITH HOLD
	held    bool // its rows are in memory: it outlives transactions
	scroll  bool // declared SCROLL (still read forward only here)
	binary  bool // DECLARE BINARY: FETCH sends binary values
	pos     int64
	pastEnd bool
}

// isCursorStatement is a cheap first look at sql: DECLARE, FETCH, MOVE or CLOSE.
func isCursorStatement(sql string) bool {
	return sqltok.FirstKeywordIs(sql, sqltok.Postgres, "declare", "fetch", "move", "close")
}

// cursorStatement runs a cursor statement in p: p.rows is its answer.
func (c *conn) cursorStatement(p *portal) (err error) {
	p.ctx, p.cancel = context.WithCancel(c.ctx)
	if c.session != nil && c.session.TxStatus() == 'E' {
		return &query.Error{Code: sqlstate.InFailedSQLTransaction, Message: "current transaction is aborted, commands ignored until end of transaction block"}
	}
	defer func() {
		if err != nil {
			c.failTx()
		}
	}()
	toks := significantTokens(p.stmt.sql)
	switch strings.ToLower(toks[0].Text) {
	case "declare":
		return c.declare(p, toks)
	case "close":
		return c.closeCursor(p, toks)
	}
	op, name, err := parseFetch(toks)
	if err != nil {
		return err
	}
	cp, err := c.cursorNamed(name)
	if err != nil {
		return err
	}
	f := &fetchRows{c: c, p: cp, op: op, verb: strings.ToUpper(toks[0].Text)}
	if err := f.start(); err != nil {
		return err
	}
	if f.verb == "MOVE" {
		for {
			if _, err := f.Next(p.ctx); err == io.EOF {
				break
			} else if err != nil {
				return err
			}
		}
		_ = f.Close()
		p.rows = engine.TagRows(f.Tag())
		return nil
	}
	p.rows = f
	formats := p.formats
	if len(formats) == 0 && cp.cursor.binary {
		formats = []int16{1}
	}
	p.encs, err = encodersFor(c.typeMap, f.Schema(), formats)
	return err
}

// failTx fails the open transaction, as PostgreSQL does on any error in it, when a cursor
// statement the frontend answers itself fails.
func (c *conn) failTx() {
	if f, ok := c.session.(engine.TxFailer); ok {
		f.FailTx()
	}
}

// cursorNamed is the open cursor name.
func (c *conn) cursorNamed(name string) (*portal, error) {
	cp, ok := c.portals[name]
	if !ok || cp.cursor == nil {
		return nil, &query.Error{Code: sqlstate.InvalidCursorName, Message: fmt.Sprintf("cursor %q does not exist", name)}
	}
	return cp, nil
}

// declare: DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE] [[NO] SCROLL] CURSOR
// [{WITH | WITHOUT} HOLD] FOR query. The query starts now, so its errors are DECLARE's.
func (c *conn) declare(p *portal, toks []sqltok.Token) error {
	if len(toks) < 2 {
		return syntaxError(p.stmt.sql)
	}
	name, ok := identValue(toks[1])
	if !ok {
		return syntaxErrorAt(toks[1])
	}
	cur := &cursor{name: name}
	i := 2
	for ; i < len(toks) && !toks[i].IsWord("cursor"); i++ {
		switch {
		case toks[i].IsWord("binary"):
			cur.binary = true
		case toks[i].IsWord("scroll"):
			cur.scroll = true
		case toks[i].IsWord("no") && i+1 < len(toks) && toks[i+1].IsWord("scroll"):
			i++
		case toks[i].IsWord("asensitive", "insensitive"):
		default:
			return syntaxErrorAt(toks[i])
		}
	}
	i++ // CURSOR
	if i+1 < len(toks) && toks[i].IsWord("with", "without") && toks[i+1].IsWord("hold") {
		cur.hold = toks[i].IsWord("with")
		i += 2
	}
	if i+1 >= len(toks) || !toks[i].IsWord("for") {
		return syntaxError(p.stmt.sql)
	}
	if q := toks[i+1]; !q.IsWord("select", "values", "with", "table") && q.Text != "(" {
		return syntaxErrorAt(q)
	}
	if name == "" {
		return &query.Error{Code: sqlstate.InvalidCursorName, Message: "invalid cursor name: must not be empty"}
	}
	if _, exists := c.portals[name]; exists {
		return &query.Error{Code: sqlstate.DuplicateCursor, Message: fmt.Sprintf("cursor %q already exists", name)}
	}
	if c.session == nil && !cur.hold {
		return &query.Error{Code: sqlstate.NoActiveSQLTransaction, Message: "DECLARE CURSOR can only be used in transaction blocks"}
	}
	if err := c.checkNewPortal(name, len(c.portals)); err != nil {
		return err
	}
	cp := &portal{stmt: &preparedStmt{sql: strings.TrimSpace(p.stmt.sql[toks[i+1].Pos:]), paramOIDs: p.stmt.paramOIDs}, args: p.args, cursor: cur}
	if cur.binary {
		cp.formats = []int16{1}
	}
	if err := c.startPortal(cp); err != nil {
		c.finishPortal(cp)
		return err
	}
	if cp.rows.Schema() == nil {
		c.finishPortal(cp)
		return &query.Error{Code: sqlstate.InvalidCursorDefinition, Message: "cursor query returns no rows"}
	}
	h := engine.NewHoldable(cp.rows)
	cp.rows = h
	if c.session == nil { // WITH HOLD outside a transaction: its implicit one ends now
		if err := c.holdCursor(cp); err != nil {
			c.finishPortal(cp)
			return err
		}
	}
	c.portals[name] = cp
	p.rows = engine.TagRows("DECLARE CURSOR")
	return nil
}

// holdCursor reads the rest of a WITH HOLD cursor's result into memory.
func (c *conn) holdCursor(cp *portal) error {
	c.beginRun(cp.cancel)
	defer c.endRun()
	// At most what the connection's budget has room for: many cursors of a connection, and
	// many connections, would otherwise each hold cursorHeldBytesMax.
	h := cp.rows.(*engine.Holdable)
	if err := h.Hold(cp.ctx, min(cursorHeldBytesMax, max(c.held.Room(), 1))); err != nil {
		return c.runError(err)
	}
	if err := c.takeHeld(int(h.HeldBytes())); err != nil {
		return err
	}
	cp.held += int(h.HeldBytes())
	cp.cursor.held = true
	return nil
}

// holdCursorsForCommit reads the WITH HOLD cursors of the transaction into memory before sql,
// when sql commits it: they outlive it, the engine connection does not.
func (c *conn) holdCursorsForCommit(sql string) error {
	if c.session == nil || c.session.TxStatus() != 'T' || !sqltok.FirstKeywordIs(sql, sqltok.Postgres, "commit", "end") {
		return nil
	}
	for _, cp := range c.portals {
		if cp.cursor != nil && cp.cursor.hold && !cp.cursor.held {
			if err := c.holdCursor(cp); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeCursor: CLOSE name, or CLOSE ALL.
func (c *conn) closeCursor(p *portal, toks []sqltok.Token) error {
	if len(toks) != 2 {
		return syntaxError(p.stmt.sql)
	}
	if toks[1].IsWord("all") {
		for name, cp := range c.portals {
			if cp.cursor != nil {
				c.closePortal(name)
			}
		}
		p.rows = engine.TagRows("CLOSE CURSOR ALL")
		return nil
	}
	name, ok := identValue(toks[1])
	if !ok {
		return syntaxErrorAt(toks[1])
	}
	if _, err := c.cursorNamed(name); err != nil {
		return err
	}
	c.closePortal(name)
	p.rows = engine.TagRows("CLOSE CURSOR")
	return nil
}

// fetchOp is what a FETCH or MOVE asks for, read forward: skip rows, then count rows (-1:
// all); or the last row; or the row at an absolute position (resolved by fetchRows.start).
type fetchOp struct {
	skip, count int64
	last        bool
	absolute    bool
	at          int64
}

// parseFetch reads FETCH | MOVE [direction] [FROM | IN] name.
func parseFetch(toks []sqltok.Token) (fetchOp, string, error) {
	if len(toks) < 2 {
		return fetchOp{}, "", syntaxErrorAt(toks[0])
	}
	name, ok := identValue(toks[len(toks)-1])
	if !ok {
		return fetchOp{}, "", syntaxErrorAt(toks[len(toks)-1])
	}
	dir := toks[1 : len(toks)-1]
	if n := len(dir); n > 0 && dir[n-1].IsWord("from", "in") {
		dir = dir[:n-1]
	}
	op := fetchOp{count: 1}
	switch {
	case len(dir) == 0 || len(dir) == 1 && dir[0].IsWord("next", "forward"):
	case len(dir) == 1 && dir[0].IsWord("all") || len(dir) == 2 && dir[0].IsWord("forward") && dir[1].IsWord("all"):
		op.count = -1
	case dir[0].IsWord("prior", "backward"):
		return op, name, errBackward
	case len(dir) == 1 && dir[0].IsWord("first"):
		op = fetchOp{absolute: true, at: 1}
	case len(dir) == 1 && dir[0].IsWord("last"):
		op = fetchOp{last: true}
	default:
		word, nums := "", dir
		if dir[0].IsWord("absolute", "relative", "forward") {
			word, nums = strings.ToLower(dir[0].Text), dir[1:]
		}
		n, ok := signedCount(nums)
		if !ok {
			return op, name, syntaxErrorAt(dir[len(dir)-1])
		}
		switch {
		case word == "absolute":
			op = fetchOp{absolute: true, at: n}
		case n < 0:
			return op, name, errBackward
		case n == 0:
			return op, name, errBackward // the current row again: PostgreSQL steps back for it
		case word == "relative":
			op = fetchOp{skip: n - 1, count: 1}
		default:
			op.count = n
		}
	}
	return op, name, nil
}

// signedCount reads [+ | -] integer.
func signedCount(ts []sqltok.Token) (int64, bool) {
	sign := int64(1)
	if len(ts) == 2 && ts[0].Kind == sqltok.Operator && (ts[0].Text == "-" || ts[0].Text == "+") {
		if ts[0].Text == "-" {
			sign = -1
		}
		ts = ts[1:]
	}
	if len(ts) != 1 || ts[0].Kind != sqltok.Number {
		return 0, false
	}
	n, err := strconv.ParseInt(ts[0].Text, 10, 64)
	return sign * n, err == nil
}

// errBackward is PostgreSQL's answer to a backward move of a NO SCROLL cursor (the current
// row again included); queryflux reads every cursor's result forward only.
var errBackward = &query.Error{Code: sqlstate.ObjectNotInPrerequisiteState,
	Message: "cursor can only scan forward: queryflux reads a cursor's result forward only (NEXT, FORWARD, ALL, LAST, ABSOLUTE or RELATIVE past the current row)"}

// fetchRows is a FETCH's answer: rows read on from its cursor's portal, as slices of the
// portal's batches.
type fetchRows struct {
	c    *conn
	p    *portal // the cursor's
	op   fetchOp
	verb string // FETCH or MOVE
	n    int64  // rows handed out (a MOVE's: passed over)
	out  arrow.RecordBatch
}

func (f *fetchRows) Schema() *arrow.Schema { return f.p.rows.Schema() }

func (f *fetchRows) Tag() string { return f.verb + " " + strconv.FormatInt(f.n, 10) }

func (f *fetchRows) Close() error {
	f.release()
	return nil
}

func (f *fetchRows) release() {
	if f.out != nil {
		f.out.Release()
		f.out = nil
	}
}

// start resolves an ABSOLUTE position against the cursor's (PostgreSQL's: the number of
// the row last fetched, 0 before the first).
func (f *fetchRows) start() error {
	if !f.op.absolute {
		return nil
	}
	at, pos := f.op.at, f.p.cursor.pos
	switch {
	case at == -1:
		f.op = fetchOp{last: true}
	case at == 0 && pos == 0:
		f.op = fetchOp{} // before the first row, where it is: nothing to fetch
	case at <= pos || at < 0:
		return errBackward
	default:
		f.op = fetchOp{skip: at - pos - 1, count: 1}
	}
	return nil
}

func (f *fetchRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	f.release()
	if f.op.last {
		return f.lastRow(ctx)
	}
	for f.op.skip > 0 {
		b, err := f.read(ctx, f.op.skip)
		if err != nil {
			return nil, err
		}
		f.op.skip -= b.NumRows()
		b.Release()
	}
	if f.op.count == 0 {
		return nil, io.EOF
	}
	b, err := f.read(ctx, f.op.count)
	if err != nil {
		return nil, err
	}
	if f.op.count > 0 {
		f.op.count -= b.NumRows()
	}
	f.n += b.NumRows()
	f.out = b
	return b, nil
}

// lastRow reads the cursor to its end and hands out its last row (none if it had none).
func (f *fetchRows) lastRow(ctx context.Context) (arrow.RecordBatch, error) {
	f.op.last = false
	var last arrow.RecordBatch
	for {
		b, err := f.read(ctx, -1)
		if err == io.EOF {
			break
		}
		if err != nil {
			if last != nil {
				last.Release()
			}
			return nil, err
		}
		if last != nil {
			last.Release()
		}
		last = b.NewSlice(b.NumRows()-1, b.NumRows())
		b.Release()
	}
	if last == nil {
		return nil, io.EOF
	}
	f.n, f.out = 1, last
	return last, nil
}

// read takes up to max rows (-1: any) from the cursor's portal as a slice of its current
// batch; io.EOF once it is read to its end.
func (f *fetchRows) read(ctx context.Context, max int64) (arrow.RecordBatch, error) {
	p, cur := f.p, f.p.cursor
	for p.cur == nil || int64(p.row) >= p.cur.NumRows() {
		if p.done {
			cur.pastEnd = true
			return nil, io.EOF
		}
		p.cur, p.row = nil, 0
		b, err := p.rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			p.done, cur.pastEnd = true, true
			return nil, io.EOF
		}
		if err != nil {
			p.done = true
			return nil, f.c.runError(err)
		}
		p.cur = b
	}
	n := p.cur.NumRows() - int64(p.row)
	if max >= 0 && n > max {
		n = max
	}
	b := p.cur.NewSlice(int64(p.row), int64(p.row)+n)
	p.row += int(n)
	p.sent += n
	cur.pos += n
	return b, nil
}

// identValue is the name a Word (folded to lower case) or a "quoted identifier" stands for.
func identValue(t sqltok.Token) (string, bool) {
	switch t.Kind {
	case sqltok.Word:
		return strings.ToLower(t.Text), true
	case sqltok.QuotedIdent:
		if t.Unterminated || len(t.Text) < 2 {
			return "", false
		}
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`), true
	}
	return "", false
}

func syntaxErrorAt(t sqltok.Token) error {
	return &query.Error{Code: sqlstate.SyntaxError, Message: fmt.Sprintf("syntax error at or near %q", t.Text)}
}

func syntaxError(sql string) error {
	return &query.Error{Code: sqlstate.SyntaxError, Message: fmt.Sprintf("syntax error in %q", sql)}
}

// describeCursorStatement describes a cursor statement without running it: DECLARE's
// parameters are its query's, FETCH's columns its cursor's.
func (c *conn) describeCursorStatement(sql string) (desc *engine.Description, err error) {
	defer func() {
		if err != nil {
			c.failTx()
		}
	}()
	toks := significantTokens(sql)
	switch strings.ToLower(toks[0].Text) {
	case "declare":
		for i, t := range toks {
			if t.IsWord("for") && i+1 < len(toks) {
				inner := &preparedStmt{sql: strings.TrimSpace(sql[toks[i+1].Pos:])}
				if err := c.learnTypes(inner); err != nil {
					return nil, err
				}
				return &engine.Description{Params: inner.desc.Params}, nil
			}
		}
	case "fetch":
		_, name, err := parseFetch(toks)
		if err != nil {
			return nil, err
		}
		cp, err := c.cursorNamed(name)
		if err != nil {
			return nil, err
		}
		return &engine.Description{Schema: cp.rows.Schema()}, nil
	}
	return &engine.Description{}, nil
}
