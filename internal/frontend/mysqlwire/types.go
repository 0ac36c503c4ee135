package mysqlwire

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/mysqlcharset"
)

// Character sets sent in column definitions.
const (
	charsetBinary  = 63
	charsetUTF8MB4 = 45 // utf8mb4_general_ci
)

// MetaMySQLType is the field metadata key engines set when a column's MySQL type is finer than
// its Arrow type ("json", "year", ...); the MySQL engine sets it.
const MetaMySQLType = "queryflux.mysql_type"

// column is how one Arrow column goes out on the MySQL wire.
type column struct {
	field    *mysql.Field
	arrow    arrow.DataType
	fsp      int // fractional seconds digits for temporal types
	isNull   bool
	uuid     bool   // 16 bytes sent as the UUID's text, as MariaDB sends its UUID type
	temporal bool   // a date or timestamp (binaryYear)
	extended string // MariaDB's extended metadata of the column, for a client that asked (metadata.go)
	// fromMySQLEngine: a text column's type and length are a MySQL engine's (engineColumn),
	// its values and length in the client's character set (charset.go).
	fromMySQLEngine bool
	// toLatin1: another engine's text (UTF-8) for a latin1 client, converted as it is written
	// (charset.go).
	toLatin1 bool

	// bits: a BIT column (MariaDB's type 16), its values big-endian bytes, as MariaDB sends
	// them: bitUint from a MySQL engine's integer, bitText from a string of 0s and 1s
	// (PostgreSQL's bit(n), DuckDB's BIT).
	bits uint8

	// charLength: the column's length is a declared count of characters, 4 bytes each
	// (utf8mb4's), which a client in another character set counts in its own.
	charLength bool

	// wholeTime is DuckDB's TIME, which has six digits and no precision of its own: a whole
	// second goes without them, as MariaDB sends a TIME (12:34:56, where a TIME(6) column of
	// MariaDB's would say 12:34:56.000000; a fraction still has its six digits).
	wholeTime bool
}

// columnFor maps an Arrow field to a MySQL column definition.
func columnFor(f arrow.Field) column {
	mf := &mysql.Field{Name: []byte(f.Name), OrgName: []byte(f.Name), Charset: charsetBinary, Flag: mysql.BINARY_FLAG}
	if !f.Nullable {
		mf.Flag |= mysql.NOT_NULL_FLAG
	}
	mf.Flag |= keyFlags(f)
	tableColumn, origin := nameOrigin(mf, f)
	col := column{field: mf, arrow: f.Type}
	col.extended, _ = f.Metadata.GetValue(mysqlengine.ExtendedMetadataKey)
	setType := func(t uint8, length uint32) { mf.Type, mf.ColumnLength = t, length }
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		setType(mysql.MYSQL_TYPE_TINY, 1)
		if _, pg := f.Metadata.GetValue(engine.MetaPGOID); pg && origin && !tableColumn {
			setType(mysql.MYSQL_TYPE_LONG, 1) // MariaDB's comparison (7/2 > 3, a IS NULL) is an INT(1); a BOOLEAN column TINYINT(1)
		}
	case *arrow.Int8Type:
		setType(mysql.MYSQL_TYPE_TINY, 4)
	case *arrow.Uint8Type:
		setType(mysql.MYSQL_TYPE_TINY, 3)
		mf.Flag |= mysql.UNSIGNED_FLAG
	case *arrow.Int16Type:
		setType(mysql.MYSQL_TYPE_SHORT, 6)
		if metaType(f) == "year" {
			setType(mysql.MYSQL_TYPE_YEAR, 4)
			mf.Flag |= mysql.UNSIGNED_FLAG | mysql.ZEROFILL_FLAG
		}
	case *arrow.Uint16Type:
		setType(mysql.MYSQL_TYPE_SHORT, 5)
		mf.Flag |= mysql.UNSIGNED_FLAG
	case *arrow.Int32Type:
		setType(mysql.MYSQL_TYPE_LONG, 11)
	case *arrow.Uint32Type:
		setType(mysql.MYSQL_TYPE_LONG, 10)
		mf.Flag |= mysql.UNSIGNED_FLAG
	case *arrow.Int64Type:
		setType(mysql.MYSQL_TYPE_LONGLONG, 20)
	case *arrow.Uint64Type:
		setType(mysql.MYSQL_TYPE_LONGLONG, 20)
		mf.Flag |= mysql.UNSIGNED_FLAG
		if metaType(f) == "bit" { // a MySQL engine's BIT(n): its length is n
			_, n, _ := engineColumnOf(f)
			col.bitColumn(bitUint, n)
		}
	case *arrow.Float16Type, *arrow.Float32Type:
		setType(mysql.MYSQL_TYPE_FLOAT, 12)
		mf.Decimal = 31 // "not fixed"
	case *arrow.Float64Type:
		setType(mysql.MYSQL_TYPE_DOUBLE, 22)
		mf.Decimal = 31
	case arrow.DecimalType:
		setType(mysql.MYSQL_TYPE_NEWDECIMAL, decimalLength(t))
		mf.Decimal = uint8(t.GetScale())
	case *arrow.Date32Type, *arrow.Date64Type:
		setType(mysql.MYSQL_TYPE_DATE, 10)
		col.temporal = true
	case *arrow.TimestampType:
		col.fsp, col.temporal = unitDigits(t.Unit), true
		// DuckDB's seconds and milliseconds come as microseconds: their type says the digits
		// (a MySQL client's DATETIME is a TIMESTAMP_S, NOW() one too, as MariaDB's has none).
		switch d, _ := f.Metadata.GetValue(engine.MetaDuckDBType); d {
		case "TIMESTAMP_S":
			col.fsp = 0
		case "TIMESTAMP_MS":
			col.fsp = 3
		}
		if n, ok := pgFractionDigits(f); ok {
			col.fsp = n
		}
		if t.TimeZone != "" {
			setType(mysql.MYSQL_TYPE_TIMESTAMP, uint32(19+fspLen(col.fsp)))
		} else {
			setType(mysql.MYSQL_TYPE_DATETIME, uint32(19+fspLen(col.fsp)))
		}
		mf.Decimal = uint8(col.fsp)
	case *arrow.Time32Type:
		col.fsp = unitDigits(t.Unit)
		setType(mysql.MYSQL_TYPE_TIME, uint32(10+fspLen(col.fsp)))
		mf.Decimal = uint8(col.fsp)
	case *arrow.Time64Type:
		col.fsp = unitDigits(t.Unit)
		d, _ := f.Metadata.GetValue(engine.MetaDuckDBType)
		col.wholeTime = d == "TIME"
		if n, ok := pgFractionDigits(f); ok {
			col.fsp = n
		}
		setType(mysql.MYSQL_TYPE_TIME, uint32(10+fspLen(col.fsp)))
		mf.Decimal = uint8(col.fsp)
	case *arrow.DurationType:
		col.fsp = unitDigits(t.Unit)
		setType(mysql.MYSQL_TYPE_TIME, uint32(10+fspLen(col.fsp)))
		mf.Decimal = uint8(col.fsp)
	case *arrow.NullType:
		setType(mysql.MYSQL_TYPE_NULL, 0)
		col.isNull = true
	case *arrow.FixedSizeBinaryType:
		setType(mysql.MYSQL_TYPE_BLOB, 1<<24-1)
		if isUUID(f) { // MariaDB's UUID column definition
			setType(mysql.MYSQL_TYPE_STRING, 36*4)
			mf.Charset, mf.Flag = charsetUTF8MB4, mf.Flag|mysql.UNSIGNED_FLAG
			col.uuid = true
		}
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		setType(mysql.MYSQL_TYPE_BLOB, 1<<24-1)
		col.engineColumn(f)
		if metaType(f) == "geometry" {
			// As MariaDB describes a spatial column (its values are its WKB with the SRID
			// before it, as they came): mysql2 reads a POINT as {x, y} by this type.
			setType(mysql.MYSQL_TYPE_GEOMETRY, 1<<32-1)
			mf.Flag |= mysql.BLOB_FLAG
		}
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		mf.Charset, mf.Flag = charsetUTF8MB4, mf.Flag&^mysql.BINARY_FLAG
		switch {
		case metaType(f) == "json" || isJSON(f):
			// MySQL's JSON type, as MySQL (whose 8.0.11 the frontend announces) describes
			// it: mysql2 parses its values, as it parses MariaDB's JSON (a LONGTEXT marked
			// JSON in MariaDB's extended metadata, which this frontend does not send); the
			// other clients read it as text, as they read MariaDB's.
			setType(mysql.MYSQL_TYPE_JSON, 1<<32-1)
		case isBitText(f):
			col.bitColumn(bitText, bitLength(f))
		case isNumericText(f): // a decimal of any precision, as text (what DECIMAL is on the wire)
			setType(mysql.MYSQL_TYPE_NEWDECIMAL, 65+2)
			mf.Charset, mf.Decimal, mf.Flag = charsetBinary, 30, mf.Flag|mysql.BINARY_FLAG
		default:
			setType(mysql.MYSQL_TYPE_VAR_STRING, (1<<24-1)*4)
			col.engineColumn(f)
			if tableColumn {
				col.pgDeclaredText(f)
			}
		}
		if origin && !tableColumn && mf.Charset == charsetUTF8MB4 && mf.Type != mysql.MYSQL_TYPE_JSON {
			mf.Decimal = 39 // MariaDB's of a string expression ("not fixed", as a DOUBLE's 31)
		}
	default: // lists, structs, maps, ...: their Arrow text form
		mf.Charset, mf.Flag = charsetUTF8MB4, mf.Flag&^mysql.BINARY_FLAG
		setType(mysql.MYSQL_TYPE_VAR_STRING, (1<<24-1)*4)
	}
	if arrow.IsInteger(f.Type.ID()) && col.bits == 0 {
		if _, n, ok := engineColumnOf(f); ok {
			mf.ColumnLength = n // the engine's display length
		}
	}
	if key, _ := f.Metadata.GetValue(engine.MetaColumnKey); mf.Type == mysql.MYSQL_TYPE_LONGLONG && engine.HasColumnKey(key, engine.KeyCount) {
		mf.ColumnLength = 21 // MariaDB's COUNT
	}
	if tableColumn && tableNumberTypes[mf.Type] {
		mf.Flag &^= mysql.BINARY_FLAG // as MariaDB flags a table's number (an expression's is BINARY)
	}
	return col
}

// tableNumberTypes are the types whose table columns MariaDB does not flag BINARY.
var tableNumberTypes = map[uint8]bool{mysql.MYSQL_TYPE_TINY: true, mysql.MYSQL_TYPE_SHORT: true, mysql.MYSQL_TYPE_INT24: true,
	mysql.MYSQL_TYPE_LONG: true, mysql.MYSQL_TYPE_LONGLONG: true, mysql.MYSQL_TYPE_FLOAT: true, mysql.MYSQL_TYPE_DOUBLE: true,
	mysql.MYSQL_TYPE_NEWDECIMAL: true, mysql.MYSQL_TYPE_DECIMAL: true}

// decimalLength is a DECIMAL's display length as MariaDB writes it: its digits, a sign, and a
// point only when it has a scale (clients read the precision back from it: go-sql-driver's
// DecimalSize, Connector/J's getPrecision).
func decimalLength(t arrow.DecimalType) uint32 {
	n := uint32(t.GetPrecision()) + 1
	if t.GetScale() > 0 {
		n++
	}
	return n
}

// Column definition flags go-mysql does not name (MariaDB's mysql_com.h).
const (
	multipleKeyFlag    = 8
	noDefaultValueFlag = 4096
)

// keyFlagOf is the column definition flag of each engine.MetaColumnKey word.
var keyFlagOf = map[string]uint16{
	engine.KeyNotNull: mysql.NOT_NULL_FLAG, engine.KeyPrimary: mysql.PRI_KEY_FLAG, engine.KeyUnique: mysql.UNIQUE_KEY_FLAG,
	engine.KeyMultiple: multipleKeyFlag, engine.KeyPart: mysql.PART_KEY_FLAG,
	engine.KeyAutoIncrement: mysql.AUTO_INCREMENT_FLAG, engine.KeyNoDefault: noDefaultValueFlag,
}

// keyFlags are the flags of what f's table says of it (engine.MetaColumnKey), as MariaDB
// flags a table's column: NOT NULL, its keys, AUTO_INCREMENT.
func keyFlags(f arrow.Field) uint16 {
	v, ok := f.Metadata.GetValue(engine.MetaColumnKey)
	if !ok {
		return 0
	}
	var flags uint16
	for w := range strings.FieldsSeq(v) {
		flags |= keyFlagOf[w]
	}
	return flags
}

// nameOrigin gives mf the database, table and original names of f's column where its engine
// says them (engine.OriginOf), as MariaDB's column definition has them: an expression's are
// all empty. A column whose engine says nothing keeps its name as its original name. It
// reports whether the column is a table's, and whether its engine said (known).
func nameOrigin(mf *mysql.Field, f arrow.Field) (tableColumn, known bool) {
	v, _ := f.Metadata.GetValue(engine.MetaColumnKey)
	o, ok := engine.OriginOf(v)
	if !ok {
		return false, false
	}
	mf.Schema, mf.Table, mf.OrgTable, mf.OrgName = []byte(o.DB), []byte(o.Table), []byte(o.OrgTable), []byte(o.Column)
	return o.Column != "", true
}

// pgDeclaredText gives a PostgreSQL table's text column the type and length MariaDB gives the
// column its DDL declares: VARCHAR(n) and CHAR(n) n characters (go-sql-driver's Length,
// mysql2's columnLength), TEXT a BLOB of 65535 bytes (mysql2 and Connector/J tell TEXT from
// VARCHAR by it). Lengths are utf8mb4's, 4 bytes a character (charLength).
func (col *column) pgDeclaredText(f arrow.Field) {
	oid, _ := f.Metadata.GetValue(engine.MetaPGOID)
	typmod, _ := f.Metadata.GetValue(engine.MetaPGTypmod)
	n, err := strconv.Atoi(typmod) // VARCHAR(n)'s is n+4; none without a length
	mf := col.field
	switch {
	case oid == "25":
		mf.Type, mf.ColumnLength, mf.Flag = mysql.MYSQL_TYPE_BLOB, 65535*4, mf.Flag|mysql.BLOB_FLAG
	case (oid == "1043" || oid == "1042") && err == nil && n >= 4:
		mf.ColumnLength = uint32(n-4) * 4
		if oid == "1042" {
			mf.Type = mysql.MYSQL_TYPE_STRING
		}
	default:
		return
	}
	col.charLength = true
}

// engineColumn gives a text or binary column a MySQL engine described (MetaMySQLColumn) the
// type and length the engine wrote, in the client's character set already (the engine
// connection is in it: charset.go).
func (col *column) engineColumn(f arrow.Field) {
	t, n, ok := engineColumnOf(f)
	if !ok {
		return
	}
	col.field.Type, col.field.ColumnLength, col.fromMySQLEngine = t, n, true
	if t >= mysql.MYSQL_TYPE_TINY_BLOB && t <= mysql.MYSQL_TYPE_BLOB {
		col.field.Flag |= mysql.BLOB_FLAG // as MariaDB flags a TEXT or BLOB column
	}
}

// engineColumnOf reads f's MetaMySQLColumn.
func engineColumnOf(f arrow.Field) (typ uint8, length uint32, ok bool) {
	v, ok := f.Metadata.GetValue(mysqlengine.MetaMySQLColumn)
	if !ok {
		return 0, 0, false
	}
	ts, ls, _ := strings.Cut(v, " ")
	t, err1 := strconv.ParseUint(ts, 10, 8)
	n, err2 := strconv.ParseUint(ls, 10, 32)
	return uint8(t), uint32(n), err1 == nil && err2 == nil
}

// pgFractionDigits is the precision a PostgreSQL timestamp or time column was declared with
// (TIMESTAMP(0), Django's and Rails' time(6)): its digits are the column's, as a DATETIME(n)'s
// are MariaDB's. false when it has none (six digits then).
func pgFractionDigits(f arrow.Field) (int, bool) {
	oid, _ := f.Metadata.GetValue(engine.MetaPGOID)
	typmod, ok := f.Metadata.GetValue(engine.MetaPGTypmod)
	if !ok || oid != "1114" && oid != "1184" && oid != "1083" && oid != "1266" {
		return 0, false
	}
	n, err := strconv.Atoi(typmod)
	return n, err == nil && n >= 0 && n <= 6
}

// isJSON reports a PostgreSQL json/jsonb or DuckDB JSON column.
func isJSON(f arrow.Field) bool {
	if d, ok := f.Metadata.GetValue(engine.MetaDuckDBType); ok {
		return d == "JSON"
	}
	oid, _ := f.Metadata.GetValue(engine.MetaPGOID)
	return oid == "114" || oid == "3802"
}

// isNumericText reports a number carried as text: PostgreSQL's numeric without a precision,
// DuckDB's UHUGEINT and BIGNUM.
func isNumericText(f arrow.Field) bool {
	if d, ok := f.Metadata.GetValue(engine.MetaDuckDBType); ok {
		return d == "UHUGEINT" || d == "BIGNUM"
	}
	oid, _ := f.Metadata.GetValue(engine.MetaPGOID)
	return oid == "1700"
}

// How a BIT column's values come (column.bits).
const (
	bitUint = 1 + iota
	bitText
)

// bitColumn makes col a BIT(n) column as MariaDB describes one: binary, UNSIGNED (length 64
// when its engine says none).
func (col *column) bitColumn(how uint8, n uint32) {
	mf := col.field
	if n == 0 || n > 64 {
		n = 64
	}
	mf.Type, mf.ColumnLength, mf.Charset = mysql.MYSQL_TYPE_BIT, n, charsetBinary
	mf.Flag = mf.Flag&^mysql.BINARY_FLAG | mysql.UNSIGNED_FLAG
	col.bits = how
}

// isBitText reports a bit string as text: PostgreSQL's bit(n) and bit varying, DuckDB's BIT.
func isBitText(f arrow.Field) bool {
	if d, ok := f.Metadata.GetValue(engine.MetaDuckDBType); ok {
		return d == "BIT"
	}
	oid, _ := f.Metadata.GetValue(engine.MetaPGOID)
	return oid == "1560" || oid == "1562"
}

// bitLength is a PostgreSQL bit(n)'s n (its typmod); 0 when unknown.
func bitLength(f arrow.Field) uint32 {
	typmod, _ := f.Metadata.GetValue(engine.MetaPGTypmod)
	n, err := strconv.ParseUint(typmod, 10, 32)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// appendBits appends a BIT(n) value as MariaDB sends it: (n+7)/8 bytes, big-endian. A bit
// string longer than n keeps its last n bits, as MariaDB stores a value too long for its
// column (which it refuses in strict mode).
func appendBits(b []byte, col *column, a arrow.Array, i int) []byte {
	var v uint64
	switch a := a.(type) {
	case *array.Uint64:
		v = a.Value(i)
	default:
		for _, c := range []byte(textAt(a, i)) {
			v = v<<1 | uint64(c&1)
		}
	}
	for k := (int(col.field.ColumnLength)+7)/8 - 1; k >= 0; k-- {
		b = append(b, byte(v>>(8*k)))
	}
	return b
}

// isUUID reports 16 bytes that are a UUID: PostgreSQL's or DuckDB's, or the engines' UUIDType
// without another source type.
func isUUID(f arrow.Field) bool {
	if t, ok := f.Type.(*arrow.FixedSizeBinaryType); !ok || t.ByteWidth != 16 {
		return false
	}
	if d, ok := f.Metadata.GetValue(engine.MetaDuckDBType); ok {
		return d == "UUID"
	}
	if oid, ok := f.Metadata.GetValue(engine.MetaPGOID); ok {
		return oid == "2950"
	}
	return f.Metadata.FindKey(MetaMySQLType) < 0
}

func metaType(f arrow.Field) string {
	if i := f.Metadata.FindKey(MetaMySQLType); i >= 0 {
		return f.Metadata.Values()[i]
	}
	return ""
}

// unitDigits is the fractional-second digits MySQL can show for unit (at most 6).
func unitDigits(u arrow.TimeUnit) int {
	switch u {
	case arrow.Second:
		return 0
	case arrow.Millisecond:
		return 3
	default:
		return 6
	}
}

func fspLen(fsp int) int {
	if fsp == 0 {
		return 0
	}
	return fsp + 1
}

// temporal turns a temporal Arrow value into a time in UTC (timestamps and dates) or a
// duration since midnight (times of day and durations).
func timestampAt(a arrow.Array, i int) time.Time {
	switch a := a.(type) {
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC()
	case *array.Date32:
		return a.Value(i).ToTime().UTC()
	case *array.Date64:
		return a.Value(i).ToTime().UTC()
	}
	panic("mysqlwire: timestampAt on " + a.DataType().String())
}

func durationAt(a arrow.Array, i int) time.Duration {
	switch a := a.(type) {
	case *array.Time32:
		return time.Duration(a.Value(i)) * a.DataType().(*arrow.Time32Type).Unit.Multiplier()
	case *array.Time64:
		return time.Duration(a.Value(i)) * a.DataType().(*arrow.Time64Type).Unit.Multiplier()
	case *array.Duration:
		return time.Duration(a.Value(i)) * a.DataType().(*arrow.DurationType).Unit.Multiplier()
	}
	panic("mysqlwire: durationAt on " + a.DataType().String())
}

func formatFraction(b []byte, nanos int, fsp int) []byte {
	if fsp == 0 {
		return b
	}
	frac := strconv.Itoa(1_000_000_000 + nanos)[1 : 1+fsp]
	return append(append(b, '.'), frac...)
}

func formatDuration(b []byte, d time.Duration, fsp int) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	h := int64(d / time.Hour)
	m := int64(d/time.Minute) % 60
	s := int64(d/time.Second) % 60
	if h < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, h, 10)
	b = append(b, ':', byte('0'+m/10), byte('0'+m%10), ':', byte('0'+s/10), byte('0'+s%10))
	return formatFraction(b, int(d%time.Second), fsp)
}

// appendText appends row i of a in the text protocol (a length-encoded string, or 0xfb for NULL).
func appendText(b []byte, col *column, a arrow.Array, i int) []byte {
	if col.isNull || a.IsNull(i) {
		return append(b, 0xfb)
	}
	var tmp [64]byte
	v := textValue(tmp[:0], col, a, i)
	b = append(b, mysql.PutLengthEncodedInt(uint64(len(v)))...)
	return append(b, v...)
}

func textValue(b []byte, col *column, a arrow.Array, i int) []byte {
	if col.bits != 0 {
		return appendBits(b, col, a, i)
	}
	switch a := a.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return append(b, '1')
		}
		return append(b, '0')
	case *array.Int8:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(b, a.Value(i), 10)
	case *array.Float16:
		return strconv.AppendFloat(b, float64(a.Value(i).Float32()), 'g', -1, 32)
	case *array.Float32:
		return strconv.AppendFloat(b, float64(a.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.AppendFloat(b, a.Value(i), 'g', -1, 64)
	case *array.String:
		return appendString(b, col, a.Value(i))
	case *array.LargeString:
		return appendString(b, col, a.Value(i))
	case *array.StringView:
		return appendString(b, col, a.Value(i))
	case *array.Binary:
		return append(b, a.Value(i)...)
	case *array.LargeBinary:
		return append(b, a.Value(i)...)
	case *array.BinaryView:
		return append(b, a.Value(i)...)
	case *array.FixedSizeBinary:
		if col.uuid {
			return appendUUID(b, a.Value(i))
		}
		return append(b, a.Value(i)...)
	case *array.Date32, *array.Date64:
		return timestampAt(a, i).AppendFormat(b, time.DateOnly)
	case *array.Timestamp:
		t := timestampAt(a, i)
		return formatFraction(t.AppendFormat(b, time.DateTime), t.Nanosecond(), col.fsp)
	case *array.Time32, *array.Time64, *array.Duration:
		d, fsp := durationAt(a, i), col.fsp
		if col.wholeTime && d%time.Second == 0 {
			fsp = 0
		}
		return formatDuration(b, d, fsp)
	default: // decimals, nested types: Arrow's own text form
		if d, ok := engine.DecimalText(a, i); ok {
			return append(b, d...)
		}
		return append(b, a.ValueStr(i)...)
	}
}

// appendString appends a text value, in the client's latin1 where col says (toLatin1).
func appendString(b []byte, col *column, v string) []byte {
	if col.toLatin1 {
		return mysqlcharset.AppendLatin1(b, v)
	}
	return append(b, v...)
}

// appendBinary appends row i of a in the binary protocol (the caller sets the NULL bitmap).
func appendBinary(b []byte, col *column, a arrow.Array, i int) []byte {
	le := binary.LittleEndian
	if col.bits != 0 { // a length-encoded string, as MariaDB sends a BIT
		var tmp [8]byte
		v := appendBits(tmp[:0], col, a, i)
		return append(append(b, mysql.PutLengthEncodedInt(uint64(len(v)))...), v...)
	}
	switch a := a.(type) {
	case *array.Boolean:
		v := byte(0)
		if a.Value(i) {
			v = 1
		}
		if col.field.Type == mysql.MYSQL_TYPE_LONG {
			return append(b, v, 0, 0, 0)
		}
		return append(b, v)
	case *array.Int8:
		return append(b, byte(a.Value(i)))
	case *array.Uint8:
		return append(b, a.Value(i))
	case *array.Int16:
		return le.AppendUint16(b, uint16(a.Value(i)))
	case *array.Uint16:
		return le.AppendUint16(b, a.Value(i))
	case *array.Int32:
		return le.AppendUint32(b, uint32(a.Value(i)))
	case *array.Uint32:
		return le.AppendUint32(b, a.Value(i))
	case *array.Int64:
		return le.AppendUint64(b, uint64(a.Value(i)))
	case *array.Uint64:
		return le.AppendUint64(b, a.Value(i))
	case *array.Float16:
		return le.AppendUint32(b, math.Float32bits(a.Value(i).Float32()))
	case *array.Float32:
		return le.AppendUint32(b, math.Float32bits(a.Value(i)))
	case *array.Float64:
		return le.AppendUint64(b, math.Float64bits(a.Value(i)))
	case *array.Date32, *array.Date64:
		t := timestampAt(a, i)
		return appendBinaryDateTime(b, t, false)
	case *array.Timestamp:
		return appendBinaryDateTime(b, timestampAt(a, i), true)
	case *array.Time32, *array.Time64, *array.Duration:
		return appendBinaryTime(b, durationAt(a, i))
	default: // strings, blobs, decimals, nested: a length-encoded string
		var tmp [64]byte
		v := textValue(tmp[:0], col, a, i)
		b = append(b, mysql.PutLengthEncodedInt(uint64(len(v)))...)
		return append(b, v...)
	}
}

func appendBinaryDateTime(b []byte, t time.Time, withTime bool) []byte {
	le := binary.LittleEndian
	micro := t.Nanosecond() / 1000
	switch {
	case withTime && micro != 0:
		b = append(b, 11)
	case withTime && (t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0):
		b = append(b, 7)
	default:
		b = append(b, 4)
	}
	n := b[len(b)-1]
	b = le.AppendUint16(b, uint16(t.Year()))
	b = append(b, byte(t.Month()), byte(t.Day()))
	if n >= 7 {
		b = append(b, byte(t.Hour()), byte(t.Minute()), byte(t.Second()))
	}
	if n == 11 {
		b = le.AppendUint32(b, uint32(micro))
	}
	return b
}

func appendBinaryTime(b []byte, d time.Duration) []byte {
	if d == 0 {
		return append(b, 0)
	}
	neg := byte(0)
	if d < 0 {
		neg, d = 1, -d
	}
	days := uint32(d / (24 * time.Hour))
	h := byte(int64(d/time.Hour) % 24)
	m := byte(int64(d/time.Minute) % 60)
	s := byte(int64(d/time.Second) % 60)
	micro := uint32(d%time.Second) / 1000
	if micro != 0 {
		b = append(b, 12, neg)
	} else {
		b = append(b, 8, neg)
	}
	b = binary.LittleEndian.AppendUint32(b, days)
	b = append(b, h, m, s)
	if micro != 0 {
		b = binary.LittleEndian.AppendUint32(b, micro)
	}
	return b
}

// appendUUID appends 16 bytes as a UUID's text, 8-4-4-4-12 lowercase hex digits.
func appendUUID(b, u []byte) []byte {
	const hexDigits = "0123456789abcdef"
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&15])
	}
	return b
}
