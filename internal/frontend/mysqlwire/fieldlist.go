package mysqlwire

import (
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// COM_FIELD_LIST (mysql_list_fields; the mariadb CLI's table-name completion, old PHP and Perl
// clients): a table's columns whose names match a LIKE pattern, each a column definition
// followed by the column's default value, then an EOF. It is routed and checked as
// "SELECT * FROM <table> LIMIT 0" would be. On the relay (a MySQL-protocol engine) the engine
// answers the command itself and its definitions and defaults go to the client as they came
// (mysqlengine.Engine.FieldList); elsewhere (the Arrow path, a pinned session, another engine)
// the columns of that SELECT are described as its result's are, each with a NULL default.

// fieldLister is an engine that answers COM_FIELD_LIST itself (mysqlengine.Engine).
type fieldLister interface {
	FieldList(ctx context.Context, q *query.Request, table, wildcard string) ([][]byte, error)
}

func canListFields(e query.Engine) bool {
	_, ok := e.(fieldLister)
	return ok
}

// fieldList answers COM_FIELD_LIST (data: the table's name, NUL, the pattern).
func (h *session) fieldList(data []byte) any {
	table, wildcard, _ := bytes.Cut(data, []byte{0})
	if len(table) == 0 {
		return mysql.NewError(mysql.ER_NO_SUCH_TABLE, "Table '"+h.db+".' doesn't exist")
	}
	if !query.AwaitReady(h.ctx, h.s.backend) {
		return errNotConfigured
	}
	req := h.request("SELECT * FROM "+quoteIdent(string(table))+" LIMIT 0", nil)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	fields, err, ok := h.relayFieldList(ctx, cancel, req, string(table), string(wildcard))
	if !ok {
		fields, err = h.describeFieldList(ctx, req, string(wildcard))
	}
	if err != nil {
		return err
	}
	buf := make([]byte, 4, 256)
	for _, f := range fields {
		if err := h.conn.WritePacket(append(buf[:4], f...)); err != nil {
			h.conn.Close()
			return noReply{}
		}
	}
	if err := h.writeEOF(); err != nil {
		h.conn.Close()
	}
	return noReply{}
}

// relayFieldList has the engine answer the command, when the core admits it for a relay.
func (h *session) relayFieldList(ctx context.Context, cancel context.CancelFunc, req *query.Request, table, wildcard string) (fields [][]byte, err error, ok bool) {
	pb, isCore := h.s.backend.(passthroughBackend)
	if !isCore || h.pinned != nil {
		return nil, nil, false
	}
	adm, ok, err := pb.AdmitPassthrough(ctx, req, canListFields)
	if err != nil || !ok {
		return nil, err, err != nil
	}
	run := adm.Relay(ctx, cancel)
	fields, err = run.Engine.(fieldLister).FieldList(run.Ctx, req, table, wildcard)
	var size int64
	for _, f := range fields {
		size += int64(len(f))
	}
	return fields, run.Finish(0, size, contextOr(run.Ctx, err)), true
}

// describeFieldList describes the columns of req's SELECT (on the pinned connection, if any),
// as a result's columns are described, each with a NULL default.
func (h *session) describeFieldList(ctx context.Context, req *query.Request, wildcard string) ([][]byte, error) {
	execute := h.s.backend.Execute
	if h.pinned != nil {
		execute = h.pinned.Execute
		defer h.settleStatement(h.guardStatement(ctx, req.SQL), req.SQL, 0) // a missing table leaves the transaction as it was
	}
	rows, err := execute(ctx, req)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var fields [][]byte
	for _, f := range rows.Schema().Fields() {
		if wildcard != "" && !likeMatch(wildcard, f.Name) {
			continue
		}
		col := columnFor(f)
		inClientCollation(&col, f, h.collation)
		fields = append(fields, append(h.appendField(nil, col.field, col.extended), 0xfb))
	}
	for { // the SELECT reads no rows; its end is read for its report
		if _, err := rows.Next(ctx); err == io.EOF {
			return fields, nil
		} else if err != nil {
			return nil, err
		}
	}
}

// quoteIdent quotes a MySQL identifier with backticks.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
