package flightsql

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/structured"
)

// Engines hand over UUIDs as 16 bytes and JSON as text, naming the type in field metadata, and
// composite values (PostgreSQL arrays and intervals, DuckDB lists, structs, maps and intervals)
// as text. Flight SQL clients get Arrow's types for them: lists, structs, maps, month-day-nano
// intervals, time64 for times with a zone, sparse unions and decimal256
// (internal/frontend/structured), and Arrow's own extension types (arrow.uuid, arrow.json) at
// any depth, so arrow-go and ADBC decode a UUID as a UUID and a JSON column as
// JSON; the extension types' storage is the engine's.

var jsonType = func() *extensions.JSONType {
	t, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		panic("flightsql: arrow.json over utf8: " + err.Error())
	}
	return t
}()

// outType is the type values of f travel as: t itself when nothing in it changes.
func outType(f arrow.Field) arrow.DataType {
	switch t := f.Type.(type) {
	case arrow.ExtensionType:
		return t
	case *arrow.ListType:
		if e := outType(t.ElemField()); e != t.Elem() {
			ef := t.ElemField()
			ef.Type = e
			return arrow.ListOfField(ef)
		}
		return t
	case *arrow.StructType:
		fields := t.Fields()
		changed := false
		for i, sf := range fields {
			if e := outType(sf); e != sf.Type {
				fields[i].Type, changed = e, true
			}
		}
		if changed {
			return arrow.StructOf(fields...)
		}
		return t
	case *arrow.MapType:
		k, v := t.KeyField(), t.ItemField()
		kt, vt := outType(k), outType(v)
		if kt != k.Type || vt != v.Type {
			k.Type, v.Type = kt, vt
			return arrow.MapOfFields(k, v)
		}
		return t
	}
	switch {
	case engine.IsUUIDField(f):
		return extensions.NewUUIDType()
	case engine.IsJSONField(f) && f.Type.ID() == arrow.STRING:
		return jsonType
	}
	return f.Type
}

// outSchema is schema as clients see it; unchanged (the same pointer) when no field changes.
func outSchema(schema *arrow.Schema) *arrow.Schema {
	schema = structured.NewArrowConverter(schema).Schema()
	var fields []arrow.Field
	for i, f := range schema.Fields() {
		if t := outType(f); t != f.Type {
			if fields == nil {
				fields = append([]arrow.Field(nil), schema.Fields()...)
			}
			fields[i].Type = t
		}
	}
	if fields == nil {
		return schema
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md)
}

// batchConverter turns an engine's batches into batches under outSchema of their schema.
type batchConverter struct {
	conv *structured.Converter
	out  *arrow.Schema
}

func newBatchConverter(schema *arrow.Schema) *batchConverter {
	return &batchConverter{conv: structured.NewArrowConverter(schema), out: outSchema(schema)}
}

// convert is b under the out schema: text columns structured, extension types put on. The
// caller releases the result (and still owns b).
func (c *batchConverter) convert(b arrow.RecordBatch) (arrow.RecordBatch, error) {
	s, err := c.conv.Convert(b)
	if err != nil {
		return nil, err
	}
	if c.out == s.Schema() {
		return s, nil
	}
	defer s.Release()
	cols := make([]arrow.Array, s.NumCols())
	for i, col := range s.Columns() {
		if t := c.out.Field(i).Type; !arrow.TypeEqual(t, col.DataType()) {
			d := withType(t, col.Data())
			cols[i] = array.MakeFromData(d)
			d.Release()
			defer cols[i].Release()
		} else {
			cols[i] = col
		}
	}
	return array.NewRecordBatch(c.out, cols, s.NumRows()), nil
}

// withType is d's buffers under type t, which differs from d's type only by extension types
// wrapped around some of its parts (their storage being d's types). The caller releases it.
func withType(t arrow.DataType, d arrow.ArrayData) arrow.ArrayData {
	children := d.Children()
	var childTypes []arrow.DataType
	switch tt := t.(type) {
	case *arrow.ListType:
		childTypes = []arrow.DataType{tt.Elem()}
	case *arrow.StructType:
		for _, f := range tt.Fields() {
			childTypes = append(childTypes, f.Type)
		}
	case *arrow.MapType:
		childTypes = []arrow.DataType{tt.Elem()}
	}
	newChildren := make([]arrow.ArrayData, len(children))
	for i, ch := range children {
		if i < len(childTypes) && !arrow.TypeEqual(childTypes[i], ch.DataType()) {
			newChildren[i] = withType(childTypes[i], ch)
			defer newChildren[i].Release()
		} else {
			newChildren[i] = ch
		}
	}
	return array.NewData(t, d.Len(), d.Buffers(), newChildren, d.NullN(), d.Offset())
}
