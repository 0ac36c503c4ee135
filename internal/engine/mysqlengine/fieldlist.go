package mysqlengine

import (
	"context"
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// FieldList runs COM_FIELD_LIST (mysql_list_fields: the mariadb CLI's completion, old PHP and
// Perl clients) for table in q's database on a pooled connection of q's flags, and returns
// the server's answer: one payload per column whose name matches wildcard (LIKE; "" for all),
// each a column definition followed by the column's default value, as the server wrote them.
// An engine error (no such table) is wrapped as Execute wraps them.
func (e *Engine) FieldList(ctx context.Context, q *query.Request, table, wildcard string) ([][]byte, error) {
	c, err := e.acquireFor(ctx, q)
	if err != nil {
		return nil, err
	}
	healthy := false
	defer func() { e.release(c, healthy) }()
	stop := context.AfterFunc(ctx, func() { cut(c) }) // nothing runs long here: a hung server only
	defer stop()
	c.ResetSequence()
	cmd := append(append(append([]byte{0, 0, 0, 0, mysql.COM_FIELD_LIST}, table...), 0), wildcard...)
	if err := c.WritePacket(cmd); err != nil {
		return nil, e.wrap(contextOr(ctx, err))
	}
	emptyMetadata := q.ExtendedMetadata && !hasMetadata(c)
	var fields [][]byte
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return nil, e.wrap(contextOr(ctx, err))
		}
		switch {
		case len(p) == 0:
			return nil, e.wrap(mysql.ErrMalformPacket)
		case p[0] == mysql.ERR_HEADER:
			healthy = !EndsConnection(p)
			return nil, e.wrap(c.HandleErrorPacket(p))
		case p[0] == mysql.EOF_HEADER && len(p) < 0xffffff: // EOF, or the OK that stands for it
			healthy = true
			return fields, nil
		}
		if emptyMetadata {
			p = AppendMetadata(nil, p, "")
		}
		fields = append(fields, p)
	}
}

// contextOr is ctx's error once ctx is done (the read failed because the connection was cut
// for it), else err.
func contextOr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return ctxErr
	}
	return err
}
