package mysqlengine

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/engine"
)

// MetaMySQLType is the field metadata key holding the MySQL column type name ("json", "bit",
// "year", "enum", ...) where the Arrow type alone loses it.
const MetaMySQLType = "queryflux.mysql_type"

const binaryCharset = 63

// MetaMySQLColumn is the field metadata key holding a text, binary or integer column's MySQL
// type code and length as the server described it ("253 80": a VARCHAR(20) in utf8mb4): the
// Arrow type keeps neither, and a MySQL client reads them (Connector/J's VARCHAR or MEDIUMTEXT
// is the length; a latin1 client's VARCHAR(20) is 20 long; COUNT(*) is 21).
const MetaMySQLColumn = "queryflux.mysql_column"

// decimalPrecision recovers a DECIMAL's precision from its display length: MySQL reports
// precision + 1 for the point (when scale > 0) + 1 for the sign (when signed).
func decimalPrecision(f *mysql.Field) int32 {
	p := int32(f.ColumnLength)
	if f.Decimal > 0 {
		p--
	}
	if f.Flag&mysql.UNSIGNED_FLAG == 0 {
		p--
	}
	if p < int32(f.Decimal) || p < 1 {
		p = int32(f.Decimal) + 1
	}
	return p
}

// ArrowField maps one MySQL result column to an Arrow field.
func ArrowField(f *mysql.Field) arrow.Field {
	unsigned := f.Flag&mysql.UNSIGNED_FLAG != 0
	binaryCS := f.Charset == binaryCharset
	name := string(f.Name)
	field := arrow.Field{Name: name, Nullable: true}
	meta := ""
	switch f.Type {
	case mysql.MYSQL_TYPE_TINY:
		field.Type = pick(unsigned, arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int8)
	case mysql.MYSQL_TYPE_SHORT:
		field.Type = pick(unsigned, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int16)
	case mysql.MYSQL_TYPE_YEAR:
		field.Type, meta = arrow.PrimitiveTypes.Int16, "year"
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG:
		field.Type = pick(unsigned, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Int32)
	case mysql.MYSQL_TYPE_LONGLONG:
		field.Type = pick(unsigned, arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Int64)
	case mysql.MYSQL_TYPE_FLOAT:
		field.Type = arrow.PrimitiveTypes.Float32
	case mysql.MYSQL_TYPE_DOUBLE:
		field.Type = arrow.PrimitiveTypes.Float64
	case mysql.MYSQL_TYPE_DECIMAL, mysql.MYSQL_TYPE_NEWDECIMAL:
		p, s := decimalPrecision(f), int32(f.Decimal)
		if p <= 38 {
			field.Type = &arrow.Decimal128Type{Precision: p, Scale: s}
		} else {
			field.Type = &arrow.Decimal256Type{Precision: min(p, 76), Scale: s}
		}
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		field.Type = arrow.FixedWidthTypes.Date32
	case mysql.MYSQL_TYPE_DATETIME:
		field.Type = &arrow.TimestampType{Unit: fspUnit(f.Decimal)}
	case mysql.MYSQL_TYPE_TIMESTAMP:
		// The session's time_zone is +00:00 (see Engine.dial), so values are UTC.
		field.Type = &arrow.TimestampType{Unit: fspUnit(f.Decimal), TimeZone: "UTC"}
	case mysql.MYSQL_TYPE_TIME:
		switch unit := fspUnit(f.Decimal); unit {
		case arrow.Microsecond:
			field.Type = &arrow.Time64Type{Unit: unit}
		default:
			field.Type = &arrow.Time32Type{Unit: unit}
		}
	case mysql.MYSQL_TYPE_NULL:
		field.Type = arrow.Null
	case mysql.MYSQL_TYPE_BIT:
		field.Type, meta = arrow.PrimitiveTypes.Uint64, "bit"
	case mysql.MYSQL_TYPE_JSON:
		field.Type, meta = arrow.BinaryTypes.String, "json"
	case mysql.MYSQL_TYPE_ENUM:
		field.Type, meta = arrow.BinaryTypes.String, "enum"
	case mysql.MYSQL_TYPE_SET:
		field.Type, meta = arrow.BinaryTypes.String, "set"
	case mysql.MYSQL_TYPE_GEOMETRY:
		field.Type, meta = arrow.BinaryTypes.Binary, "geometry"
	default: // VARCHAR, VAR_STRING, STRING, *BLOB, VECTOR, ...
		if binaryCS {
			field.Type = arrow.BinaryTypes.Binary
		} else {
			field.Type = arrow.BinaryTypes.String
		}
		field.Metadata = columnMetadata(f)
	}
	switch f.Type {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG,
		mysql.MYSQL_TYPE_BIT:
		field.Metadata = columnMetadata(f) // an integer's display length (COUNT(*)'s 21, a BIGINT's 20), a BIT's bits
	}
	if meta != "" {
		field.Metadata = arrow.NewMetadata(slices.Concat(field.Metadata.Keys(), []string{MetaMySQLType}),
			slices.Concat(field.Metadata.Values(), []string{meta}))
	}
	// The column's origin as MariaDB named it (an expression's empty), for the frontend's
	// column definition.
	key := engine.WithOrigin(columnKey(f.Flag), engine.ColumnOrigin{DB: string(f.Schema), Table: string(f.Table),
		OrgTable: string(f.OrgTable), Column: string(f.OrgName)})
	field.Metadata = arrow.NewMetadata(slices.Concat(field.Metadata.Keys(), []string{engine.MetaColumnKey}),
		slices.Concat(field.Metadata.Values(), []string{key}))
	return field
}

// keyFlags are the column definition flags engine.MetaColumnKey's words stand for, in its
// order (MariaDB's mysql_com.h: MULTIPLE_KEY 8 and NO_DEFAULT_VALUE 4096 go-mysql does not name).
var keyFlags = []uint16{mysql.NOT_NULL_FLAG, mysql.PRI_KEY_FLAG, mysql.UNIQUE_KEY_FLAG, 8, mysql.PART_KEY_FLAG,
	mysql.AUTO_INCREMENT_FLAG, 4096}

// columnKey is the engine.MetaColumnKey value of a column MariaDB flagged so, "" for none: the
// Arrow path's client gets the flags a relayed one does.
func columnKey(flag uint16) string {
	var words []string
	for i, bit := range keyFlags {
		if flag&bit != 0 {
			words = append(words, engine.ColumnKeyWords[i])
		}
	}
	return strings.Join(words, " ")
}

// columnMetadata is f's type and length under MetaMySQLColumn.
func columnMetadata(f *mysql.Field) arrow.Metadata {
	column := strconv.Itoa(int(f.Type)) + " " + strconv.FormatUint(uint64(f.ColumnLength), 10)
	return arrow.NewMetadata([]string{MetaMySQLColumn}, []string{column})
}

// fspUnit is the Arrow time unit that holds a temporal column's fractional digits exactly
// (the digits a client sees are kept: DATETIME shows no fraction, DATETIME(3) three).
func fspUnit(decimals uint8) arrow.TimeUnit {
	switch {
	case decimals == 0:
		return arrow.Second
	case decimals <= 3:
		return arrow.Millisecond
	default: // 4..6, and 31 ("not fixed") from expressions
		return arrow.Microsecond
	}
}

func pick(cond bool, a, b arrow.DataType) arrow.DataType {
	if cond {
		return a
	}
	return b
}

// appendValue appends one MySQL value to b, whose type came from ArrowField(f).
func appendValue(b array.Builder, f *mysql.Field, v *mysql.FieldValue) error {
	if v.Type == mysql.FieldValueTypeNull {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.NullBuilder:
		b.AppendNull()
	case *array.Int8Builder:
		b.Append(int8(asInt(v)))
	case *array.Int16Builder:
		b.Append(int16(asInt(v)))
	case *array.Int32Builder:
		b.Append(int32(asInt(v)))
	case *array.Int64Builder:
		b.Append(asInt(v))
	case *array.Uint8Builder:
		b.Append(uint8(asUint(v)))
	case *array.Uint16Builder:
		b.Append(uint16(asUint(v)))
	case *array.Uint32Builder:
		b.Append(uint32(asUint(v)))
	case *array.Uint64Builder:
		if f.Type == mysql.MYSQL_TYPE_BIT {
			b.Append(bitValue(v.AsString()))
		} else {
			b.Append(asUint(v))
		}
	case *array.Float32Builder:
		b.Append(float32(asFloat(v)))
	case *array.Float64Builder:
		b.Append(asFloat(v))
	case *array.Decimal128Builder:
		t := b.Type().(*arrow.Decimal128Type)
		n, err := decimal128.FromString(string(v.AsString()), t.Precision, t.Scale)
		if err != nil {
			return fmt.Errorf("column %q: decimal %q: %w", f.Name, v.AsString(), err)
		}
		b.Append(n)
	case *array.Decimal256Builder:
		t := b.Type().(*arrow.Decimal256Type)
		n, err := decimal256.FromString(string(v.AsString()), t.Precision, t.Scale)
		if err != nil {
			return fmt.Errorf("column %q: decimal %q: %w", f.Name, v.AsString(), err)
		}
		b.Append(n)
	case *array.StringBuilder:
		b.Append(string(v.AsString()))
	case *array.BinaryBuilder:
		b.Append(append([]byte(nil), v.AsString()...))
	case *array.Date32Builder:
		s := string(v.AsString())
		if isZeroDate(s) {
			b.AppendNull() // MySQL's zero date has no calendar meaning
			return nil
		}
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return fmt.Errorf("column %q: date %q: %w", f.Name, s, err)
		}
		b.Append(arrow.Date32FromTime(t))
	case *array.TimestampBuilder:
		s := string(v.AsString())
		if isZeroDate(s) {
			b.AppendNull()
			return nil
		}
		t, err := parseDateTime(s)
		if err != nil {
			return fmt.Errorf("column %q: datetime %q: %w", f.Name, s, err)
		}
		unit := b.Type().(*arrow.TimestampType).Unit
		b.Append(arrow.Timestamp(t.UnixNano() / int64(unit.Multiplier())))
	case *array.Time32Builder:
		us, err := parseTimeOfDay(string(v.AsString()))
		if err != nil {
			return fmt.Errorf("column %q: %w", f.Name, err)
		}
		unit := b.Type().(*arrow.Time32Type).Unit
		b.Append(arrow.Time32(us * 1000 / int64(unit.Multiplier())))
	case *array.Time64Builder:
		us, err := parseTimeOfDay(string(v.AsString()))
		if err != nil {
			return fmt.Errorf("column %q: %w", f.Name, err)
		}
		b.Append(arrow.Time64(us))
	default:
		panic(fmt.Sprintf("mysqlengine: no appender for builder %T (column %q type %d)", b, f.Name, f.Type))
	}
	return nil
}

// asInt reads an integer value; text-protocol values are already parsed by go-mysql.
func asInt(v *mysql.FieldValue) int64 {
	switch v.Type {
	case mysql.FieldValueTypeSigned:
		return v.AsInt64()
	case mysql.FieldValueTypeUnsigned:
		return int64(v.AsUint64())
	case mysql.FieldValueTypeFloat:
		return int64(v.AsFloat64())
	default:
		n, _ := strconv.ParseInt(string(v.AsString()), 10, 64)
		return n
	}
}

func asUint(v *mysql.FieldValue) uint64 {
	switch v.Type {
	case mysql.FieldValueTypeSigned:
		return uint64(v.AsInt64())
	case mysql.FieldValueTypeUnsigned:
		return v.AsUint64()
	case mysql.FieldValueTypeFloat:
		return uint64(v.AsFloat64())
	default:
		n, _ := strconv.ParseUint(string(v.AsString()), 10, 64)
		return n
	}
}

func asFloat(v *mysql.FieldValue) float64 {
	switch v.Type {
	case mysql.FieldValueTypeFloat:
		return v.AsFloat64()
	case mysql.FieldValueTypeSigned:
		return float64(v.AsInt64())
	case mysql.FieldValueTypeUnsigned:
		return float64(v.AsUint64())
	default:
		f, _ := strconv.ParseFloat(string(v.AsString()), 64)
		return f
	}
}

// bitValue reads a BIT(n) value, sent as big-endian bytes.
func bitValue(b []byte) uint64 {
	var buf [8]byte
	if len(b) > 8 {
		b = b[len(b)-8:]
	}
	copy(buf[8-len(b):], b)
	return binary.BigEndian.Uint64(buf[:])
}

func isZeroDate(s string) bool { return strings.HasPrefix(s, "0000-00-00") }

func parseDateTime(s string) (time.Time, error) {
	if len(s) == len(time.DateOnly) {
		return time.Parse(time.DateOnly, s)
	}
	return time.Parse("2006-01-02 15:04:05.999999999", s)
}

// parseTimeOfDay reads a MySQL TIME ("[-]HHH:MM:SS[.ffffff]") as microseconds since midnight.
// TIME can hold -838:59:59..838:59:59; Arrow's time64 only a time of day, so others are an error.
func parseTimeOfDay(s string) (int64, error) {
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("TIME %q is negative: only times of day (00:00:00..23:59:59) map to Arrow time64", s)
	}
	hms, frac, _ := strings.Cut(s, ".")
	parts := strings.Split(hms, ":")
	if len(parts) != 3 {
		return 0, fmt.Errorf("TIME %q: want HH:MM:SS", s)
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("TIME %q: %w", s, err)
		}
		n[i] = v
	}
	if n[0] > 23 {
		return 0, fmt.Errorf("TIME %q is past 24h: only times of day map to Arrow time64", s)
	}
	us := ((n[0]*60+n[1])*60 + n[2]) * 1_000_000
	if frac != "" {
		frac = (frac + "000000")[:6]
		f, err := strconv.ParseInt(frac, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("TIME %q: %w", s, err)
		}
		us += f
	}
	return us, nil
}
