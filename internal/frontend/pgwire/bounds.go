package pgwire

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// A client that prepares statements or binds portals without closing them would grow its
// connection's memory without end: past these bounds a Parse or Bind fails instead. Drivers
// cache far fewer statements (pgx 512, the JDBC driver 256), and portals close with their
// transaction.
const (
	StatementsMaxDefault = 10_000
	PortalsMaxDefault    = 1_000
)

// checkNewStatement refuses a Parse of a named statement whose name is taken or that would
// hold more than StatementsMax statements. The unnamed statement replaces itself.
func (c *conn) checkNewStatement(name string) error {
	if name == "" {
		return nil
	}
	if _, exists := c.stmts[name]; exists {
		return &query.Error{Code: sqlstate.DuplicatePreparedStatement, Message: fmt.Sprintf("prepared statement %q already exists", name)}
	}
	return c.checkBound(len(c.stmts), c.srv.opts.StatementsMax, "prepared_statements",
		"prepared statements; close some (Close, DEALLOCATE) before preparing more")
}

// checkNewPortal refuses a Bind to a new named portal while held portals are open: the
// unnamed portal replaces itself.
func (c *conn) checkNewPortal(name string, held int) error {
	if name == "" {
		return nil
	}
	return c.checkBound(held, c.srv.opts.PortalsMax, "portals",
		"open portals; close some (Close, or end the transaction) before binding more")
}

func (c *conn) checkBound(held, max int, bound, what string) error {
	if held < max {
		return nil
	}
	c.srv.refusals.WithLabelValues("pgwire", bound).Inc()
	return &query.Error{Code: sqlstate.ProgramLimitExceeded, Message: fmt.Sprintf("this connection holds %d %s, the most queryflux allows", held, what)}
}

// What a client leaves held is counted in bytes too (heldmem): a statement's text, name and
// parameter types, a bound portal's parameter values, a WITH HOLD cursor's rows. Counts alone
// let one connection pin 10,000 statements of 64 MiB. heldOverheadBytes stands for the maps'
// and structs' own memory.
const heldOverheadBytes = 128

// keepStmt stores st as the client's statement name, counting its bytes against the
// connection's budget and the daemon's; a statement it replaces (the unnamed one) gives its
// bytes back first, and is gone even when st is refused, as a failed Parse in PostgreSQL drops
// the unnamed statement.
func (c *conn) keepStmt(name string, st *preparedStmt) error {
	c.dropStmt(name)
	n := stmtHeld(name, st.sql, len(st.paramOIDs))
	if err := c.takeHeld(n); err != nil {
		return err
	}
	st.held = n
	c.stmts[name] = st
	return nil
}

func stmtHeld(name, sql string, params int) int {
	return heldOverheadBytes + len(name) + len(sql) + 4*params
}

// heldFieldBytes stands for a column's or parameter's own memory in a description, its name
// and metadata aside.
const heldFieldBytes = 64

// holdSchema counts the columns (or parameters) fields that the kept statement st now holds
// (its Describe's, its first run's: resultChanged) against the budget; a statement that is not
// kept (a simple Query's) holds them only while it runs. Refused, st keeps nothing new: the
// caller leaves the schema unset.
func (c *conn) holdSchema(st *preparedStmt, fields []arrow.Field) error {
	if st.held == 0 || len(fields) == 0 {
		return nil
	}
	n := 0
	for _, f := range fields {
		n += heldFieldBytes + len(f.Name)
		for i, k := range f.Metadata.Keys() {
			n += len(k) + len(f.Metadata.Values()[i])
		}
	}
	if err := c.takeHeld(n); err != nil {
		return err
	}
	st.held += n
	return nil
}

// descFields is every field of d: its parameters and its columns.
func descFields(d *engine.Description) []arrow.Field {
	if d == nil {
		return nil
	}
	fields := d.Params
	if d.Schema != nil {
		fields = append(fields[:len(fields):len(fields)], d.Schema.Fields()...)
	}
	return fields
}

// checkParse refuses, before any work on it, a Parse whose statement could not be kept (the
// statement it would replace counted as given back).
func (c *conn) checkParse(m *pgproto3.Parse) error {
	n := stmtHeld(m.Name, m.Query, len(m.ParameterOIDs))
	if old, ok := c.stmts[m.Name]; ok {
		n -= old.held
	}
	return c.checkRoom(n)
}

// refuseUnread is the clientReader's refuseParse: a Parse whose statement could not be kept is
// refused from its header, as checkParse would refuse it once read, so that a client
// refused one 64 MiB statement after another costs the daemon neither their copies nor a
// scan of their text. stmtHeld counts a Parse's body less its two terminators and the
// count of parameter types.
func (c *conn) refuseUnread(bodyLen int, unnamed bool) error {
	n := heldOverheadBytes + bodyLen - 4
	if old, ok := c.stmts[""]; ok && unnamed {
		n -= old.held
	}
	return c.checkRoom(n)
}

// dropStmt forgets the client's statement name and gives its bytes back.
func (c *conn) dropStmt(name string) {
	if st, ok := c.stmts[name]; ok {
		c.held.Give(st.held)
		delete(c.stmts, name)
	}
}

// dropAllStmts forgets every statement of the client (DEALLOCATE ALL, DISCARD ALL).
func (c *conn) dropAllStmts() {
	for name := range c.stmts {
		c.dropStmt(name)
	}
}

// takeHeld counts n bytes more held by the client, or refuses them with PostgreSQL's error for
// a limit (54000) or, when the daemon's bound is what refuses, for memory (53200).
func (c *conn) takeHeld(n int) error {
	if err := c.held.Take(n); err != nil {
		return c.heldRefused(err)
	}
	return nil
}

// checkRoom refuses, before any work on it, a statement of n bytes that could not be kept.
func (c *conn) checkRoom(n int) error {
	if int64(n) > c.held.Room() {
		return c.heldRefused(c.held.Refusal(n))
	}
	return nil
}

// heldRefused counts a refusal of the held-bytes budget and says it as PostgreSQL would.
func (c *conn) heldRefused(err *heldmem.Error) error {
	code, bound := sqlstate.ProgramLimitExceeded, "held_bytes"
	if err.Daemon {
		code, bound = sqlstate.OutOfMemory, "daemon_held_bytes"
	}
	c.srv.refusals.WithLabelValues("pgwire", bound).Inc()
	return &query.Error{Code: code, Message: err.Error()}
}
