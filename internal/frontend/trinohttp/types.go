package trinohttp

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/queryflux/queryflux/internal/engine"
)

// MetaTrinoType is field metadata an engine may set to name the exact Trino type of a column
// (the Trino engine sets it); it wins over the type derived from Arrow. The MySQL engine's
// "queryflux.mysql_type" = "json" also maps to Trino's json.
const (
	MetaTrinoType = "queryflux.trino_type"
	metaMySQLType = "queryflux.mysql_type"
)

// Column is one column as the Trino protocol describes it.
type Column struct {
	Name          string        `json:"name"`
	Type          string        `json:"type"`
	TypeSignature TypeSignature `json:"typeSignature"`
}

// TypeSignature is Trino's structured type.
type TypeSignature struct {
	RawType   string         `json:"rawType"`
	Arguments []TypeArgument `json:"arguments"`
}

// TypeArgument is one argument of a type signature: a LONG (lengths, precisions) or a TYPE.
type TypeArgument struct {
	Kind  string `json:"kind"`
	Value any    `json:"value"`
}

func longArg(n int64) TypeArgument { return TypeArgument{Kind: "LONG", Value: n} }

func simple(raw string) (string, TypeSignature) {
	return raw, TypeSignature{RawType: raw, Arguments: []TypeArgument{}}
}

const varcharMax = 2147483647 // Trino's unbounded varchar

// trinoType maps an Arrow type to a Trino type name and signature.
func trinoType(f arrow.Field) (string, TypeSignature) {
	if name := metaValue(f, MetaTrinoType); textTrinoTypes[name] && isString(f.Type) {
		return simple(name) // a Trino engine's text-carried type goes back out as itself
	}
	if isUUID(f) {
		return simple("uuid")
	}
	if isJSON(f) {
		return simple("json")
	}
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		return simple("boolean")
	case *arrow.Int8Type:
		return simple("tinyint")
	case *arrow.Int16Type, *arrow.Uint8Type:
		return simple("smallint")
	case *arrow.Int32Type, *arrow.Uint16Type:
		return simple("integer")
	case *arrow.Int64Type, *arrow.Uint32Type:
		return simple("bigint")
	case *arrow.Uint64Type:
		return "decimal(20,0)", TypeSignature{RawType: "decimal", Arguments: []TypeArgument{longArg(20), longArg(0)}}
	case *arrow.Float16Type, *arrow.Float32Type:
		return simple("real")
	case *arrow.Float64Type:
		return simple("double")
	case arrow.DecimalType:
		p, s := int64(t.GetPrecision()), int64(t.GetScale())
		if p > 38 { // Trino's decimal stops at 38 digits
			return varchar()
		}
		return fmt.Sprintf("decimal(%d,%d)", p, s), TypeSignature{RawType: "decimal", Arguments: []TypeArgument{longArg(p), longArg(s)}}
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return varchar()
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return simple("varbinary")
	case *arrow.Date32Type, *arrow.Date64Type:
		return simple("date")
	case *arrow.TimestampType:
		p := int64(precisionOf(t.Unit))
		raw := "timestamp"
		if t.TimeZone != "" {
			raw = "timestamp with time zone"
		}
		return fmt.Sprintf("%s(%d)%s", "timestamp", p, tzSuffix(t.TimeZone)), TypeSignature{RawType: raw, Arguments: []TypeArgument{longArg(p)}}
	case *arrow.Time32Type:
		p := int64(precisionOf(t.Unit))
		return fmt.Sprintf("time(%d)", p), TypeSignature{RawType: "time", Arguments: []TypeArgument{longArg(p)}}
	case *arrow.Time64Type:
		p := int64(precisionOf(t.Unit))
		return fmt.Sprintf("time(%d)", p), TypeSignature{RawType: "time", Arguments: []TypeArgument{longArg(p)}}
	case *arrow.NullType:
		return simple("unknown")
	case *arrow.ListType:
		name, sig := trinoType(t.ElemField())
		return "array(" + name + ")", TypeSignature{RawType: "array", Arguments: []TypeArgument{{Kind: "TYPE", Value: sig}}}
	default: // structs, maps, durations, ...: Arrow's text form
		return varchar()
	}
}

func isUUID(f arrow.Field) bool { return engine.IsUUIDField(f) }
func isJSON(f arrow.Field) bool { return engine.IsJSONField(f) }

// uuidText is the canonical 8-4-4-4-12 form of 16 bytes.
func uuidText(b []byte) string {
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// textTrinoTypes are Trino scalar types whose JSON value is a string.
var textTrinoTypes = map[string]bool{"json": true, "uuid": true, "ipaddress": true, "interval day to second": true,
	"interval year to month": true, "time with time zone": true}

func isString(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	}
	return false
}

func varchar() (string, TypeSignature) {
	return "varchar", TypeSignature{RawType: "varchar", Arguments: []TypeArgument{longArg(varcharMax)}}
}

func tzSuffix(tz string) string {
	if tz == "" {
		return ""
	}
	return " with time zone"
}

func precisionOf(u arrow.TimeUnit) int {
	switch u {
	case arrow.Second:
		return 0
	case arrow.Millisecond:
		return 3
	case arrow.Microsecond:
		return 6
	default:
		return 9
	}
}

func metaValue(f arrow.Field, key string) string {
	if i := f.Metadata.FindKey(key); i >= 0 {
		return f.Metadata.Values()[i]
	}
	return ""
}

// columnsFor describes a schema as Trino columns.
func columnsFor(s *arrow.Schema) []Column {
	cols := make([]Column, s.NumFields())
	for i, f := range s.Fields() {
		name, sig := trinoType(f)
		cols[i] = Column{Name: f.Name, Type: name, TypeSignature: sig}
	}
	return cols
}

// rowsOf turns a batch into JSON rows in the Trino encoding.
func rowsOf(b arrow.RecordBatch) [][]any {
	n := int(b.NumRows())
	out := make([][]any, n)
	cols := b.Columns()
	for i := range out {
		row := make([]any, len(cols))
		for c, a := range cols {
			row[c] = jsonValue(b.Schema().Field(c), a, i)
		}
		out[i] = row
	}
	return out
}

// jsonValue is row i of a as the Trino JSON encoding writes it.
func jsonValue(f arrow.Field, a arrow.Array, i int) any {
	if a.IsNull(i) || a.DataType().ID() == arrow.NULL {
		return nil
	}
	if ext, ok := a.(array.ExtensionArray); ok {
		a = ext.Storage()
	}
	if fb, ok := a.(*array.FixedSizeBinary); ok && isUUID(f) {
		return uuidText(fb.Value(i))
	}
	switch a := a.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return a.Value(i)
	case *array.Uint16:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10) // decimal(20,0): decimals travel as strings
	case *array.Float16:
		return floatJSON(float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return floatJSON(float64(a.Value(i)), 32)
	case *array.Float64:
		return floatJSON(a.Value(i), 64)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.BinaryView:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.FixedSizeBinary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.Date32:
		return a.Value(i).ToTime().UTC().Format(time.DateOnly)
	case *array.Date64:
		return a.Value(i).ToTime().UTC().Format(time.DateOnly)
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		v := a.Value(i).ToTime(t.Unit).UTC()
		s := v.Format(time.DateTime) + fraction(v.Nanosecond(), precisionOf(t.Unit))
		if t.TimeZone != "" {
			s += " UTC"
		}
		return s
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return timeOfDay(time.Duration(a.Value(i))*unit.Multiplier(), precisionOf(unit))
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return timeOfDay(time.Duration(a.Value(i))*unit.Multiplier(), precisionOf(unit))
	case *array.List:
		start, end := a.ValueOffsets(i)
		elems := a.ListValues()
		ef := a.DataType().(*arrow.ListType).ElemField()
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, jsonValue(ef, elems, int(j)))
		}
		return out
	default: // decimals (Trino sends them as strings), nested types
		if d, ok := engine.DecimalText(a, i); ok {
			return d
		}
		return a.ValueStr(i)
	}
}

func floatJSON(v float64, bits int) any {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(v, 'g', -1, bits))
}

func fraction(nanos, digits int) string {
	if digits == 0 {
		return ""
	}
	return "." + strconv.Itoa(1_000_000_000 + nanos)[1:1+digits]
}

func timeOfDay(d time.Duration, digits int) string {
	h, m, s := int64(d/time.Hour), int64(d/time.Minute)%60, int64(d/time.Second)%60
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s) + fraction(int(d%time.Second), digits)
}
