package pgwire

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// receiveFailed ends the connection after the client's next message could not be read: a
// message over the size limit, or one begun and not finished within the message timeout, is
// answered with a FATAL saying so (and counted); other errors (the client went away) end it
// silently.
func (c *conn) receiveFailed(err error) error {
	var tooLarge *pgproto3.ExceededMaxBodyLenErr
	var noRoom *heldmem.Error
	var msg string
	switch {
	case errors.As(err, &noRoom):
		c.srv.refusals.WithLabelValues("pgwire", "in_flight_bytes").Inc()
		c.srv.log.Info("pgwire: client message refused", "remote", c.nc.RemoteAddr().String(), "user", c.user, "reason", redact.Error(noRoom))
		return c.fatal(sqlstate.OutOfMemory, "terminating connection: out of memory: "+noRoom.Error())
	case errors.Is(err, netlimit.ErrMessageTimeout):
		c.srv.refusals.WithLabelValues("pgwire", "message_timeout").Inc()
		msg = fmt.Sprintf("terminating connection: a message was not received whole within %s of its start", c.srv.opts.Limits.MessageTimeout)
	case errors.As(err, &tooLarge):
		c.srv.refusals.WithLabelValues("pgwire", "message_bytes").Inc()
		msg = fmt.Sprintf("terminating connection: a message of %d bytes is larger than the limit of %d bytes", tooLarge.ActualBodyLen, tooLarge.MaxExpectedBodyLen)
	default:
		return err
	}
	c.srv.log.Info("pgwire: client message refused", "remote", c.nc.RemoteAddr().String(), "user", c.user, "reason", msg)
	return c.fatal(sqlstate.ProtocolViolation, msg)
}
