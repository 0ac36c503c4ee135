package pgengine

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
)

var (
	_ engine.PGRelayer = (*Engine)(nil)
	_ engine.PGRelayer = (*session)(nil)
)

// RelayPG runs st on the session's pinned connection (passthrough inside a transaction). The
// connection stays pgx's, so its transaction status stays right for the pool that gets it back;
// the result is handed on as wire messages like Engine.RelayPG's.
func (s *session) RelayPG(ctx context.Context, st engine.PGStatement) (engine.PGResult, error) {
	rr := s.conn.Conn().PgConn().ExecParams(ctx, st.SQL, st.Params, st.ParamOIDs, st.ParamFormats, st.ResultFormats)
	return &readerResult{rr: rr}, nil
}

// readerResult is a pgconn result as engine.PGResult: its messages encoded again.
type readerResult struct {
	rr   *pgconn.ResultReader
	desc []byte
	row  []byte
	dr   pgproto3.DataRow
}

func (r *readerResult) Description() []byte {
	fds := r.rr.FieldDescriptions()
	if fds == nil {
		return nil
	}
	if r.desc == nil {
		rd := pgproto3.RowDescription{Fields: make([]pgproto3.FieldDescription, len(fds))}
		for i, f := range fds {
			rd.Fields[i] = pgproto3.FieldDescription{
				Name: []byte(f.Name), TableOID: f.TableOID, TableAttributeNumber: f.TableAttributeNumber,
				DataTypeOID: f.DataTypeOID, DataTypeSize: f.DataTypeSize, TypeModifier: f.TypeModifier, Format: f.Format,
			}
		}
		r.desc, _ = rd.Encode(nil)
	}
	return r.desc
}

func (r *readerResult) NextRow() ([]byte, bool) {
	if !r.rr.NextRow() {
		return nil, false
	}
	r.dr.Values = r.rr.Values()
	r.row, _ = r.dr.Encode(r.row[:0])
	return r.row, true
}

func (r *readerResult) Close() (string, error) {
	tag, err := r.rr.Close()
	return tag.String(), wrapErr(err)
}
