package trinohttp

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/trinodecl"
)

// A statement's own Trino types on an engine that gives none: PostgreSQL answers now() and
// current_timestamp as timestamptz without a precision (microseconds), where Trino's are
// timestamp(3) with time zone, and a literal timestamp '2024-01-02 03:04:05.6789' as timestamp
// where Trino's is timestamp(4). The statement goes to PostgreSQL as written; its columns are
// given the types its text declares (trinodecl), as the embedded DuckDB gives them
// (engine.MetaTrinoDeclared), and their values are cut to that precision. A column with a
// declared precision (a table's timestamptz(3), a cast's) keeps PostgreSQL's.

// withDeclared is rows with the Trino types sqlText declares for its PostgreSQL timestamp
// columns that carry no precision, and with MariaDB's integers that are Trino booleans as
// booleans (booleans.go); rows itself when there are none.
func withDeclared(rows query.Rows, schema *arrow.Schema, sqlText string) (query.Rows, *arrow.Schema) {
	pg, my, js, lit, duck := false, false, false, false, false
	for i := range schema.NumFields() { // not Fields(): a copy of them per statement
		f := schema.Field(i)
		pg = pg || undeclaredPGTimestamp(f)
		duck = duck || duckWallTime(f)
		my = my || mysqlInteger(f)
		js = js || pgJSONB(f)
		lit = lit || literalColumn(f)
	}
	if !pg && !my && !js && !lit && !duck {
		return rows, schema
	}
	fields := schema.Fields()
	changed := false
	var declared []string
	if pg || lit {
		declared = trinodecl.ItemTypes(sqlText)
	}
	if lit && len(declared) == len(fields) {
		for i, f := range fields {
			if declared[i] != "" && literalColumn(f) && literalFits(f, declared[i]) {
				fields[i].Metadata = withMeta(f.Metadata, engine.MetaTrinoDeclared, declared[i])
				changed = true
			}
		}
	}
	if js {
		if maps := trinodecl.MapItems(sqlText); len(maps) == len(fields) {
			for i, f := range fields {
				if maps[i] == "" || !pgJSONB(f) {
					continue
				}
				keys := slices.Concat(f.Metadata.Keys(), []string{engine.MetaTrinoDeclared})
				vals := slices.Concat(f.Metadata.Values(), []string{maps[i]})
				fields[i].Metadata = arrow.NewMetadata(keys, vals)
				changed = true
			}
		}
	}
	if zones := zonedItems(pg || duck, sqlText); len(zones) == len(fields) {
		for i, f := range fields {
			if zones[i].Zone == "" || !undeclaredPGTimestamp(f) && !duckWallTime(f) || f.Type.(*arrow.TimestampType).TimeZone != "" {
				continue
			}
			p := zones[i].Digits
			if p < 0 || p > 6 {
				p = 6
			}
			keys := slices.Concat(f.Metadata.Keys(), []string{engine.MetaTrinoDeclared, metaTrinoZone})
			vals := slices.Concat(f.Metadata.Values(), []string{"timestamp(" + strconv.Itoa(p) + ") with time zone", zones[i].Zone})
			fields[i].Metadata = arrow.NewMetadata(keys, vals)
			changed = true
		}
	}
	if pg && len(declared) == len(fields) {
		for i, f := range fields {
			if declared[i] == "" || !undeclaredPGTimestamp(f) || zoned(declared[i]) != (f.Type.(*arrow.TimestampType).TimeZone != "") {
				continue
			}
			keys := slices.Concat(f.Metadata.Keys(), []string{engine.MetaTrinoDeclared}) // copies: the engine's are shared
			vals := slices.Concat(f.Metadata.Values(), []string{declared[i]})
			fields[i].Metadata = arrow.NewMetadata(keys, vals)
			changed = true
		}
	}
	var booleans []int
	if my {
		booleans = booleanColumns(fields, sqlText)
		for _, i := range booleans {
			fields[i].Type = arrow.FixedWidthTypes.Boolean
		}
	}
	if !changed && len(booleans) == 0 {
		return rows, schema
	}
	md := schema.Metadata()
	s := arrow.NewSchema(fields, &md)
	return &declaredRows{Rows: rows, schema: s, booleans: booleans}, s
}

// literalColumn reports whether f is a column (PostgreSQL's, MariaDB's) without a Trino type whose
// select item, a literal, may have one the engine's says less of (trinodecl's literals.go):
// text ('x' is varchar(1), a bare NULL unknown, json '..' json; PostgreSQL's unbounded numeric
// of 1.50 decimal(3,2); MariaDB's text of uuid '..' uuid, of interval '2' day interval day to
// second), a decimal (MariaDB's 0.5 is decimal(2,1), Trino's decimal(1,1)) or a time (time
// '01:02:03.456' is time(3)).
func literalColumn(f arrow.Field) bool {
	if f.Metadata.FindKey(engine.MetaTrinoDeclared) >= 0 || f.Metadata.FindKey(engine.MetaDuckDBType) >= 0 || f.Metadata.FindKey(MetaTrinoType) >= 0 {
		return false // declared already, the embedded DuckDB's (it declares its own), a Trino engine's
	}
	if _, decimal := f.Type.(arrow.DecimalType); decimal {
		return true
	}
	switch f.Type.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW, arrow.TIME32, arrow.TIME64:
		return true
	}
	return false
}

// literalFits reports whether a literal's Trino type (trinoType) describes f's values as they
// are: text for varchar(n), unknown, json, uuid and intervals (MariaDB's are their Trino text,
// trinomy), PostgreSQL's unbounded numeric for decimal(p,s), a time for time(p).
func literalFits(f arrow.Field, trinoType string) bool {
	switch {
	case strings.HasPrefix(trinoType, "row("):
		return isJSON(f) || isString(f.Type) && f.Metadata.FindKey(metaMySQLColumn) >= 0 // trinopg's jsonb_build_array, trinomy's JSON_ARRAY
	case strings.HasPrefix(trinoType, "time("):
		return f.Type.ID() == arrow.TIME32 || f.Type.ID() == arrow.TIME64
	case strings.HasPrefix(trinoType, "decimal("):
		_, decimal := f.Type.(arrow.DecimalType)
		return isString(f.Type) && unboundedNumber(f) || decimal
	case trinoType == "unknown" || strings.HasPrefix(trinoType, "varchar(") || textTrinoTypes[trinoType]:
		return isString(f.Type)
	}
	return false
}

// withMeta is md and key = value, a copy: the engine's are shared.
func withMeta(md arrow.Metadata, key, value string) arrow.Metadata {
	return arrow.NewMetadata(slices.Concat(md.Keys(), []string{key}), slices.Concat(md.Values(), []string{value}))
}

// pgJSONB reports whether f is PostgreSQL's jsonb without a Trino type: Trino's map(...) of a
// Trino client's statement is one (trinopg's map), announced as the map its text declares
// (trinodecl.MapItems) and written as a JSON object, as Trino writes a map.
func pgJSONB(f arrow.Field) bool {
	return f.Metadata.Len() > 0 && isString(f.Type) && metaValue(f, engine.MetaPGType) == "jsonb" && metaValue(f, engine.MetaTrinoDeclared) == ""
}

// metaTrinoZone is the zone a timestamp column's values are wall times in: Trino's
// timestamp with time zone of a zoned literal or of AT TIME ZONE, which PostgreSQL computes as
// the zone's wall time (trinopg's zones.go), written with its zone.
const metaTrinoZone = "trino.zone"

// zonedItems is trinodecl.ZonedItems(sqlText) when some column is PostgreSQL's timestamp
// without a precision or DuckDB's without a zone (wall), else nil.
func zonedItems(wall bool, sqlText string) []trinodecl.Zoned {
	if !wall {
		return nil
	}
	return trinodecl.ZonedItems(sqlText)
}

// undeclaredPGTimestamp reports whether f is PostgreSQL's timestamp or timestamptz without a
// declared precision and without a Trino type already.
func undeclaredPGTimestamp(f arrow.Field) bool {
	if _, ok := f.Type.(*arrow.TimestampType); !ok || f.Metadata.Len() == 0 {
		return false
	}
	return metaValue(f, engine.MetaPGOID) != "" && metaValue(f, engine.MetaPGTypmod) == "" && metaValue(f, engine.MetaTrinoDeclared) == ""
}

// duckWallTime reports whether f is the embedded DuckDB's timestamp without a zone and without
// a Trino type: a zoned literal's or AT TIME ZONE's wall time (duckengine's trinozones.go) when
// its select item is one.
func duckWallTime(f arrow.Field) bool {
	if t, ok := f.Type.(*arrow.TimestampType); !ok || t.TimeZone != "" || f.Metadata.Len() == 0 {
		return false
	}
	return strings.HasPrefix(metaValue(f, engine.MetaDuckDBType), "TIMESTAMP") && metaValue(f, engine.MetaTrinoDeclared) == ""
}

func zoned(trinoType string) bool {
	n := len(" with time zone")
	return len(trinoType) > n && trinoType[len(trinoType)-n:] == " with time zone"
}

// declaredRows are rows whose batches carry schema: the engine's columns with their declared
// types.
type declaredRows struct {
	query.Rows
	schema   *arrow.Schema
	booleans []int // the columns given as integers that are booleans (booleans.go)
	last     arrow.RecordBatch
}

func (r *declaredRows) Schema() *arrow.Schema { return r.schema }

func (r *declaredRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	r.release()
	b, err := r.Rows.Next(ctx)
	if err != nil {
		return nil, err
	}
	cols := b.Columns()
	if len(r.booleans) > 0 {
		cols = slices.Clone(cols)
		for _, i := range r.booleans {
			cols[i] = booleansOf(cols[i])
			defer cols[i].Release()
		}
	}
	r.last = array.NewRecordBatch(r.schema, cols, b.NumRows())
	return r.last, nil
}

func (r *declaredRows) Close() error {
	r.release()
	return r.Rows.Close()
}

func (r *declaredRows) release() {
	if r.last != nil {
		r.last.Release()
		r.last = nil
	}
}
