package trinoengine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// MetaTrinoType is the field metadata key holding the Trino type name of a column whose Arrow
// type does not say it all (json, uuid, arrays, maps, rows, intervals ...: sent as text).
const MetaTrinoType = "queryflux.trino_type"

// column is a Trino result column as the protocol describes it.
type column struct {
	Name          string        `json:"name"`
	Type          string        `json:"type"`
	TypeSignature typeSignature `json:"typeSignature"`
}

type typeSignature struct {
	RawType   string         `json:"rawType"`
	Arguments []typeArgument `json:"arguments"`
}

type typeArgument struct {
	Kind  string          `json:"kind"`
	Value json.RawMessage `json:"value"`
}

// longArg returns the i-th LONG argument (a length or precision), or def.
func (s typeSignature) longArg(i int, def int64) int64 {
	if i >= len(s.Arguments) || s.Arguments[i].Kind != "LONG" {
		return def
	}
	n, err := strconv.ParseInt(string(s.Arguments[i].Value), 10, 64)
	if err != nil {
		return def
	}
	return n
}

// arrowField maps a Trino column to an Arrow field.
func arrowField(c column) arrow.Field {
	f := arrow.Field{Name: c.Name, Nullable: true}
	sig := c.TypeSignature
	raw := sig.RawType
	if raw == "" { // very old servers: only the type text
		raw, _, _ = strings.Cut(c.Type, "(")
	}
	switch raw {
	case "boolean":
		f.Type = arrow.FixedWidthTypes.Boolean
	case "tinyint":
		f.Type = arrow.PrimitiveTypes.Int8
	case "smallint":
		f.Type = arrow.PrimitiveTypes.Int16
	case "integer":
		f.Type = arrow.PrimitiveTypes.Int32
	case "bigint":
		f.Type = arrow.PrimitiveTypes.Int64
	case "real":
		f.Type = arrow.PrimitiveTypes.Float32
	case "double":
		f.Type = arrow.PrimitiveTypes.Float64
	case "decimal":
		f.Type = &arrow.Decimal128Type{Precision: int32(sig.longArg(0, 38)), Scale: int32(sig.longArg(1, 0))}
	case "varchar", "char":
		f.Type = arrow.BinaryTypes.String
	case "varbinary":
		f.Type = arrow.BinaryTypes.Binary
	case "date":
		f.Type = arrow.FixedWidthTypes.Date32
	case "timestamp":
		f.Type = &arrow.TimestampType{Unit: precisionUnit(sig.longArg(0, 3))}
	case "timestamp with time zone":
		f.Type = &arrow.TimestampType{Unit: precisionUnit(sig.longArg(0, 3)), TimeZone: "UTC"}
	case "time":
		switch u := precisionUnit(sig.longArg(0, 3)); u {
		case arrow.Second, arrow.Millisecond:
			f.Type = &arrow.Time32Type{Unit: u}
		default:
			f.Type = &arrow.Time64Type{Unit: u}
		}
	case "unknown":
		f.Type = arrow.Null
	default: // json, uuid, ipaddress, intervals, time with time zone, array, map, row, ...
		f.Type = arrow.BinaryTypes.String
		f.Metadata = arrow.NewMetadata([]string{MetaTrinoType}, []string{c.Type})
	}
	return f
}

func precisionUnit(p int64) arrow.TimeUnit {
	switch {
	case p <= 0:
		return arrow.Second
	case p <= 3:
		return arrow.Millisecond
	case p <= 6:
		return arrow.Microsecond
	default:
		return arrow.Nanosecond
	}
}

// appendJSON appends one JSON-decoded Trino value (numbers as json.Number) to b.
func appendJSON(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.NullBuilder:
		b.AppendNull()
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("boolean: got %T", v)
		}
		b.Append(x)
	case *array.Int8Builder:
		n, err := jsonInt(v)
		b.Append(int8(n))
		return err
	case *array.Int16Builder:
		n, err := jsonInt(v)
		b.Append(int16(n))
		return err
	case *array.Int32Builder:
		n, err := jsonInt(v)
		b.Append(int32(n))
		return err
	case *array.Int64Builder:
		n, err := jsonInt(v)
		b.Append(n)
		return err
	case *array.Float32Builder:
		f, err := jsonFloat(v)
		b.Append(float32(f))
		return err
	case *array.Float64Builder:
		f, err := jsonFloat(v)
		b.Append(f)
		return err
	case *array.Decimal128Builder:
		t := b.Type().(*arrow.Decimal128Type)
		n, err := decimal128.FromString(fmt.Sprint(v), t.Precision, t.Scale)
		if err != nil {
			return fmt.Errorf("decimal %v: %w", v, err)
		}
		b.Append(n)
	case *array.StringBuilder:
		if s, ok := v.(string); ok {
			b.Append(s)
			return nil
		}
		text, err := json.Marshal(v) // arrays, maps, rows: their JSON text
		if err != nil {
			return err
		}
		b.Append(string(text))
	case *array.BinaryBuilder:
		s, _ := v.(string)
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("varbinary: %w", err)
		}
		b.Append(raw)
	case *array.Date32Builder:
		t, err := time.Parse(time.DateOnly, fmt.Sprint(v))
		if err != nil {
			return err
		}
		b.Append(arrow.Date32FromTime(t))
	case *array.TimestampBuilder:
		t, err := parseTimestamp(fmt.Sprint(v))
		if err != nil {
			return err
		}
		unit := b.Type().(*arrow.TimestampType).Unit
		b.Append(arrow.Timestamp(t.UnixNano() / int64(unit.Multiplier())))
	case *array.Time32Builder:
		d, err := parseTimeOfDay(fmt.Sprint(v))
		if err != nil {
			return err
		}
		b.Append(arrow.Time32(d / b.Type().(*arrow.Time32Type).Unit.Multiplier()))
	case *array.Time64Builder:
		d, err := parseTimeOfDay(fmt.Sprint(v))
		if err != nil {
			return err
		}
		b.Append(arrow.Time64(d / b.Type().(*arrow.Time64Type).Unit.Multiplier()))
	default:
		panic(fmt.Sprintf("trinoengine: no appender for %T", b))
	}
	return nil
}

func jsonInt(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Int64()
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("integer: got %T", v)
}

// jsonFloat reads a number, or the strings Trino sends for non-finite values.
func jsonFloat(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Float64()
	case string:
		return strconv.ParseFloat(x, 64) // "NaN", "Infinity", "-Infinity"
	}
	return 0, fmt.Errorf("float: got %T", v)
}

// parseTimestamp reads "2024-01-02 03:04:05[.fff...]" with an optional zone ("UTC",
// "Europe/Paris", "+02:00"); zoned values come back in UTC.
func parseTimestamp(s string) (time.Time, error) {
	loc := time.UTC
	if i := strings.LastIndexByte(s, ' '); i > len(time.DateOnly) {
		zone := s[i+1:]
		if z, err := zoneOf(zone); err == nil {
			loc, s = z, s[:i]
		}
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", s, loc)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

func zoneOf(zone string) (*time.Location, error) {
	if strings.HasPrefix(zone, "+") || strings.HasPrefix(zone, "-") {
		t, err := time.Parse("-07:00", zone)
		if err != nil {
			return nil, err
		}
		_, off := t.Zone()
		return time.FixedZone(zone, off), nil
	}
	return time.LoadLocation(zone)
}

// parseTimeOfDay reads "HH:MM:SS[.fff...]" as a duration since midnight.
func parseTimeOfDay(s string) (time.Duration, error) {
	t, err := time.Parse("15:04:05.999999999", s)
	if err != nil {
		return 0, err
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond()), nil
}

// literal renders a Go value as a Trino SQL literal, for EXECUTE IMMEDIATE ... USING.
func literal(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "NULL", nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int8, int16, int32, int64:
		return fmt.Sprint(x), nil
	case uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), nil
	case float32:
		return "REAL '" + strconv.FormatFloat(float64(x), 'g', -1, 32) + "'", nil
	case float64:
		return "DOUBLE '" + strconv.FormatFloat(x, 'g', -1, 64) + "'", nil
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'", nil
	case []byte:
		return "X'" + fmt.Sprintf("%x", x) + "'", nil
	case time.Time:
		return "TIMESTAMP '" + x.Format("2006-01-02 15:04:05.999999999") + "'", nil
	}
	return "", fmt.Errorf("trinoengine: parameter of type %T has no Trino literal", v)
}
