package trinohttp

import (
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cespare/xxhash/v2"

	"github.com/queryflux/queryflux/internal/boundedcache"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/structured"
)

// shape is what the pages of a result of one schema need: the converter of its batches, its
// Trino columns and their JSON. None of them changes once built, so queries share them.
type shape struct {
	schema      *arrow.Schema // the schema it was built from, to tell a key's collision
	conv        *structured.Converter
	columns     []Column
	columnsJSON []byte
	plain       bool // rows of plain values (query.PlainRows) are written as they are
}

func newShape(schema *arrow.Schema) *shape {
	conv := structured.NewConverter(schema)
	cols := columnsFor(conv.Schema())
	return &shape{schema: schema, conv: conv, columns: cols, columnsJSON: encodeColumns(cols), plain: writtenPlain(schema, conv)}
}

// writtenPlain reports whether rows of schema, as plain values, are what rowsOf takes out of
// its converted batches: conv converts no column, and jsonValue hands each column's values on
// as Arrow's array holds them (a time with a zone carried as a string it rewrites).
func writtenPlain(schema *arrow.Schema, conv *structured.Converter) bool {
	if conv.Schema() != schema {
		return false
	}
	for _, f := range schema.Fields() {
		if !engine.PlainField(f) || engine.IsTimeTZField(f) {
			return false
		}
	}
	return true
}

// shapes keeps the shapes of the schemas seen, by what a shape is built from (its fields'
// names, nullability, types and metadata), not by the schema's pointer: an engine that builds
// a new schema per query (duckengine, mysqlengine's Arrow path) then has its queries' shapes
// built once too, as one that hands every run of a statement the same schema (pgengine) does,
// and the cache does not fill with shapes of schemas no query hands over again.
type shapes struct {
	*boundedcache.Cache[uint64, *shape] // by shapeKey
	// last is the schema of's last caller handed and its shape: a statement run again and
	// again is handed the same schema (pgengine keeps it per statement), which then is not
	// hashed again (850 instructions of a SELECT 1). Its shape may have been built from an
	// equal schema of another allocation: pgengine's first run of a statement reads its values
	// as text and the runs after as binary, each its own schema.
	last *atomic.Pointer[lastShape]
}

// lastShape is a schema and its shape.
type lastShape struct {
	schema *arrow.Schema
	shape  *shape
}

// shapesMax bounds the shapes kept; past it the cache starts again empty.
const shapesMax = 512

func newShapes() shapes {
	return shapes{boundedcache.New[uint64, *shape](shapesMax), new(atomic.Pointer[lastShape])}
}

func (c shapes) of(schema *arrow.Schema) *shape {
	if l := c.last.Load(); l != nil && l.schema == schema { // an arrow.Schema never changes
		return l.shape
	}
	key := shapeKey(schema)
	s, ok := c.Get(key)
	if !ok || (s.schema != schema && !sameFields(s.schema, schema)) {
		s = newShape(schema)
		c.Put(key, s) // replaces a colliding shape: a rebuild when both come back, never a wrong shape
	}
	c.last.Store(&lastShape{schema: schema, shape: s})
	return s
}

// shapeKey hashes each field's name, nullability, type id and metadata (the engines' own type
// names: DuckDB's JSON and VARCHAR are both Arrow strings), without allocating.
func shapeKey(schema *arrow.Schema) uint64 {
	var d xxhash.Digest
	d.Reset()
	for i := range schema.NumFields() {
		f := schema.Field(i)
		nullable := byte(0)
		if f.Nullable {
			nullable = 1
		}
		_, _ = d.WriteString(f.Name)
		_, _ = d.Write([]byte{0, byte(f.Type.ID()), nullable})
		for j, k := range f.Metadata.Keys() {
			_, _ = d.WriteString(k)
			_, _ = d.Write([]byte{0})
			_, _ = d.WriteString(f.Metadata.Values()[j])
			_, _ = d.Write([]byte{0})
		}
	}
	return d.Sum64()
}

// sameFields reports whether a and b have the same fields: what shapeKey hashes, in the same
// order, and the types' parameters (a decimal's scale, a timestamp's zone), which shapeKey
// leaves to it. (Schema.Equal says the same of metadata in another order, but sorts each
// field's metadata to say it: two allocations per field and query.)
func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		f, g := a.Field(i), b.Field(i)
		if f.Name != g.Name || f.Nullable != g.Nullable || !arrow.TypeEqual(f.Type, g.Type, arrow.CheckMetadata()) ||
			!slices.Equal(f.Metadata.Keys(), g.Metadata.Keys()) || !slices.Equal(f.Metadata.Values(), g.Metadata.Values()) {
			return false
		}
	}
	return true
}
