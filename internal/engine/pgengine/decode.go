package pgengine

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/engine"
)

// decoder appends one raw PostgreSQL value (nil for NULL) to an Arrow builder.
type decoder func(raw []byte, b array.Builder) error

// Offsets between PostgreSQL's epoch (2000-01-01) and Unix's.
const (
	pgEpochDays   = 10957
	pgEpochMicros = pgEpochDays * 86400 * 1000000
)

var typeMap = pgtype.NewMap()

func decoderFor(f pgconn.FieldDescription, t arrow.DataType) (decoder, error) {
	if f.Format == pgtype.BinaryFormatCode {
		if d := binaryDecoder(f.DataTypeOID); d != nil {
			return nullable(d), nil
		}
		return nil, fmt.Errorf("pgengine: column %q: binary format for type %s not supported", f.Name, engine.PGTypeName(f.DataTypeOID))
	}
	switch t.(type) {
	case *arrow.StringType:
		return nullable(func(raw []byte, b array.Builder) error {
			b.(*array.StringBuilder).BinaryBuilder.Append(raw)
			return nil
		}), nil
	case *arrow.Decimal128Type:
		dt := t.(*arrow.Decimal128Type)
		return nullable(func(raw []byte, b array.Builder) error {
			n, err := decimal128.FromString(string(raw), dt.Precision, dt.Scale)
			if err != nil {
				return fmt.Errorf("numeric %q: %w", raw, err)
			}
			b.(*array.Decimal128Builder).Append(n)
			return nil
		}), nil
	}
	if d := textDecoder(f.DataTypeOID); d != nil {
		return nullable(d), nil
	}
	// A text-format column of a type decoded natively in binary (simple protocol mode):
	// let pgx parse the text, then convert the Go value.
	oid := f.DataTypeOID
	dt, ok := typeMap.TypeForOID(oid)
	if !ok {
		return nil, fmt.Errorf("pgengine: column %q: no text decoder for type %s", f.Name, engine.PGTypeName(oid))
	}
	return nullable(func(raw []byte, b array.Builder) error {
		v, err := dt.Codec.DecodeValue(typeMap, oid, pgtype.TextFormatCode, raw)
		if err != nil {
			return err
		}
		if u, ok := v.([16]byte); ok {
			v = u[:]
		}
		if tm, ok := v.(pgtype.Time); ok {
			return engine.AppendValue(b, microsDuration(tm.Microseconds))
		}
		if inf, ok := v.(pgtype.InfinityModifier); ok {
			return appendInfinity(b, inf)
		}
		return engine.AppendValue(b, v)
	}), nil
}

// appendInfinity appends a date or timestamp infinity as its sentinel (engine.DateInfinity...).
func appendInfinity(b array.Builder, inf pgtype.InfinityModifier) error {
	switch bb := b.(type) {
	case *array.TimestampBuilder:
		v := engine.TimestampNegInfinity
		if inf > 0 {
			v = engine.TimestampInfinity
		}
		bb.Append(v)
	case *array.Date32Builder:
		v := engine.DateNegInfinity
		if inf > 0 {
			v = engine.DateInfinity
		}
		bb.Append(v)
	default:
		return fmt.Errorf("infinity in an Arrow %s column", b.Type())
	}
	return nil
}

func nullable(d decoder) decoder {
	return func(raw []byte, b array.Builder) error {
		if raw == nil {
			b.AppendNull()
			return nil
		}
		return d(raw, b)
	}
}

func binaryDecoder(oid uint32) decoder {
	switch oid {
	case pgtype.BoolOID:
		return fixed(1, func(raw []byte, b array.Builder) { b.(*array.BooleanBuilder).Append(raw[0] != 0) })
	case pgtype.Int2OID:
		return fixed(2, func(raw []byte, b array.Builder) {
			b.(*array.Int16Builder).Append(int16(binary.BigEndian.Uint16(raw)))
		})
	case pgtype.Int4OID:
		return fixed(4, func(raw []byte, b array.Builder) {
			b.(*array.Int32Builder).Append(int32(binary.BigEndian.Uint32(raw)))
		})
	case pgtype.Int8OID:
		return fixed(8, func(raw []byte, b array.Builder) {
			b.(*array.Int64Builder).Append(int64(binary.BigEndian.Uint64(raw)))
		})
	case pgtype.Float4OID:
		return fixed(4, func(raw []byte, b array.Builder) {
			b.(*array.Float32Builder).Append(math.Float32frombits(binary.BigEndian.Uint32(raw)))
		})
	case pgtype.Float8OID:
		return fixed(8, func(raw []byte, b array.Builder) {
			b.(*array.Float64Builder).Append(math.Float64frombits(binary.BigEndian.Uint64(raw)))
		})
	case pgtype.ByteaOID:
		return func(raw []byte, b array.Builder) error { b.(*array.BinaryBuilder).Append(raw); return nil }
	case pgtype.UUIDOID:
		return fixed(16, func(raw []byte, b array.Builder) { b.(*array.FixedSizeBinaryBuilder).Append(raw) })
	case pgtype.DateOID:
		return func(raw []byte, b array.Builder) error {
			if len(raw) != 4 {
				return fmt.Errorf("date: %d bytes, want 4", len(raw))
			}
			days := int32(binary.BigEndian.Uint32(raw))
			switch days {
			case math.MaxInt32:
				b.(*array.Date32Builder).Append(engine.DateInfinity)
			case math.MinInt32:
				b.(*array.Date32Builder).Append(engine.DateNegInfinity)
			default:
				b.(*array.Date32Builder).Append(arrow.Date32(days + pgEpochDays))
			}
			return nil
		}
	case pgtype.TimeOID:
		return fixed(8, func(raw []byte, b array.Builder) {
			b.(*array.Time64Builder).Append(arrow.Time64(int64(binary.BigEndian.Uint64(raw))))
		})
	case pgtype.TimestampOID, pgtype.TimestamptzOID:
		return func(raw []byte, b array.Builder) error {
			if len(raw) != 8 {
				return fmt.Errorf("timestamp: %d bytes, want 8", len(raw))
			}
			us := int64(binary.BigEndian.Uint64(raw))
			switch us {
			case math.MaxInt64:
				b.(*array.TimestampBuilder).Append(engine.TimestampInfinity)
			case math.MinInt64:
				b.(*array.TimestampBuilder).Append(engine.TimestampNegInfinity)
			default:
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(us + pgEpochMicros))
			}
			return nil
		}
	}
	return nil
}

func fixed(n int, f func(raw []byte, b array.Builder)) decoder {
	return func(raw []byte, b array.Builder) error {
		if len(raw) != n {
			return fmt.Errorf("binary value has %d bytes, want %d", len(raw), n)
		}
		f(raw, b)
		return nil
	}
}

func microsDuration(us int64) any { return time.Duration(us) * time.Microsecond }

// textDecoder parses the hot scalar types from text without going through pgx's codecs.
func textDecoder(oid uint32) decoder {
	switch oid {
	case pgtype.BoolOID:
		return func(raw []byte, b array.Builder) error {
			if len(raw) != 1 || (raw[0] != 't' && raw[0] != 'f') {
				return fmt.Errorf("bool %q", raw)
			}
			b.(*array.BooleanBuilder).Append(raw[0] == 't')
			return nil
		}
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		bits := map[uint32]int{pgtype.Int2OID: 16, pgtype.Int4OID: 32, pgtype.Int8OID: 64}[oid]
		return func(raw []byte, b array.Builder) error {
			v, err := strconv.ParseInt(string(raw), 10, bits)
			if err != nil {
				return err
			}
			switch bb := b.(type) {
			case *array.Int16Builder:
				bb.Append(int16(v))
			case *array.Int32Builder:
				bb.Append(int32(v))
			case *array.Int64Builder:
				bb.Append(v)
			}
			return nil
		}
	case pgtype.Float4OID, pgtype.Float8OID:
		return func(raw []byte, b array.Builder) error {
			v, err := strconv.ParseFloat(string(raw), 64)
			if err != nil {
				return err
			}
			switch bb := b.(type) {
			case *array.Float32Builder:
				bb.Append(float32(v))
			case *array.Float64Builder:
				bb.Append(v)
			}
			return nil
		}
	}
	return nil
}
