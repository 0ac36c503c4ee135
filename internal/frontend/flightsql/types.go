package flightsql

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"

	"github.com/queryflux/queryflux/internal/engine"
)

// Engines hand over UUIDs as 16 bytes and JSON as text, naming the type in field metadata.
// Flight SQL clients get Arrow's own extension types for them (arrow.uuid, arrow.json), so
// arrow-go and ADBC decode a UUID as a UUID and a JSON column as JSON; the storage is the same.

var jsonType = func() *extensions.JSONType {
	t, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		panic("flightsql: arrow.json over utf8: " + err.Error())
	}
	return t
}()

// extensionFor is the extension type a field travels as, or nil when it keeps its type.
func extensionFor(f arrow.Field) arrow.ExtensionType {
	if _, ok := f.Type.(arrow.ExtensionType); ok {
		return nil
	}
	switch {
	case engine.IsUUIDField(f):
		return extensions.NewUUIDType()
	case engine.IsJSONField(f) && f.Type.ID() == arrow.STRING:
		return jsonType
	}
	return nil
}

// outSchema is schema as clients see it; unchanged (the same pointer) when no field changes.
func outSchema(schema *arrow.Schema) *arrow.Schema {
	var fields []arrow.Field
	for i, f := range schema.Fields() {
		if ext := extensionFor(f); ext != nil {
			if fields == nil {
				fields = append([]arrow.Field(nil), schema.Fields()...)
			}
			fields[i].Type = ext
		}
	}
	if fields == nil {
		return schema
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md)
}

// outBatch is b under out (from outSchema of b's schema): the same columns, wrapped in their
// extension types. The caller releases the result (and still owns b).
func outBatch(out *arrow.Schema, b arrow.RecordBatch) arrow.RecordBatch {
	if out == b.Schema() {
		b.Retain()
		return b
	}
	cols := make([]arrow.Array, b.NumCols())
	for i, col := range b.Columns() {
		if ext, ok := out.Field(i).Type.(arrow.ExtensionType); ok && col.DataType().ID() != arrow.EXTENSION {
			cols[i] = array.NewExtensionArrayWithStorage(ext, col)
			defer cols[i].Release()
		} else {
			cols[i] = col
		}
	}
	return array.NewRecordBatch(out, cols, b.NumRows())
}
