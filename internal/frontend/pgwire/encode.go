package pgwire

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/engine"
)

// columnEncoder writes one column's non-NULL values in the format the client asked for.
type columnEncoder struct {
	oid    uint32
	format int16
	fn     func(a arrow.Array, i int, dst []byte) ([]byte, error)
}

// PostgreSQL's NaN, as float4send and float8send write it (Go's math.NaN has another payload).
const (
	pgFloat4NaN = 0x7fc00000
	pgFloat8NaN = 0x7ff8000000000000
)

// PostgreSQL's epoch (2000-01-01) relative to Unix's.
const (
	pgEpochDays   = 10957
	pgEpochMicros = int64(pgEpochDays) * 86400 * 1000000
)

// formatFor applies Bind's result-format rule: none = all text, one = all, else per column.
func formatFor(formats []int16, i int) int16 {
	switch len(formats) {
	case 0:
		return pgtype.TextFormatCode
	case 1:
		return formats[0]
	}
	if i < len(formats) {
		return formats[i]
	}
	return pgtype.TextFormatCode
}

func encodersFor(m *pgtype.Map, schema *arrow.Schema, formats []int16) ([]columnEncoder, error) {
	if len(formats) > 1 && len(formats) != schema.NumFields() {
		return nil, fmt.Errorf("bind message has %d result formats but query has %d columns", len(formats), schema.NumFields())
	}
	encs := make([]columnEncoder, schema.NumFields())
	for i, f := range schema.Fields() {
		oid, _ := engine.PGTypeOf(f)
		format := formatFor(formats, i)
		text := textEncoder(f, oid)
		list, err := newDuckList(m, f, oid)
		if err != nil {
			return nil, err
		}
		if list != nil {
			text = list.text
		}
		fn := text
		if format == pgtype.BinaryFormatCode {
			if list != nil {
				fn = list.binary
			} else if fn, err = binaryEncoder(m, f, oid, text); err != nil {
				return nil, err
			}
		} else if format != pgtype.TextFormatCode {
			return nil, fmt.Errorf("unsupported format code %d", format)
		}
		encs[i] = columnEncoder{oid: oid, format: format, fn: fn}
	}
	return encs, nil
}

func fieldDescription(f arrow.Field, format int16) pgproto3.FieldDescription {
	oid, typmod := engine.PGTypeOf(f)
	return pgproto3.FieldDescription{
		Name: []byte(f.Name), DataTypeOID: oid, DataTypeSize: typeSize(oid),
		TypeModifier: typmod, Format: format,
	}
}

func typeSize(oid uint32) int16 {
	switch oid {
	case pgtype.BoolOID:
		return 1
	case pgtype.Int2OID:
		return 2
	case pgtype.Int4OID, pgtype.Float4OID, pgtype.DateOID:
		return 4
	case pgtype.Int8OID, pgtype.Float8OID, pgtype.TimeOID, pgtype.TimestampOID, pgtype.TimestamptzOID:
		return 8
	case pgtype.UUIDOID:
		return 16
	}
	return -1
}

// Text format.

func textEncoder(f arrow.Field, oid uint32) func(a arrow.Array, i int, dst []byte) ([]byte, error) {
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			if a.(*array.Boolean).Value(i) {
				return append(dst, 't'), nil
			}
			return append(dst, 'f'), nil
		}
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return strconv.AppendInt(dst, intAt(a, i), 10), nil
		}
	case *arrow.Uint64Type:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return strconv.AppendUint(dst, a.(*array.Uint64).Value(i), 10), nil
		}
	case *arrow.Float32Type:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return appendFloat(dst, float64(a.(*array.Float32).Value(i)), 32), nil
		}
	case *arrow.Float64Type:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return appendFloat(dst, a.(*array.Float64).Value(i), 64), nil
		}
	case *arrow.Decimal128Type:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return append(dst, a.(*array.Decimal128).Value(i).ToString(t.Scale)...), nil
		}
	case *arrow.StringType:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return append(dst, a.(*array.String).Value(i)...), nil
		}
	case *arrow.LargeStringType:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return append(dst, a.(*array.LargeString).Value(i)...), nil
		}
	case *arrow.BinaryType:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return appendByteaHex(dst, a.(*array.Binary).Value(i)), nil
		}
	case *arrow.LargeBinaryType:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return appendByteaHex(dst, a.(*array.LargeBinary).Value(i)), nil
		}
	case *arrow.FixedSizeBinaryType:
		if oid == pgtype.UUIDOID {
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				return appendUUID(dst, a.(*array.FixedSizeBinary).Value(i)), nil
			}
		}
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return appendByteaHex(dst, a.(*array.FixedSizeBinary).Value(i)), nil
		}
	case *arrow.Date32Type:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			switch v := a.(*array.Date32).Value(i); v {
			case engine.DateInfinity:
				return append(dst, "infinity"...), nil
			case engine.DateNegInfinity:
				return append(dst, "-infinity"...), nil
			default:
				return appendDate(dst, v.ToTime()), nil
			}
		}
	case *arrow.Date64Type:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return appendDate(dst, a.(*array.Date64).Value(i).ToTime()), nil
		}
	case *arrow.Time32Type, *arrow.Time64Type:
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			return appendTimeOfDay(dst, timeOfDayMicros(a, i)), nil
		}
	case *arrow.TimestampType:
		tz := t.TimeZone != ""
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			switch a.(*array.Timestamp).Value(i) {
			case engine.TimestampInfinity:
				return append(dst, "infinity"...), nil
			case engine.TimestampNegInfinity:
				return append(dst, "-infinity"...), nil
			}
			ts := timestampAt(a, i)
			if tz {
				return appendPGTime(dst, ts, "2006-01-02 15:04:05.999999-07"), nil
			}
			return appendPGTime(dst, ts, "2006-01-02 15:04:05.999999"), nil
		}
	}
	// Lists, structs, maps, intervals...: Arrow's own text form.
	return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
		return append(dst, a.ValueStr(i)...), nil
	}
}

func appendByteaHex(dst, b []byte) []byte {
	dst = append(dst, '\\', 'x')
	return hex.AppendEncode(dst, b)
}

func appendUUID(dst, u []byte) []byte {
	dst = hex.AppendEncode(dst, u[0:4])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[4:6])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[6:8])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[8:10])
	dst = append(dst, '-')
	return hex.AppendEncode(dst, u[10:16])
}

func appendDate(dst []byte, t time.Time) []byte {
	return appendPGTime(dst, t, "2006-01-02")
}

// appendPGTime writes t in UTC by layout (which starts with the year, "2006") as PostgreSQL
// does: a year before 1 AD as its number counted back ("0044" for 44 BC, Go's year -43),
// with " BC" at the end.
func appendPGTime(dst []byte, t time.Time, layout string) []byte {
	t = t.UTC()
	y := t.Year()
	if y > 0 {
		return t.AppendFormat(dst, layout)
	}
	dst = fmt.Appendf(dst, "%04d", 1-y)
	dst = t.AppendFormat(dst, layout[len("2006"):])
	return append(dst, " BC"...)
}

func appendTimeOfDay(dst []byte, us int64) []byte {
	return time.UnixMicro(us).UTC().AppendFormat(dst, "15:04:05.999999")
}

func intAt(a arrow.Array, i int) int64 {
	switch x := a.(type) {
	case *array.Int8:
		return int64(x.Value(i))
	case *array.Int16:
		return int64(x.Value(i))
	case *array.Int32:
		return int64(x.Value(i))
	case *array.Int64:
		return x.Value(i)
	case *array.Uint8:
		return int64(x.Value(i))
	case *array.Uint16:
		return int64(x.Value(i))
	case *array.Uint32:
		return int64(x.Value(i))
	case *array.Uint64:
		return int64(x.Value(i))
	}
	panic(fmt.Sprintf("pgwire: intAt on %s", a.DataType()))
}

func timeOfDayMicros(a arrow.Array, i int) int64 {
	switch x := a.(type) {
	case *array.Time32:
		v := int64(x.Value(i))
		if x.DataType().(*arrow.Time32Type).Unit == arrow.Second {
			return v * 1e6
		}
		return v * 1e3
	case *array.Time64:
		v := int64(x.Value(i))
		if x.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
			return v / 1e3
		}
		return v
	}
	panic(fmt.Sprintf("pgwire: timeOfDayMicros on %s", a.DataType()))
}

func timestampAt(a arrow.Array, i int) time.Time {
	x := a.(*array.Timestamp)
	unit := x.DataType().(*arrow.TimestampType).Unit
	return x.Value(i).ToTime(unit)
}

// Binary format.

func binaryEncoder(m *pgtype.Map, f arrow.Field, oid uint32, text func(arrow.Array, int, []byte) ([]byte, error)) (func(a arrow.Array, i int, dst []byte) ([]byte, error), error) {
	switch oid {
	case pgtype.BoolOID:
		if _, ok := f.Type.(*arrow.BooleanType); ok {
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				if a.(*array.Boolean).Value(i) {
					return append(dst, 1), nil
				}
				return append(dst, 0), nil
			}, nil
		}
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		if isInteger(f.Type) {
			size := typeSize(oid)
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				v := intAt(a, i)
				switch size {
				case 2:
					if v < math.MinInt16 || v > math.MaxInt16 {
						return nil, fmt.Errorf("%d out of range for int2", v)
					}
					return binary.BigEndian.AppendUint16(dst, uint16(v)), nil
				case 4:
					if v < math.MinInt32 || v > math.MaxInt32 {
						return nil, fmt.Errorf("%d out of range for int4", v)
					}
					return binary.BigEndian.AppendUint32(dst, uint32(v)), nil
				}
				return binary.BigEndian.AppendUint64(dst, uint64(v)), nil
			}, nil
		}
	case pgtype.Float4OID:
		switch f.Type.(type) {
		case *arrow.Float32Type:
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				v := a.(*array.Float32).Value(i)
				if v != v {
					return binary.BigEndian.AppendUint32(dst, pgFloat4NaN), nil
				}
				return binary.BigEndian.AppendUint32(dst, math.Float32bits(v)), nil
			}, nil
		}
	case pgtype.Float8OID:
		switch f.Type.(type) {
		case *arrow.Float64Type:
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				v := a.(*array.Float64).Value(i)
				if v != v {
					return binary.BigEndian.AppendUint64(dst, pgFloat8NaN), nil
				}
				return binary.BigEndian.AppendUint64(dst, math.Float64bits(v)), nil
			}, nil
		}
	case pgtype.DateOID:
		switch f.Type.(type) {
		case *arrow.Date32Type:
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				v := a.(*array.Date32).Value(i)
				if v == engine.DateInfinity || v == engine.DateNegInfinity {
					return binary.BigEndian.AppendUint32(dst, uint32(v)), nil // PostgreSQL's infinities are these too
				}
				return binary.BigEndian.AppendUint32(dst, uint32(int32(v)-pgEpochDays)), nil
			}, nil
		}
	case pgtype.TimeOID:
		switch f.Type.(type) {
		case *arrow.Time32Type, *arrow.Time64Type:
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				return binary.BigEndian.AppendUint64(dst, uint64(timeOfDayMicros(a, i))), nil
			}, nil
		}
	case pgtype.TimestampOID, pgtype.TimestamptzOID:
		switch f.Type.(type) {
		case *arrow.TimestampType:
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				if v := a.(*array.Timestamp).Value(i); v == engine.TimestampInfinity || v == engine.TimestampNegInfinity {
					return binary.BigEndian.AppendUint64(dst, uint64(v)), nil // PostgreSQL's infinities are these too
				}
				return binary.BigEndian.AppendUint64(dst, uint64(timestampAt(a, i).UnixMicro()-pgEpochMicros)), nil
			}, nil
		}
	case pgtype.UUIDOID:
		switch f.Type.(type) {
		case *arrow.FixedSizeBinaryType:
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				return append(dst, a.(*array.FixedSizeBinary).Value(i)...), nil
			}, nil
		}
	case pgtype.ByteaOID:
		switch f.Type.(type) {
		case *arrow.BinaryType:
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				return append(dst, a.(*array.Binary).Value(i)...), nil
			}, nil
		case *arrow.LargeBinaryType:
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				return append(dst, a.(*array.LargeBinary).Value(i)...), nil
			}, nil
		case *arrow.FixedSizeBinaryType:
			return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
				return append(dst, a.(*array.FixedSizeBinary).Value(i)...), nil
			}, nil
		}
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.JSONOID, pgtype.XMLOID:
		return text, nil // the binary form of these is their text
	case pgtype.NumericOID:
		enc, err := transcoder(m, oid, text)
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
			start := len(dst)
			out, err := enc(a, i, dst)
			if err != nil {
				return nil, err
			}
			return stripNumeric(out, start), nil
		}, nil
	}
	return transcoder(m, oid, text)
}

// stripNumeric rewrites the binary numeric at b[start:] as PostgreSQL's numeric_send writes it
// (make_result): no zero digit groups at either end, and zero positive with weight 0. pgx keeps
// them ("0.000" as digits 0, 0 of weight -1); clients read the same number either way.
func stripNumeric(b []byte, start int) []byte {
	h := b[start:]
	if len(h) < 8 {
		return b
	}
	n := int(binary.BigEndian.Uint16(h))
	weight := int16(binary.BigEndian.Uint16(h[2:]))
	digits := h[8:]
	if len(digits) < 2*n {
		return b
	}
	group := func(k int) uint16 { return binary.BigEndian.Uint16(digits[2*k:]) }
	lead, trail := 0, n
	for lead < n && group(lead) == 0 {
		lead++
	}
	for trail > lead && group(trail-1) == 0 {
		trail--
	}
	weight -= int16(lead)
	copy(digits, digits[2*lead:2*trail])
	if trail == lead {
		weight = 0
		if binary.BigEndian.Uint16(h[4:]) == 0x4000 { // negative
			binary.BigEndian.PutUint16(h[4:], 0)
		}
	}
	binary.BigEndian.PutUint16(h, uint16(trail-lead))
	binary.BigEndian.PutUint16(h[2:], uint16(weight))
	return b[:start+8+2*(trail-lead)]
}

func isInteger(t arrow.DataType) bool {
	switch t.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
		return true
	}
	return false
}

// transcoder encodes a value in binary by parsing its text form with pgx's codec for oid
// (numeric, jsonb, interval, arrays, ranges...), for the types pgx knows. typeMap belongs to
// one connection (pgtype.Map is not safe for concurrent use).
func transcoder(typeMap *pgtype.Map, oid uint32, text func(arrow.Array, int, []byte) ([]byte, error)) (func(a arrow.Array, i int, dst []byte) ([]byte, error), error) {
	dt, ok := typeMap.TypeForOID(oid)
	if !ok {
		return nil, fmt.Errorf("binary format is not supported for type %s", engine.PGTypeName(oid))
	}
	var tmp []byte
	return func(a arrow.Array, i int, dst []byte) ([]byte, error) {
		var err error
		tmp, err = text(a, i, tmp[:0])
		if err != nil {
			return nil, err
		}
		v, err := dt.Codec.DecodeValue(typeMap, oid, pgtype.TextFormatCode, tmp)
		if err != nil {
			return nil, fmt.Errorf("%s value %q: %w", dt.Name, tmp, err)
		}
		out, err := typeMap.Encode(oid, pgtype.BinaryFormatCode, v, dst)
		if err != nil {
			return nil, fmt.Errorf("%s value %q: %w", dt.Name, tmp, err)
		}
		return out, nil
	}, nil
}

func typeName(oid uint32) string { return engine.PGTypeName(oid) }
