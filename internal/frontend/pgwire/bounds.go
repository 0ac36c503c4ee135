package pgwire

import (
	"fmt"

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
