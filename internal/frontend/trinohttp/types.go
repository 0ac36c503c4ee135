package trinohttp

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/structured"
	"github.com/queryflux/queryflux/internal/trinodecl"
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
	if name, sig, ok := declaredLiteral(f); ok {
		return name, sig
	}
	if name, sig, ok := declaredRow(f); ok {
		return name, sig
	}
	if n := charLength(f); n > 0 && isString(f.Type) {
		return fmt.Sprintf("char(%d)", n), TypeSignature{RawType: "char", Arguments: []TypeArgument{longArg(n)}}
	}
	if n := varcharLength(f); n > 0 && isString(f.Type) {
		return fmt.Sprintf("varchar(%d)", n), TypeSignature{RawType: "varchar", Arguments: []TypeArgument{longArg(n)}}
	}
	if name, sig, ok := declaredMap(f); ok {
		return name, sig
	}
	if isUUID(f) {
		return simple("uuid")
	}
	if isJSON(f) {
		return simple("json")
	}
	if isString(f.Type) && engine.IsTimeTZField(f) {
		p := int64(timeTZPrecision(f))
		return fmt.Sprintf("time(%d) with time zone", p), TypeSignature{RawType: "time with time zone", Arguments: []TypeArgument{longArg(p)}}
	}
	if isString(f.Type) && unboundedNumber(f) {
		return simple("number")
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
		if p > 38 { // Trino's decimal stops at 38 digits; its number has no limit
			return simple("number")
		}
		return fmt.Sprintf("decimal(%d,%d)", p, s), TypeSignature{RawType: "decimal", Arguments: []TypeArgument{longArg(p), longArg(s)}}
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return varchar()
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return simple("varbinary")
	case *arrow.Date32Type, *arrow.Date64Type:
		return simple("date")
	case *arrow.TimestampType:
		p := int64(timestampDigits(f, t))
		tz := t.TimeZone
		if tz == "" {
			tz = metaValue(f, metaTrinoZone) // a zone's wall times (declared.go)
		}
		raw := "timestamp"
		if tz != "" {
			raw = "timestamp with time zone"
		}
		return fmt.Sprintf("%s(%d)%s", "timestamp", p, tzSuffix(tz)), TypeSignature{RawType: raw, Arguments: []TypeArgument{longArg(p)}}
	case *arrow.Time32Type:
		p := int64(timeDigits(f, t.Unit))
		return fmt.Sprintf("time(%d)", p), TypeSignature{RawType: "time", Arguments: []TypeArgument{longArg(p)}}
	case *arrow.Time64Type:
		p := int64(timeDigits(f, t.Unit))
		return fmt.Sprintf("time(%d)", p), TypeSignature{RawType: "time", Arguments: []TypeArgument{longArg(p)}}
	case *arrow.NullType:
		return simple("unknown")
	case *arrow.ListType:
		return arrayOf(t.ElemField())
	case *arrow.FixedSizeListType:
		return arrayOf(t.ElemField())
	case *arrow.MapType:
		kn, ks := trinoType(t.KeyField())
		vn, vs := trinoType(t.ItemField())
		return "map(" + kn + ", " + vn + ")", TypeSignature{RawType: "map", Arguments: []TypeArgument{{Kind: "TYPE", Value: ks}, {Kind: "TYPE", Value: vs}}}
	case *arrow.StructType:
		names := make([]string, t.NumFields())
		args := make([]TypeArgument, t.NumFields())
		for i, sf := range t.Fields() {
			n, sig := trinoType(sf)
			if trinodecl.IsAnonymousField(sf.Name) { // row(1, 'a') on DuckDB (trinodecl.AnonymousField)
				names[i], args[i] = n, TypeArgument{Kind: "NAMED_TYPE", Value: namedType{TypeSignature: sig}}
				continue
			}
			names[i] = sf.Name + " " + n
			args[i] = TypeArgument{Kind: "NAMED_TYPE", Value: namedType{FieldName: &fieldName{Name: sf.Name}, TypeSignature: sig}}
		}
		return "row(" + strings.Join(names, ", ") + ")", TypeSignature{RawType: "row", Arguments: args}
	case *arrow.MonthDayNanoIntervalType:
		if yearToMonth(f) {
			return simple("interval year to month")
		}
		return simple("interval day to second")
	default: // durations, unions, ...: Arrow's text form
		return varchar()
	}
}

func arrayOf(elem arrow.Field) (string, TypeSignature) {
	name, sig := trinoType(elem)
	return "array(" + name + ")", TypeSignature{RawType: "array", Arguments: []TypeArgument{{Kind: "TYPE", Value: sig}}}
}

// namedType is a row field in a type signature (Trino's NAMED_TYPE argument).
type namedType struct {
	FieldName     *fieldName    `json:"fieldName,omitempty"` // none for an anonymous field
	TypeSignature TypeSignature `json:"typeSignature"`
}

type fieldName struct {
	Name string `json:"name"`
}

// yearToMonth says whether an interval column holds only years and months: a PostgreSQL
// interval declared YEAR, MONTH or YEAR TO MONTH, or a select item its statement declares so
// (interval '1-2' year to month on DuckDB). Every other interval is Trino's interval day to
// second, a month counting 30 days (as PostgreSQL and DuckDB compare intervals).
func yearToMonth(f arrow.Field) bool {
	if metaValue(f, engine.MetaTrinoDeclared) == "interval year to month" {
		return true // a Trino client's interval '1-2' year to month on an engine with one interval type
	}
	if metaValue(f, engine.MetaPGType) != "interval" {
		return false
	}
	typmod, err := strconv.ParseInt(metaValue(f, engine.MetaPGTypmod), 10, 32)
	if err != nil || typmod < 0 {
		return false
	}
	switch (typmod >> 16) & 0x7fff { // PostgreSQL's interval range bits: YEAR 1<<2, MONTH 1<<1
	case 1 << 2, 1 << 1, 1<<2 | 1<<1:
		return true
	}
	return false
}

// intervalText is v as Trino writes an interval: "Y-M" for year to month, "D HH:MM:SS.mmm" for
// day to second (milliseconds, Trino's precision), with a leading minus when negative.
func intervalText(v arrow.MonthDayNanoInterval, yearMonth bool) string {
	if yearMonth {
		m, sign := int64(v.Months), ""
		if m < 0 {
			m, sign = -m, "-"
		}
		return fmt.Sprintf("%s%d-%d", sign, m/12, m%12)
	}
	ms := (int64(v.Months)*30+int64(v.Days))*86_400_000 + v.Nanoseconds/1_000_000
	sign := ""
	if ms < 0 {
		ms, sign = -ms, "-"
	}
	return fmt.Sprintf("%s%d %02d:%02d:%02d.%03d", sign, ms/86_400_000, ms/3_600_000%24, ms/60_000%60, ms/1000%60, ms%1000)
}

// unboundedNumber says whether f is text an engine names a number without a fixed width:
// PostgreSQL's numeric (unbounded, or wider than a decimal128; NaN and infinities included),
// DuckDB's BIGNUM. Trino's number holds them all.
func unboundedNumber(f arrow.Field) bool {
	return metaValue(f, engine.MetaDuckDBType) == "BIGNUM" || metaValue(f, engine.MetaPGType) == "numeric"
}

// timeTZPrecision is the digits of a second a time with a zone keeps: PostgreSQL's declared
// timetz(p), else microseconds (DuckDB's, and PostgreSQL's default).
func timeTZPrecision(f arrow.Field) int {
	if p, err := strconv.Atoi(metaValue(f, engine.MetaPGTypmod)); err == nil && p >= 0 && p < 6 {
		return p
	}
	return 6
}

// timeTZText is an engine's time with a zone (PostgreSQL's and DuckDB's 12:34:56.5+02,
// 01:02:03-05:30) as Trino writes it: 12:34:56.500000+02:00, digits digits of a second, the
// offset in hours and minutes (seconds of an offset, which Trino has not, dropped).
func timeTZText(text string, digits int) (string, error) {
	i := strings.LastIndexAny(text, "+-")
	if i <= 0 {
		return "", fmt.Errorf("time with time zone %q: no offset", text)
	}
	clock, err := structured.ParseClock(text[:i])
	if err != nil {
		return "", fmt.Errorf("time with time zone %q: %w", text, err)
	}
	parts := strings.Split(text[i+1:], ":")
	hh, err1 := strconv.Atoi(parts[0])
	mm, err2 := 0, error(nil)
	if len(parts) > 1 {
		mm, err2 = strconv.Atoi(parts[1])
	}
	if err1 != nil || err2 != nil || len(parts) > 3 {
		return "", fmt.Errorf("time with time zone %q: bad offset", text)
	}
	return fmt.Sprintf("%s%c%02d:%02d", timeOfDay(clock, digits), text[i], hh, mm), nil
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

// varcharLength is n of a column's varchar(n): the one its statement declared
// (engine.MetaTrinoDeclared), or PostgreSQL's (its type modifier, n plus the 4 bytes of a value's
// header); 0 for an unbounded varchar and for any other type.
func varcharLength(f arrow.Field) int64 {
	if n, ok := strings.CutPrefix(metaValue(f, engine.MetaTrinoDeclared), "varchar("); ok {
		if n, err := strconv.ParseInt(strings.TrimSuffix(n, ")"), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	if metaValue(f, engine.MetaPGOID) == pgVarcharOID {
		if typmod, err := strconv.ParseInt(metaValue(f, engine.MetaPGTypmod), 10, 32); err == nil && typmod > 4 {
			return typmod - 4
		}
	}
	return 0
}

var pgVarcharOID, pgBPCharOID = strconv.Itoa(pgtype.VarcharOID), strconv.Itoa(pgtype.BPCharOID)

// charLength is n of a column's char(n): the one its statement declared
// (engine.MetaTrinoDeclared), or PostgreSQL's char(n) (bpchar, its type modifier n + 4); 0 for
// any other type.
func charLength(f arrow.Field) int64 {
	if n, ok := strings.CutPrefix(metaValue(f, engine.MetaTrinoDeclared), "char("); ok {
		if n, err := strconv.ParseInt(strings.TrimSuffix(n, ")"), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	if metaValue(f, engine.MetaPGOID) == pgBPCharOID {
		if typmod, err := strconv.ParseInt(metaValue(f, engine.MetaPGTypmod), 10, 32); err == nil && typmod > 4 {
			return typmod - 4
		}
	}
	return 0
}

// declaredChar is n of a char(n) its statement declared (engine.MetaTrinoDeclared); 0 for any
// other column (PostgreSQL's char(n) values come padded).
func declaredChar(f arrow.Field) int64 {
	if f.Metadata.Len() == 0 {
		return 0
	}
	if n, ok := strings.CutPrefix(metaValue(f, engine.MetaTrinoDeclared), "char("); ok {
		if n, err := strconv.ParseInt(strings.TrimSuffix(n, ")"), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// charText is a char(n) value as Trino writes it: padded with spaces to n characters (an engine
// that keeps char(n) as text, DuckDB, holds it unpadded).
func charText(v string, n int64) string {
	if pad := int(n) - utf8.RuneCountInString(v); pad > 0 {
		return v + strings.Repeat(" ", pad)
	}
	return v
}

// pgPrecision is the digits of a second PostgreSQL's time(p), timestamp(p) or timestamptz(p)
// keeps (its type modifier), if it was declared and is at most max; else -1.
func pgPrecision(f arrow.Field, max int) int {
	p, err := strconv.Atoi(metaValue(f, engine.MetaPGTypmod))
	if err != nil || p < 0 || p > max {
		return -1
	}
	return p
}

// timeDigits is the precision of a time column: the one its statement declared
// (engine.MetaTrinoDeclared), PostgreSQL's declared time(p), else its unit's.
func timeDigits(f arrow.Field, u arrow.TimeUnit) int {
	if p, ok := strings.CutPrefix(metaValue(f, engine.MetaTrinoDeclared), "time("); ok && len(p) == 2 && p[1] == ')' &&
		p[0] >= '0' && int(p[0]-'0') <= precisionOf(u) {
		return int(p[0] - '0') // a DuckDB table's time(3) column
	}
	if p := pgPrecision(f, precisionOf(u)); p >= 0 {
		return p
	}
	return precisionOf(u)
}

// timestampDigits is the precision of a timestamp column: the one its statement declared
// (engine.MetaTrinoDeclared), PostgreSQL's declared timestamp(p) or timestamptz(p), its unit's,
// or the one of the engine's type it was read as (DuckDB's TIMESTAMP_S, TIMESTAMP_MS and
// TIMESTAMP_NS travel in microseconds: a Trino client's timestamp(0), timestamp(3) and
// timestamp '...' literals).
func timestampDigits(f arrow.Field, t *arrow.TimestampType) int {
	if p, ok := strings.CutPrefix(metaValue(f, engine.MetaTrinoDeclared), "timestamp("); ok && len(p) > 1 && p[1] == ')' &&
		p[0] >= '0' && int(p[0]-'0') <= precisionOf(t.Unit) {
		return int(p[0] - '0') // a Trino client's now(): timestamp(3) with time zone
	}
	if p := pgPrecision(f, precisionOf(t.Unit)); p >= 0 {
		return p
	}
	switch metaValue(f, engine.MetaDuckDBType) {
	case "TIMESTAMP_S":
		return 0
	case "TIMESTAMP_MS":
		return 3
	case "TIMESTAMP_NS":
		return 9
	}
	return precisionOf(t.Unit)
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
	cells := make([]any, n*len(cols)) // every row's, in one allocation
	for i := range out {
		row := cells[i*len(cols) : (i+1)*len(cols) : (i+1)*len(cols)]
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
		if engine.IsTimeTZField(f) {
			if v, err := timeTZText(a.Value(i), timeTZPrecision(f)); err == nil {
				return v
			}
		}
		if f.Metadata.Len() == 0 || metaValue(f, engine.MetaTrinoDeclared) == "" {
			return a.Value(i)
		}
		if n := declaredChar(f); n > 0 {
			return charText(a.Value(i), n)
		}
		if _, sig, ok := declaredRow(f); ok {
			if v := rowJSON(a.Value(i), sig); v != nil {
				return v
			}
		}
		if _, _, ok := declaredMap(f); ok {
			var m map[string]any // a jsonb object: Trino writes a map as a JSON object
			d := json.NewDecoder(strings.NewReader(a.Value(i)))
			d.UseNumber()
			if d.Decode(&m) == nil {
				return m
			}
		}
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
		s := v.Format(time.DateTime) + fraction(v.Nanosecond(), timestampDigits(f, t))
		if t.TimeZone != "" {
			s += " UTC"
		} else if f.Metadata.Len() > 0 {
			if zone := metaValue(f, metaTrinoZone); zone != "" {
				s += " " + zone // wall times in the zone a Trino client's statement named
			}
		}
		return s
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return timeOfDay(time.Duration(a.Value(i))*unit.Multiplier(), timeDigits(f, unit))
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return timeOfDay(time.Duration(a.Value(i))*unit.Multiplier(), timeDigits(f, unit))
	case *array.List:
		start, end := a.ValueOffsets(i)
		return listJSON(a.DataType().(*arrow.ListType).ElemField(), a.ListValues(), start, end)
	case *array.FixedSizeList:
		start, end := a.ValueOffsets(i)
		return listJSON(a.DataType().(*arrow.FixedSizeListType).ElemField(), a.ListValues(), start, end)
	case *array.Map: // a JSON object: Trino writes every key as a string
		start, end := a.ValueOffsets(i)
		mt := a.DataType().(*arrow.MapType)
		keys, items := a.Keys(), a.Items()
		out := make(map[string]any, end-start)
		for j := int(start); j < int(end); j++ {
			out[keyText(jsonValue(mt.KeyField(), keys, j))] = jsonValue(mt.ItemField(), items, j)
		}
		return out
	case *array.Struct: // a JSON array of the field values, in field order
		st := a.DataType().(*arrow.StructType)
		out := make([]any, a.NumField())
		for k := range out {
			out[k] = jsonValue(st.Field(k), a.Field(k), i)
		}
		return out
	case *array.MonthDayNanoInterval:
		return intervalText(a.Value(i), yearToMonth(f))
	default: // decimals (Trino sends them as strings), nested types
		if d, ok := engine.DecimalText(a, i); ok {
			return d
		}
		return a.ValueStr(i)
	}
}

func listJSON(ef arrow.Field, elems arrow.Array, start, end int64) []any {
	out := make([]any, 0, end-start)
	for j := start; j < end; j++ {
		out = append(out, jsonValue(ef, elems, int(j)))
	}
	return out
}

func keyText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
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

// declaredLiteral is the Trino type a literal select item declared (trinodecl's literals.go,
// declared.go's literalFits) where trinoType would read another from the engine's: unknown
// (a bare NULL: PostgreSQL's text, DuckDB's integer), json, uuid and intervals given as their
// text (MariaDB), varchar(0), PostgreSQL's unbounded numeric and DuckDB's decimal of the same
// scale as decimal(p,s); ok is false for any other column.
func declaredLiteral(f arrow.Field) (string, TypeSignature, bool) {
	if f.Metadata.Len() == 0 {
		return "", TypeSignature{}, false
	}
	d := metaValue(f, engine.MetaTrinoDeclared)
	switch {
	case d == "unknown" || isString(f.Type) && textTrinoTypes[d]:
		name, sig := simple(d)
		return name, sig, true
	case d == "varchar(0)" && isString(f.Type):
		return d, TypeSignature{RawType: "varchar", Arguments: []TypeArgument{longArg(0)}}, true
	case strings.HasPrefix(d, "decimal("):
		p, s, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(d, "decimal("), ")"), ",")
		pn, err1 := strconv.ParseInt(p, 10, 64)
		sn, err2 := strconv.ParseInt(s, 10, 64)
		dt, decimal := f.Type.(arrow.DecimalType) // DuckDB's 0.5 is decimal(2,1), Trino's decimal(1,1)
		if ok && err1 == nil && err2 == nil && (isString(f.Type) && unboundedNumber(f) || decimal && int64(dt.GetScale()) == sn) {
			return d, TypeSignature{RawType: "decimal", Arguments: []TypeArgument{longArg(pn), longArg(sn)}}, true
		}
	}
	return "", TypeSignature{}, false
}

// declaredMap is the map(K, V) its statement declared for a column an engine gives as a JSON
// object (PostgreSQL's jsonb; declared.go), K and V scalars; ok is false for any other column.
func declaredMap(f arrow.Field) (string, TypeSignature, bool) {
	if f.Metadata.Len() == 0 || !isString(f.Type) {
		return "", TypeSignature{}, false
	}
	name := metaValue(f, engine.MetaTrinoDeclared)
	inner, ok := strings.CutPrefix(name, "map(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return "", TypeSignature{}, false
	}
	k, v, ok := strings.Cut(strings.TrimSuffix(inner, ")"), ", ")
	ks, kok := scalarSignature(k)
	vs, vok := scalarSignature(v)
	if !ok || !kok || !vok {
		return "", TypeSignature{}, false
	}
	return name, TypeSignature{RawType: "map", Arguments: []TypeArgument{{Kind: "TYPE", Value: ks}, {Kind: "TYPE", Value: vs}}}, true
}

// scalarSignature is the signature of a scalar type's name: varchar(n), integer, bigint,
// boolean.
func scalarSignature(name string) (TypeSignature, bool) {
	if n, ok := strings.CutPrefix(name, "varchar("); ok {
		length, err := strconv.ParseInt(strings.TrimSuffix(n, ")"), 10, 64)
		return TypeSignature{RawType: "varchar", Arguments: []TypeArgument{longArg(length)}}, err == nil
	}
	switch name {
	case "integer", "bigint", "boolean":
		_, sig := simple(name)
		return sig, true
	}
	return TypeSignature{}, false
}
