package duckengine

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/engine"
)

// fieldFor maps a DuckDB type name to an Arrow field carrying the name as duckdb.type.
func fieldFor(name, dbType string) arrow.Field {
	return engine.DuckDBField(name, dbType, arrowType(dbType))
}

// arrowType is the Arrow type of a DuckDB column: engine.DuckDBType's, else its text form
// (INTERVAL, ENUM, LIST, STRUCT, MAP, ARRAY, TIMETZ...).
func arrowType(dbType string) arrow.DataType {
	if dbType == "SQLNULL" {
		return arrow.Null
	}
	if t, ok := engine.DuckDBType(dbType); ok {
		return t
	}
	return arrow.BinaryTypes.String
}

// toArrowValue converts what go-duckdb returns into what engine.AppendValue accepts for t.
func toArrowValue(v any, t arrow.DataType) any {
	switch x := v.(type) {
	case nil:
		return nil
	case duckdb.Decimal:
		return x.String()
	case *big.Int:
		if _, isDecimal := t.(*arrow.Decimal128Type); isDecimal {
			return x
		}
		return x.String()
	case duckdb.UUID:
		return x[:]
	case *duckdb.UUID:
		return x[:]
	case duckdb.Interval:
		return intervalText(x)
	case time.Time:
		if _, isText := t.(*arrow.StringType); isText {
			return textOf(v)
		}
		return negInfinity(x, t)
	case string, []byte, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64:
		if _, isText := t.(*arrow.StringType); isText {
			return textOf(v)
		}
		return v
	}
	return textOf(v)
}

// negInfinity is v, or the engine's -infinity (engine.DateNegInfinity, TimestampNegInfinity:
// the type's smallest value) when v is DuckDB's, which is one above the smallest (-2^31+1
// days, -2^63+1 microseconds). DuckDB's infinity is already the largest value.
func negInfinity(v time.Time, t arrow.DataType) time.Time {
	switch t.(type) {
	case *arrow.Date32Type:
		if arrow.Date32FromTime(v) == -math.MaxInt32 {
			return engine.DateNegInfinity.ToTime()
		}
	case *arrow.TimestampType:
		if v.UnixMicro() == -math.MaxInt64 {
			return time.UnixMicro(int64(engine.TimestampNegInfinity))
		}
	}
	return v
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case time.Time:
		return x.Format("15:04:05.999999-07")
	}
	return compositeText(v, false)
}

// compositeText writes lists, structs and maps the way DuckDB prints them ([1, 2], {'a': 1},
// {'k'=1}), with every string in single quotes (a quote doubled) so the text reads back unambiguously
// (internal/frontend/structured gives Trino and Flight SQL clients the structure back).
func compositeText(v any, quoted bool) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		if quoted {
			return quote(x)
		}
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = compositeText(e, true)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = quote(k) + ": " + compositeText(x[k], true)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case duckdb.OrderedMap: // in DuckDB's order, as it prints a map
		keys, values := x.Keys(), x.Values()
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = compositeText(k, true) + "=" + compositeText(values[i], true)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case duckdb.Map:
		parts := make([]string, 0, len(x))
		for k, e := range x {
			parts = append(parts, compositeText(k, true)+"="+compositeText(e, true))
		}
		sort.Strings(parts)
		return "{" + strings.Join(parts, ", ") + "}"
	case time.Time:
		return elementTime(x)
	case duckdb.UUID:
		return uuidText(x[:])
	case *duckdb.UUID:
		return uuidText(x[:])
	case duckdb.Interval:
		return intervalText(x)
	case duckdb.Decimal:
		return x.String()
	case *big.Int:
		return x.String()
	case []byte:
		return quote(`\x` + hex.EncodeToString(x))
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func uuidText(b []byte) string {
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// elementTime writes a DATE, TIME or TIMESTAMP inside a composite value as DuckDB does: a time
// of day alone on 0001-01-01 (how go-duckdb hands over TIME), a date alone at midnight, DuckDB's
// infinities (the largest value, the smallest plus one) as infinity and -infinity, a year before
// 1 AD as PostgreSQL writes it (0044-03-15 BC: DuckDB writes "0044-03-15 (BC)").
func elementTime(t time.Time) string {
	t = t.UTC()
	switch us, days := t.UnixMicro(), arrow.Date32FromTime(t); {
	case us == math.MaxInt64 || days == math.MaxInt32:
		return "infinity"
	case us == -math.MaxInt64 || days == -math.MaxInt32:
		return "-infinity"
	}
	var s string
	switch {
	case t.Year() == 1 && t.YearDay() == 1:
		return t.Format("15:04:05.999999")
	case t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0:
		s = t.Format(time.DateOnly)
	default:
		s = t.Format("2006-01-02 15:04:05.999999")
	}
	if y := t.Year(); y <= 0 { // Go writes year -43 ("-0043-03-15"); PostgreSQL 44 BC
		s = fmt.Sprintf("%04d", 1-y) + s[strings.IndexByte(s[1:], '-')+1:] + " BC"
	}
	return s
}

// intervalText writes an interval as PostgreSQL does (IntervalStyle postgres, EncodeInterval):
// years, mons and days each with its sign and a plural unless exactly 1 ("-1 days"), a part
// after a negative one signed "+" ("-1 days +02:00:00"), then the time when it is not zero or
// nothing else was written, its fraction without trailing zeros.
func intervalText(iv duckdb.Interval) string {
	var b strings.Builder
	negBefore := false // the last part written was negative
	part := func(n int64, unit string) {
		if n == 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if negBefore && n > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.FormatInt(n, 10) + " " + unit)
		if n != 1 {
			b.WriteByte('s')
		}
		negBefore = n < 0
	}
	part(int64(iv.Months/12), "year")
	part(int64(iv.Months%12), "mon")
	part(int64(iv.Days), "day")
	if iv.Micros != 0 || b.Len() == 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		us := uint64(iv.Micros)
		if iv.Micros < 0 {
			b.WriteByte('-')
			us = -us // two's complement: right for the smallest int64 too
		} else if negBefore {
			b.WriteByte('+')
		}
		fmt.Fprintf(&b, "%02d:%02d:%02d", us/3600e6, us/60e6%60, us/1e6%60)
		if frac := us % 1e6; frac != 0 {
			b.WriteString(strings.TrimRight(fmt.Sprintf(".%06d", frac), "0"))
		}
	}
	return b.String()
}

// rowSource is what newStream reads: *sql.Rows of a materialized result, or a streaming one.
type rowSource interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// newStream reads rows into Arrow batches of at most engine.BatchRowsMax rows.
func newStream(rows rowSource, cols []column, kind duckdb.StmtType, closeAll func() error) *engine.Stream {
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	// go-duckdb decodes JSON columns (reported as VARCHAR) into Go values: peek at the first
	// row to tell them apart, so they keep their type and are re-encoded as JSON text.
	pending, firstErr := rows.Next(), error(nil)
	if pending {
		firstErr = rows.Scan(ptrs...)
	}
	fields := make([]arrow.Field, len(cols))
	isJSON, uuidList := make([]bool, len(cols)), make([]bool, len(cols))
	for i, c := range cols {
		uuidList[i] = strings.TrimRight(c.dbType, "[]0123456789") == "UUID" && c.dbType != "UUID"
		name := c.dbType
		if _, text := vals[i].(string); (name == "VARCHAR" || name == "JSON") && vals[i] != nil && !text {
			name, isJSON[i] = "JSON", true
		}
		fields[i] = fieldFor(c.name, name)
		if c.declared != "" {
			fields[i].Metadata = arrow.NewMetadata([]string{engine.MetaDuckDBType, engine.MetaTrinoDeclared}, []string{name, c.declared})
		}
		if c.key != "" {
			fields[i].Metadata = withColumnKey(fields[i].Metadata, c.key)
		}
		if c.pg.oid != 0 {
			fields[i].Metadata = withPgType(fields[i].Metadata, c.pg)
		}
	}
	schema := arrow.NewSchema(fields, nil)
	var count int64
	fill := func(ctx context.Context, b *engine.BatchBuilder) (bool, error) {
		for !b.Full() {
			if firstErr != nil {
				return false, wrapErr(firstErr)
			}
			if !pending {
				if !rows.Next() {
					return false, wrapErr(rows.Err())
				}
				if err := rows.Scan(ptrs...); err != nil {
					return false, wrapErr(err)
				}
			}
			pending = false
			for i, v := range vals {
				if isJSON[i] && v != nil {
					j, err := json.Marshal(v)
					if err != nil {
						return false, fmt.Errorf("duckengine: column %q: %w", fields[i].Name, err)
					}
					v = string(j)
				}
				if uuidList[i] {
					v = uuidElements(v)
				}
				if cols[i].pg.oid != 0 {
					v = pgTextFit(v, cols[i].pg) // pgvarcharfit.go
				}
				if err := b.Append(i, toArrowValue(v, fields[i].Type)); err != nil {
					return false, fmt.Errorf("duckengine: column %q: %w", fields[i].Name, err)
				}
			}
			b.EndRow()
			count++
		}
		return true, nil
	}
	tag := func() string { return dmlTagPrefix(kind) + strconv.FormatInt(count, 10) }
	return engine.NewStream(schema, fill, tag, closeAll)
}

// uuidElements marks the elements of a UUID list (UUID[], UUID[3][]) as UUIDs: go-duckdb hands
// every UUID over as 16 bytes, which compositeText would otherwise write as a blob.
func uuidElements(v any) any {
	switch x := v.(type) {
	case []byte:
		if len(x) == 16 {
			return duckdb.UUID(x)
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = uuidElements(e)
		}
		return out
	}
	return v
}
