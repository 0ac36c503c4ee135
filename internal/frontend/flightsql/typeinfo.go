package flightsql

import (
	"context"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// GetXdbcTypeInfo (JDBC's DatabaseMetaData.getTypeInfo, ODBC's SQLGetTypeInfo) lists the SQL
// types of the engine the caller's statements route to, by the names that engine's CREATE
// TABLE takes, each with its XDBC type number (java.sql.Types'), ordered by that number and
// then by how closely the type maps to it.

// xdbcType is one row of GetXdbcTypeInfo.
type xdbcType struct {
	name     string
	dataType int32 // XDBC (java.sql.Types) number
	size     int32 // column_size: the most digits or characters; 0 leaves it null
	quoted   bool  // its literals are written in quotes
	params   []string
	fixed    bool  // fixed precision and scale (money, decimal)
	scale    int32 // maximum_scale (decimal types); minimum is 0
	radix    int32 // num_prec_radix of numbers; 0 leaves it null
}

const (
	xdbcChar, xdbcNumeric, xdbcDecimal, xdbcInteger, xdbcSmallint = 1, 2, 3, 4, 5
	xdbcFloat, xdbcReal, xdbcDouble, xdbcInterval, xdbcVarchar    = 6, 7, 8, 10, 12
	xdbcDate, xdbcTime, xdbcTimestamp                             = 91, 92, 93
	xdbcLongVarchar, xdbcBinary, xdbcVarbinary, xdbcLongVarbinary = -1, -2, -3, -4
	xdbcBigint, xdbcTinyint, xdbcBit                              = -5, -6, -7
	xdbcDatetime                                                  = 9 // sql_data_type of dates and times
)

var (
	length       = []string{"length"}
	precScale    = []string{"precision", "scale"}
	xdbcPostgres = []xdbcType{
		{name: "boolean", dataType: xdbcBit, size: 1},
		{name: "bytea", dataType: xdbcBinary, quoted: true},
		{name: "bigint", dataType: xdbcBigint, size: 19, radix: 10},
		{name: "text", dataType: xdbcVarchar, quoted: true},
		{name: "character", dataType: xdbcChar, size: 10485760, quoted: true, params: length},
		{name: "numeric", dataType: xdbcNumeric, size: 1000, params: precScale, fixed: true, scale: 1000, radix: 10},
		{name: "integer", dataType: xdbcInteger, size: 10, radix: 10},
		{name: "smallint", dataType: xdbcSmallint, size: 5, radix: 10},
		{name: "real", dataType: xdbcReal, size: 8, radix: 10},
		{name: "double precision", dataType: xdbcDouble, size: 17, radix: 10},
		{name: "interval", dataType: xdbcInterval, quoted: true},
		{name: "character varying", dataType: xdbcVarchar, size: 10485760, quoted: true, params: length},
		{name: "date", dataType: xdbcDate, size: 13, quoted: true},
		{name: "time", dataType: xdbcTime, size: 15, quoted: true},
		{name: "timestamp", dataType: xdbcTimestamp, size: 29, quoted: true},
		{name: "timestamp with time zone", dataType: xdbcTimestamp, size: 35, quoted: true},
	}
	xdbcMySQL = []xdbcType{
		{name: "BIT", dataType: xdbcBit, size: 64, params: length},
		{name: "TINYINT", dataType: xdbcTinyint, size: 3, radix: 10},
		{name: "BIGINT", dataType: xdbcBigint, size: 19, radix: 10},
		{name: "LONGBLOB", dataType: xdbcLongVarbinary, size: 2147483647, quoted: true},
		{name: "BLOB", dataType: xdbcLongVarbinary, size: 65535, quoted: true},
		{name: "VARBINARY", dataType: xdbcVarbinary, size: 65535, quoted: true, params: length},
		{name: "BINARY", dataType: xdbcBinary, size: 255, quoted: true, params: length},
		{name: "LONGTEXT", dataType: xdbcLongVarchar, size: 2147483647, quoted: true},
		{name: "TEXT", dataType: xdbcLongVarchar, size: 65535, quoted: true},
		{name: "CHAR", dataType: xdbcChar, size: 255, quoted: true, params: length},
		{name: "DECIMAL", dataType: xdbcDecimal, size: 65, params: precScale, fixed: true, scale: 30, radix: 10},
		{name: "INT", dataType: xdbcInteger, size: 10, radix: 10},
		{name: "MEDIUMINT", dataType: xdbcInteger, size: 7, radix: 10},
		{name: "SMALLINT", dataType: xdbcSmallint, size: 5, radix: 10},
		{name: "FLOAT", dataType: xdbcReal, size: 12, radix: 10},
		{name: "DOUBLE", dataType: xdbcDouble, size: 22, radix: 10},
		{name: "VARCHAR", dataType: xdbcVarchar, size: 65535, quoted: true, params: length},
		{name: "DATE", dataType: xdbcDate, size: 10, quoted: true},
		{name: "TIME", dataType: xdbcTime, size: 16, quoted: true},
		{name: "DATETIME", dataType: xdbcTimestamp, size: 26, quoted: true},
		{name: "TIMESTAMP", dataType: xdbcTimestamp, size: 26, quoted: true},
	}
	xdbcDuckDB = []xdbcType{
		{name: "BOOLEAN", dataType: xdbcBit, size: 1},
		{name: "TINYINT", dataType: xdbcTinyint, size: 3, radix: 10},
		{name: "BIGINT", dataType: xdbcBigint, size: 19, radix: 10},
		{name: "BLOB", dataType: xdbcVarbinary, quoted: true},
		{name: "DECIMAL", dataType: xdbcDecimal, size: 38, params: precScale, fixed: true, scale: 38, radix: 10},
		{name: "INTEGER", dataType: xdbcInteger, size: 10, radix: 10},
		{name: "SMALLINT", dataType: xdbcSmallint, size: 5, radix: 10},
		{name: "FLOAT", dataType: xdbcReal, size: 7, radix: 10},
		{name: "DOUBLE", dataType: xdbcDouble, size: 15, radix: 10},
		{name: "INTERVAL", dataType: xdbcInterval, quoted: true},
		{name: "VARCHAR", dataType: xdbcVarchar, quoted: true},
		{name: "DATE", dataType: xdbcDate, size: 10, quoted: true},
		{name: "TIME", dataType: xdbcTime, size: 15, quoted: true},
		{name: "TIMESTAMP", dataType: xdbcTimestamp, size: 26, quoted: true},
		{name: "TIMESTAMP WITH TIME ZONE", dataType: xdbcTimestamp, size: 32, quoted: true},
	}
	xdbcTrino = []xdbcType{
		{name: "boolean", dataType: xdbcBit, size: 1},
		{name: "tinyint", dataType: xdbcTinyint, size: 3, radix: 10},
		{name: "bigint", dataType: xdbcBigint, size: 19, radix: 10},
		{name: "varbinary", dataType: xdbcVarbinary, quoted: true},
		{name: "char", dataType: xdbcChar, size: 65536, quoted: true, params: length},
		{name: "decimal", dataType: xdbcDecimal, size: 38, params: precScale, fixed: true, scale: 38, radix: 10},
		{name: "integer", dataType: xdbcInteger, size: 10, radix: 10},
		{name: "smallint", dataType: xdbcSmallint, size: 5, radix: 10},
		{name: "real", dataType: xdbcReal, size: 7, radix: 10},
		{name: "double", dataType: xdbcDouble, size: 15, radix: 10},
		{name: "varchar", dataType: xdbcVarchar, quoted: true, params: length},
		{name: "date", dataType: xdbcDate, size: 10, quoted: true},
		{name: "time", dataType: xdbcTime, size: 18, quoted: true},
		{name: "timestamp", dataType: xdbcTimestamp, size: 29, quoted: true},
		{name: "timestamp with time zone", dataType: xdbcTimestamp, size: 35, quoted: true},
	}
)

// engineKind is the kind of engine a caller's statements route to: what its SQL and its
// types are.
type engineKind int

const (
	kindTrino engineKind = iota
	kindPostgres
	kindMySQL
	kindDuckDB
)

// kindOf is the kind of engine the caller's statements route to: each kind is told by what
// only it implements (PostgreSQL's wire relay, MySQL's client collations, DuckDB's savepoints
// kept by name); any other is Trino. A backend that cannot say where it routes is asked as an
// engine itself.
func (s *Server) kindOf(ctx context.Context) engineKind {
	kinds := []struct {
		kind   engineKind
		marker func(any) bool
	}{
		{kindPostgres, func(e any) bool { _, ok := e.(engine.PGWireOpener); return ok }},
		{kindMySQL, func(e any) bool { _, ok := e.(engine.ClientCollationTaker); return ok }},
		{kindDuckDB, func(e any) bool { _, ok := e.(savepointRefuser); return ok }},
	}
	r, routes := s.backend.(interface {
		RoutesTo(q *query.Request, is func(query.Engine) bool) bool
	})
	for _, k := range kinds {
		if routes && r.RoutesTo(s.request(ctx, "SELECT 1", nil), func(e query.Engine) bool { return k.marker(e) }) {
			return k.kind
		}
		if !routes && k.marker(s.backend) {
			return k.kind
		}
	}
	return kindTrino
}

// typesOf is the type list of the engine the caller's statements route to.
func (s *Server) typesOf(ctx context.Context) []xdbcType {
	switch s.kindOf(ctx) {
	case kindPostgres:
		return xdbcPostgres
	case kindMySQL:
		return xdbcMySQL
	case kindDuckDB:
		return xdbcDuckDB
	}
	return xdbcTrino
}

func (s *Server) GetFlightInfoXdbcTypeInfo(_ context.Context, _ fsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.XdbcTypeInfo), nil
}

// DoGetXdbcTypeInfo lists the engine's types, those of one XDBC number when the client asks.
func (s *Server) DoGetXdbcTypeInfo(ctx context.Context, cmd fsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var types []xdbcType
	for _, t := range s.typesOf(ctx) {
		if cmd.GetDataType() == nil || *cmd.GetDataType() == t.dataType {
			types = append(types, t)
		}
	}
	sort.SliceStable(types, func(i, j int) bool { return types[i].dataType < types[j].dataType })
	b := array.NewRecordBuilder(s.Alloc, schema_ref.XdbcTypeInfo)
	defer b.Release()
	for _, t := range types {
		appendXdbcType(b, t)
	}
	return singleBatch(schema_ref.XdbcTypeInfo, b.NewRecordBatch())
}

// appendXdbcType appends t as one row of schema_ref.XdbcTypeInfo.
func appendXdbcType(b *array.RecordBuilder, t xdbcType) {
	str := func(i int, v string, ok bool) {
		if ok {
			b.Field(i).(*array.StringBuilder).Append(v)
		} else {
			b.Field(i).AppendNull()
		}
	}
	i32 := func(i int, v int32, ok bool) {
		if ok {
			b.Field(i).(*array.Int32Builder).Append(v)
		} else {
			b.Field(i).AppendNull()
		}
	}
	dateTime := t.dataType == xdbcDate || t.dataType == xdbcTime || t.dataType == xdbcTimestamp
	str(0, t.name, true)
	i32(1, t.dataType, true)
	i32(2, t.size, t.size > 0)
	str(3, "'", t.quoted)
	str(4, "'", t.quoted)
	params := b.Field(5).(*array.ListBuilder)
	params.Append(true)
	for _, p := range t.params {
		params.ValueBuilder().(*array.StringBuilder).Append(p)
	}
	i32(6, 1, true) // nullable: every column type may be declared NULL
	b.Field(7).(*array.BooleanBuilder).Append(t.quoted && !dateTime && t.dataType != xdbcBinary && t.dataType != xdbcVarbinary && t.dataType != xdbcLongVarbinary)
	i32(8, 3, true) // searchable: in any WHERE
	numeric := t.radix > 0
	if numeric {
		b.Field(9).(*array.BooleanBuilder).Append(false) // signed as named (MySQL's may be declared UNSIGNED)
	} else {
		b.Field(9).AppendNull()
	}
	b.Field(10).(*array.BooleanBuilder).Append(t.fixed)
	b.Field(11).(*array.BooleanBuilder).Append(false)
	str(12, t.name, true)
	i32(13, 0, t.fixed)
	i32(14, t.scale, t.fixed)
	sqlType, subcode := t.dataType, int32(0)
	switch t.dataType {
	case xdbcDate:
		sqlType, subcode = xdbcDatetime, 1
	case xdbcTime:
		sqlType, subcode = xdbcDatetime, 2
	case xdbcTimestamp:
		sqlType, subcode = xdbcDatetime, 3
	}
	i32(15, sqlType, true)
	i32(16, subcode, dateTime)
	i32(17, t.radix, numeric)
	b.Field(18).AppendNull()
}
