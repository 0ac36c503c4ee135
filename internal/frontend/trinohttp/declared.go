package trinohttp

import (
	"context"
	"slices"
	"strconv"

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
	pg, my, js := false, false, false
	for _, f := range schema.Fields() {
		pg = pg || undeclaredPGTimestamp(f)
		my = my || mysqlInteger(f)
		js = js || pgJSONB(f)
	}
	if !pg && !my && !js {
		return rows, schema
	}
	fields := schema.Fields()
	changed := false
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
	if zones := zonedItems(pg, sqlText); len(zones) == len(fields) {
		for i, f := range fields {
			if zones[i].Zone == "" || !undeclaredPGTimestamp(f) || f.Type.(*arrow.TimestampType).TimeZone != "" {
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
	if declared := declaredTypes(pg, sqlText); len(declared) == len(fields) {
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

// declaredTypes is trinodecl.ItemTypes(sqlText) when some column is PostgreSQL's timestamp
// without a precision (pg), else nil.
func declaredTypes(pg bool, sqlText string) []string {
	if !pg {
		return nil
	}
	return trinodecl.ItemTypes(sqlText)
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
// without a precision (pg), else nil.
func zonedItems(pg bool, sqlText string) []trinodecl.Zoned {
	if !pg {
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
