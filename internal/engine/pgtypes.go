package engine

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgtype"
)

// Arrow field metadata keys that record a column's source type, so a frontend can reproduce
// the exact type (a PostgreSQL client sees numeric(10,2), not text).
const (
	MetaPGOID      = "pg.oid"      // PostgreSQL type OID, decimal
	MetaPGType     = "pg.type"     // PostgreSQL type name, e.g. "numeric"
	MetaPGTypmod   = "pg.typmod"   // PostgreSQL type modifier, decimal; absent when -1
	MetaDuckDBType = "duckdb.type" // DuckDB type name, e.g. "DECIMAL(18,3)", "JSON"
	// MetaTrinoDeclared is the Trino type a Trino client's statement gives a column where the
	// engine's type says less: "timestamp(3) with time zone" for now(), "varchar(7)" for a cast.
	MetaTrinoDeclared = "trino.declared"
)

// PostgreSQL's infinite dates and timestamps ('infinity', '-infinity') have no Arrow value: they
// are carried as the extreme values of the Arrow type (sentinels). The PostgreSQL frontend turns
// them back into infinity; Trino and Flight SQL clients see the extreme instants.
const (
	TimestampInfinity    arrow.Timestamp = math.MaxInt64
	TimestampNegInfinity arrow.Timestamp = math.MinInt64
	DateInfinity         arrow.Date32    = math.MaxInt32
	DateNegInfinity      arrow.Date32    = math.MinInt32
)

// Timestamp types engines use: microseconds, as PostgreSQL and DuckDB keep them.
var (
	TimestampType   = &arrow.TimestampType{Unit: arrow.Microsecond}
	TimestampTZType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	UUIDType        = &arrow.FixedSizeBinaryType{ByteWidth: 16}
	// HugeintType carries DuckDB's HUGEINT as DuckDB's own Arrow export does: its 128 bits in a
	// decimal128 of 38 digits (the type's extreme values have 39: they travel all the same).
	HugeintType = &arrow.Decimal128Type{Precision: 38, Scale: 0}
)

var pgTypeNames = pgtype.NewMap()

// PGTypeName is the PostgreSQL name of oid, or "oid:N" for types pgx does not know.
func PGTypeName(oid uint32) string {
	if t, ok := pgTypeNames.TypeForOID(oid); ok {
		return t.Name
	}
	return "oid:" + strconv.FormatUint(uint64(oid), 10)
}

// ArrowTypeForPG is the Arrow type a PostgreSQL column of type oid (modifier typmod) is carried
// in. Types without a natural Arrow form (intervals, arrays, ranges, enums...) travel as their
// PostgreSQL text form in a Utf8 column; the pg.oid metadata keeps their identity.
func ArrowTypeForPG(oid uint32, typmod int32) arrow.DataType {
	switch oid {
	case pgtype.BoolOID:
		return arrow.FixedWidthTypes.Boolean
	case pgtype.Int2OID:
		return arrow.PrimitiveTypes.Int16
	case pgtype.Int4OID:
		return arrow.PrimitiveTypes.Int32
	case pgtype.Int8OID:
		return arrow.PrimitiveTypes.Int64
	case pgtype.Float4OID:
		return arrow.PrimitiveTypes.Float32
	case pgtype.Float8OID:
		return arrow.PrimitiveTypes.Float64
	case pgtype.NumericOID:
		if p, s, ok := NumericTypmod(typmod); ok && p <= 38 {
			return &arrow.Decimal128Type{Precision: p, Scale: s}
		}
		return arrow.BinaryTypes.String
	case pgtype.ByteaOID:
		return arrow.BinaryTypes.Binary
	case pgtype.DateOID:
		return arrow.FixedWidthTypes.Date32
	case pgtype.TimeOID:
		return arrow.FixedWidthTypes.Time64us
	case pgtype.TimestampOID:
		return TimestampType
	case pgtype.TimestamptzOID:
		return TimestampTZType
	case pgtype.UUIDOID:
		return UUIDType
	}
	return arrow.BinaryTypes.String
}

// NumericTypmod decodes numeric(p,s) from a type modifier.
func NumericTypmod(typmod int32) (precision, scale int32, ok bool) {
	if typmod < 4 {
		return 0, 0, false
	}
	t := typmod - 4
	return (t >> 16) & 0xffff, t & 0xffff, true
}

// PGField is an Arrow field for a PostgreSQL column, with its source type in the metadata.
func PGField(name string, oid uint32, typmod int32) arrow.Field {
	keys := []string{MetaPGOID, MetaPGType}
	vals := []string{strconv.FormatUint(uint64(oid), 10), PGTypeName(oid)}
	if typmod >= 0 {
		keys = append(keys, MetaPGTypmod)
		vals = append(vals, strconv.FormatInt(int64(typmod), 10))
	}
	return arrow.Field{Name: name, Type: ArrowTypeForPG(oid, typmod), Nullable: true, Metadata: arrow.NewMetadata(keys, vals)}
}

// PGTypeOf is the PostgreSQL type (oid, typmod) that describes f to a PostgreSQL client: the
// recorded pg.oid when the column came from PostgreSQL, else the closest type for its Arrow type.
// typmod is -1 when there is none.
func PGTypeOf(f arrow.Field) (oid uint32, typmod int32) {
	if s, ok := f.Metadata.GetValue(MetaPGOID); ok {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil {
			typmod = -1
			if m, ok := f.Metadata.GetValue(MetaPGTypmod); ok {
				if v, err := strconv.ParseInt(m, 10, 32); err == nil {
					typmod = int32(v)
				}
			}
			return uint32(n), typmod
		}
	}
	return pgTypeForArrow(f)
}

func pgTypeForArrow(f arrow.Field) (uint32, int32) {
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		return pgtype.BoolOID, -1
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Uint8Type:
		return pgtype.Int2OID, -1
	case *arrow.Int32Type, *arrow.Uint16Type:
		return pgtype.Int4OID, -1
	case *arrow.Int64Type, *arrow.Uint32Type:
		return pgtype.Int8OID, -1
	case *arrow.Uint64Type:
		return pgtype.NumericOID, -1
	case *arrow.Float16Type, *arrow.Float32Type:
		return pgtype.Float4OID, -1
	case *arrow.Float64Type:
		return pgtype.Float8OID, -1
	case *arrow.Decimal128Type:
		if d, _ := f.Metadata.GetValue(MetaDuckDBType); d == "HUGEINT" {
			return pgtype.NumericOID, -1
		}
		return pgtype.NumericOID, (t.Precision<<16 | t.Scale) + 4
	case *arrow.Decimal256Type:
		return pgtype.NumericOID, -1
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		d, _ := f.Metadata.GetValue(MetaDuckDBType)
		switch d {
		case "JSON":
			return pgtype.JSONOID, -1
		case "HUGEINT", "UHUGEINT", "BIGNUM":
			return pgtype.NumericOID, -1
		case "INTERVAL": // DuckDB's intervals are written as PostgreSQL's
			return pgtype.IntervalOID, -1
		case "TIME WITH TIME ZONE", "TIMETZ":
			return pgtype.TimetzOID, -1
		case "BIT", "BITSTRING":
			return pgtype.VarbitOID, -1
		}
		if oid, ok := DuckDBArrayOID(d); ok {
			return oid, -1
		}
		return pgtype.TextOID, -1
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return pgtype.ByteaOID, -1
	case *arrow.FixedSizeBinaryType:
		if t.ByteWidth == 16 {
			if d, ok := f.Metadata.GetValue(MetaDuckDBType); !ok || d == "UUID" {
				return pgtype.UUIDOID, -1
			}
		}
		return pgtype.ByteaOID, -1
	case *arrow.Date32Type, *arrow.Date64Type:
		return pgtype.DateOID, -1
	case *arrow.Time32Type, *arrow.Time64Type:
		return pgtype.TimeOID, -1
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return pgtype.TimestamptzOID, -1
		}
		return pgtype.TimestampOID, -1
	}
	return pgtype.TextOID, -1
}
