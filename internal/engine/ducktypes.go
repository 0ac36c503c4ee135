package engine

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// DuckDBType is the Arrow type of a DuckDB scalar type name, the one mapping both the DuckDB
// engine (its columns) and the structured-value reader (scalars inside LIST, STRUCT and MAP
// values) use. ok is false for a type it has no Arrow type for (UHUGEINT, INTERVAL, ENUM,
// TIMETZ, composites...): each caller says what those become.
func DuckDBType(name string) (t arrow.DataType, ok bool) {
	switch name {
	case "BOOLEAN":
		return arrow.FixedWidthTypes.Boolean, true
	case "TINYINT":
		return arrow.PrimitiveTypes.Int8, true
	case "SMALLINT":
		return arrow.PrimitiveTypes.Int16, true
	case "INTEGER":
		return arrow.PrimitiveTypes.Int32, true
	case "BIGINT":
		return arrow.PrimitiveTypes.Int64, true
	case "UTINYINT":
		return arrow.PrimitiveTypes.Uint8, true
	case "USMALLINT":
		return arrow.PrimitiveTypes.Uint16, true
	case "UINTEGER":
		return arrow.PrimitiveTypes.Uint32, true
	case "UBIGINT":
		return arrow.PrimitiveTypes.Uint64, true
	case "FLOAT":
		return arrow.PrimitiveTypes.Float32, true
	case "DOUBLE":
		return arrow.PrimitiveTypes.Float64, true
	case "VARCHAR", "JSON":
		return arrow.BinaryTypes.String, true
	case "HUGEINT": // as DuckDB's own Arrow export: 128-bit integers in a decimal128
		return HugeintType, true
	case "BLOB":
		return arrow.BinaryTypes.Binary, true
	case "DATE":
		return arrow.FixedWidthTypes.Date32, true
	case "TIME":
		return arrow.FixedWidthTypes.Time64us, true
	case "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS":
		return TimestampType, true
	case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
		return TimestampTZType, true
	case "UUID":
		return UUIDType, true
	}
	if p, s, ok := duckDBDecimal(name); ok {
		return &arrow.Decimal128Type{Precision: p, Scale: s}, true
	}
	return nil, false
}

// duckDBDecimal reads "DECIMAL(p,s)".
func duckDBDecimal(t string) (int32, int32, bool) {
	inner, ok := strings.CutPrefix(t, "DECIMAL(")
	if !ok {
		return 0, 0, false
	}
	ps, s, ok := strings.Cut(strings.TrimSuffix(inner, ")"), ",")
	if !ok {
		return 0, 0, false
	}
	p, e1 := strconv.Atoi(strings.TrimSpace(ps))
	sc, e2 := strconv.Atoi(strings.TrimSpace(s))
	if e1 != nil || e2 != nil || p < 1 || p > 38 || sc < 0 || sc > p {
		return 0, 0, false
	}
	return int32(p), int32(sc), true
}

// DuckDBField is a field of Arrow type t that carries its DuckDB type name as MetaDuckDBType.
func DuckDBField(name, dbType string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true,
		Metadata: arrow.NewMetadata([]string{MetaDuckDBType}, []string{dbType})}
}

// DuckDBArrayOID is the PostgreSQL array type of a DuckDB list or fixed-size array of a scalar
// type with an Arrow type here (INTEGER[] is int4[]; INTEGER[][] and INTEGER[3] too: PostgreSQL's
// arrays have dimensions, not nesting or sizes). ok is false for anything else (not a list, or a
// list of JSON, intervals, structs, maps...), which PostgreSQL clients get as text.
func DuckDBArrayOID(name string) (oid uint32, ok bool) {
	elem := strings.TrimRight(name, "[]0123456789")
	if elem == name || elem == "JSON" || !strings.HasSuffix(name, "]") {
		return 0, false
	}
	t, ok := DuckDBType(elem)
	if !ok {
		return 0, false
	}
	elemOID, _ := pgTypeForArrow(DuckDBField("", elem, t))
	et, ok := pgTypeNames.TypeForOID(elemOID)
	if !ok {
		return 0, false
	}
	at, ok := pgTypeNames.TypeForName("_" + et.Name)
	if !ok {
		return 0, false
	}
	return at.OID, true
}
