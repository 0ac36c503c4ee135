package mysqlengine

import (
	"context"
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// Several results: a CALL of a procedure that selects answers with each result set it selected,
// then an OK (SERVER_MORE_RESULTS_EXISTS on each but the last). go-mysql's streaming read
// stops after the first; the producer reads the rest here, with go-mysql's decoders, and hands
// them on as the first (rows.go): each result's end says whether more follow (MoreResults), and
// NextResult moves the reader on.

var _ query.ResultSets = (*rows)(nil)

// nextResults reads the results that follow the one go-mysql read into result (its status
// says whether any do), handing each on; result is left the last one's OK, and info its info
// (info unchanged when none followed).
func (r *rows) nextResults(ctx context.Context, result *mysql.Result, info *string) error {
	for result.Status&mysql.SERVER_MORE_RESULTS_EXISTS != 0 {
		if err := r.flush(ctx); err != nil {
			return err
		}
		if !r.started { // the first result is an OK
			if !r.send(ctx, event{start: true}, false) {
				return errStopped
			}
			r.started = true
		}
		if !r.send(ctx, event{end: true, more: true, tag: r.resultTag(result, *info)}, false) {
			return errStopped
		}
		if r.builder != nil {
			r.builder.Release()
			r.builder, r.total = nil, 0
		}
		p, err := r.conn.ReadPacket()
		if err != nil {
			return err
		}
		switch p[0] {
		case mysql.OK_HEADER:
			*result, *info = *r.conn.HandleOKPacket(p), okPacketInfo(p)
			if !r.send(ctx, event{start: true}, false) {
				return errStopped
			}
			continue
		case mysql.ERR_HEADER:
			return r.conn.HandleErrorPacket(p)
		}
		*info = ""
		if err := r.readResultSet(ctx, p, result); err != nil {
			return err
		}
	}
	return nil
}

// readResultSet reads a result set whose column count packet is p: its columns (onResult), its
// rows (onRow), and the status that ends it, into result.
func (r *rows) readResultSet(ctx context.Context, p []byte, result *mysql.Result) error {
	n, _, _ := mysql.LengthEncodedInt(p)
	fields := make([]*mysql.Field, n)
	for i := range fields {
		def, err := r.conn.ReadPacket()
		if err != nil {
			return err
		}
		if fields[i], err = mysql.FieldData(def).Parse(); err != nil {
			return err
		}
	}
	deprecateEOF := r.e.deprecatesEOF(r.conn)
	if !deprecateEOF {
		if _, err := r.conn.ReadPacket(); err != nil {
			return err
		}
	}
	if err := r.onResult(ctx)(&mysql.Result{Resultset: &mysql.Resultset{Fields: fields}}); err != nil {
		return err
	}
	onRow := r.onRow(ctx)
	binaryRows := len(r.q.Args) > 0
	var values []mysql.FieldValue
	for {
		row, err := r.conn.ReadPacket()
		if err != nil {
			return err
		}
		switch {
		case row[0] == mysql.ERR_HEADER:
			return r.conn.HandleErrorPacket(row)
		case row[0] == mysql.EOF_HEADER && deprecateEOF && len(row) < maxPayload:
			*result = *r.conn.HandleOKPacket(row)
			return nil
		case row[0] == mysql.EOF_HEADER && len(row) < 9:
			*result = mysql.Result{Warnings: binary.LittleEndian.Uint16(row[1:]), Status: binary.LittleEndian.Uint16(row[3:])}
			return nil
		}
		if values, err = mysql.RowData(row).Parse(fields, binaryRows, values); err != nil {
			return err
		}
		if err := onRow(values); err != nil {
			return err
		}
	}
}

// MoreResults reports, once Next has said io.EOF, whether another result follows.
func (r *rows) MoreResults() bool { return r.ended && r.more && r.endErr == nil }

// NextResult moves on to the next result (MoreResults): Schema, Next and Tag are then its.
func (r *rows) NextResult(ctx context.Context) error {
	if !r.MoreResults() {
		panic("mysqlengine: NextResult without a result to come")
	}
	if r.current != nil {
		r.current.Release()
		r.current = nil
	}
	r.ended, r.more, r.tag, r.schema = false, false, "", nil
	return r.waitStart(ctx)
}
