package pgwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// decodeParams turns Bind's parameter values into query.Request.Args: NULL is nil, a text
// value is a string (the engine parses it against the parameter's type), a binary value is the
// natural Go value for its type (int16/32/64, float32/64, bool, []byte, time.Time, string).
func decodeParams(m *pgtype.Map, oids []uint32, formats []int16, values [][]byte) ([]any, error) {
	if len(formats) > 1 && len(formats) != len(values) {
		return nil, &query.Error{Code: sqlstate.ProtocolViolation, Message: fmt.Sprintf("bind message has %d parameter formats but %d parameters", len(formats), len(values))}
	}
	if len(values) == 0 {
		return nil, nil
	}
	args := make([]any, len(values))
	for i, raw := range values {
		if raw == nil {
			continue
		}
		var oid uint32
		if i < len(oids) {
			oid = oids[i]
		}
		switch formatFor(formats, i) {
		case pgtype.TextFormatCode:
			args[i] = string(raw)
		case pgtype.BinaryFormatCode:
			v, err := decodeBinaryParam(m, oid, raw)
			if err != nil {
				return nil, &query.Error{Code: sqlstate.InvalidBinaryRepresentation, Message: fmt.Sprintf("parameter $%d: %v", i+1, err)}
			}
			args[i] = v
		default:
			return nil, &query.Error{Code: sqlstate.ProtocolViolation, Message: fmt.Sprintf("parameter $%d: unsupported format code %d", i+1, formatFor(formats, i))}
		}
	}
	return args, nil
}

func decodeBinaryParam(m *pgtype.Map, oid uint32, raw []byte) (any, error) {
	want := func(n int) error {
		if len(raw) != n {
			return fmt.Errorf("binary %s value has %d bytes, want %d", typeName(oid), len(raw), n)
		}
		return nil
	}
	switch oid {
	case 0:
		return nil, fmt.Errorf("binary value for a parameter of unspecified type")
	case pgtype.BoolOID:
		if err := want(1); err != nil {
			return nil, err
		}
		return raw[0] != 0, nil
	case pgtype.Int2OID:
		if err := want(2); err != nil {
			return nil, err
		}
		return int16(binary.BigEndian.Uint16(raw)), nil
	case pgtype.Int4OID:
		if err := want(4); err != nil {
			return nil, err
		}
		return int32(binary.BigEndian.Uint32(raw)), nil
	case pgtype.Int8OID:
		if err := want(8); err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(raw)), nil
	case pgtype.Float4OID:
		if err := want(4); err != nil {
			return nil, err
		}
		return math.Float32frombits(binary.BigEndian.Uint32(raw)), nil
	case pgtype.Float8OID:
		if err := want(8); err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.BigEndian.Uint64(raw)), nil
	case pgtype.ByteaOID:
		return append([]byte{}, raw...), nil
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.JSONOID, pgtype.XMLOID:
		return string(raw), nil
	case pgtype.UUIDOID:
		if err := want(16); err != nil {
			return nil, err
		}
		return string(appendUUID(nil, raw)), nil
	case pgtype.DateOID:
		if err := want(4); err != nil {
			return nil, err
		}
		days := int64(int32(binary.BigEndian.Uint32(raw))) + pgEpochDays
		return time.Unix(days*86400, 0).UTC(), nil
	case pgtype.TimestampOID, pgtype.TimestamptzOID:
		if err := want(8); err != nil {
			return nil, err
		}
		return time.UnixMicro(int64(binary.BigEndian.Uint64(raw)) + pgEpochMicros).UTC(), nil
	}
	// Anything else pgx knows (numeric, interval, arrays...): re-encode as text for the engine.
	dt, ok := m.TypeForOID(oid)
	if !ok {
		return nil, fmt.Errorf("binary format is not supported for type %s", typeName(oid))
	}
	v, err := dt.Codec.DecodeValue(m, oid, pgtype.BinaryFormatCode, raw)
	if err != nil {
		return nil, err
	}
	text, err := m.Encode(oid, pgtype.TextFormatCode, v, nil)
	if err != nil {
		return nil, err
	}
	return string(text), nil
}
