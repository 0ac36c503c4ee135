package pgengine

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// plainDecoder reads one non-NULL raw PostgreSQL value as the plain value (query.PlainRows)
// its column's decoder would have appended to the Arrow batch.
type plainDecoder func(raw []byte) (any, error)

// plainDecoders are fields' plain decoders, nil unless every column has one: booleans and
// integers, binary or text, and the columns carried as Arrow strings that arrive as text (the
// decoder's own first case: the raw text as it is).
func plainDecoders(fields []pgconn.FieldDescription, schema *arrow.Schema) []plainDecoder {
	decs := make([]plainDecoder, len(fields))
	for i, f := range fields {
		if decs[i] = plainDecoderFor(f, schema.Field(i).Type); decs[i] == nil {
			return nil
		}
	}
	return decs
}

func plainDecoderFor(f pgconn.FieldDescription, t arrow.DataType) plainDecoder {
	binary := f.Format == pgtype.BinaryFormatCode
	if _, ok := t.(*arrow.StringType); ok && !binary {
		return func(raw []byte) (any, error) { return string(raw), nil }
	}
	switch f.DataTypeOID {
	case pgtype.BoolOID:
		if binary {
			return binaryBool
		}
		return textBool
	case pgtype.Int2OID:
		return plainInt(binary, 16)
	case pgtype.Int4OID:
		return plainInt(binary, 32)
	case pgtype.Int8OID:
		return plainInt(binary, 64)
	}
	return nil
}

func binaryBool(raw []byte) (any, error) {
	if len(raw) != 1 {
		return nil, fmt.Errorf("binary value has %d bytes, want 1", len(raw))
	}
	return raw[0] != 0, nil
}

func textBool(raw []byte) (any, error) {
	if len(raw) != 1 || (raw[0] != 't' && raw[0] != 'f') {
		return nil, fmt.Errorf("bool %q", raw)
	}
	return raw[0] == 't', nil
}

// plainInt reads an integer of bits bits as int16, int32 or int64, as Arrow's array of the
// column's type holds it.
func plainInt(binaryFormat bool, bits int) plainDecoder {
	return func(raw []byte) (any, error) {
		var v int64
		if binaryFormat {
			if len(raw) != bits/8 {
				return nil, fmt.Errorf("binary value has %d bytes, want %d", len(raw), bits/8)
			}
			switch bits {
			case 16:
				return int16(binary.BigEndian.Uint16(raw)), nil
			case 32:
				return int32(binary.BigEndian.Uint32(raw)), nil
			}
			return int64(binary.BigEndian.Uint64(raw)), nil
		}
		v, err := strconv.ParseInt(string(raw), 10, bits)
		if err != nil {
			return nil, err
		}
		switch bits {
		case 16:
			return int16(v), nil
		case 32:
			return int32(v), nil
		}
		return v, nil
	}
}

// Plain reports whether the result's columns all have plain values.
func (r *result) Plain() bool { return r.plain != nil }

// FillPlain reads up to max rows as plain values. A row's values share one array with the
// rows read before it in this call, grown by doubling (one allocation for a one-row result).
func (r *result) FillPlain(_ context.Context, rowsMax int) ([][]any, bool, error) {
	width := len(r.plain)
	var rows [][]any
	var cells []any
	for len(rows) < rowsMax {
		if !r.rows.Next() {
			return rows, false, cancelledOr(r.ctx, r.rows.Err())
		}
		if len(cells)+width > cap(cells) {
			cells = make([]any, 0, width*min(max(len(rows), 1), 256))
		}
		row := cells[len(cells) : len(cells)+width : len(cells)+width]
		cells = cells[:len(cells)+width]
		for i, raw := range r.rows.RawValues() {
			if raw == nil {
				continue // NULL: row[i] stays nil
			}
			v, err := r.plain[i](raw)
			if err != nil {
				return nil, false, fmt.Errorf("pgengine: column %q: %w", r.fields[i].Name, err)
			}
			row[i] = v
		}
		rows = append(rows, row)
	}
	return rows, true, nil
}
