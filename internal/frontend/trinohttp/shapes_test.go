package trinohttp

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/query"
	"pgregory.net/rapid"
)

// duckSchema is the schema DuckDB hands over for sql, a new one per query.
func duckSchema(t testing.TB, e query.Backend, sql string) *arrow.Schema {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	return rows.Schema()
}

// TestEqualSchemasShareAShape: DuckDB builds a new schema per query, and the queries of one
// result shape still share one cached shape; schemas that differ only in an engine's type name
// (field metadata) or in a type's parameters get their own.
func TestEqualSchemasShareAShape(t *testing.T) {
	duck := duckBackend(t)
	c := newShapes()
	first := duckSchema(t, duck, "select 1 as n, 'x' as s")
	again := duckSchema(t, duck, "select 2 as n, 'y' as s")
	if first == again {
		t.Fatal("DuckDB handed both queries one schema: the test needs two allocations")
	}
	if a, b := c.of(first), c.of(again); a != b || c.Len() != 1 {
		t.Fatalf("two equal schemas from different allocations: shapes %p and %p, %d cached; want one", a, b, c.Len())
	}

	text := c.of(duckSchema(t, duck, "select 'x' as j"))
	js := c.of(duckSchema(t, duck, "select '{}'::json as j"))
	if text.columns[0].Type != "varchar" || js.columns[0].Type != "json" {
		t.Fatalf("VARCHAR and JSON columns (both Arrow strings) typed %q and %q", text.columns[0].Type, js.columns[0].Type)
	}
	if c.Len() != 3 { // keyed apart, so that the two do not rebuild each other's shape
		t.Fatalf("%d shapes cached for three shapes", c.Len())
	}

	// Same field names, type ids and metadata: one key, told apart by the types' parameters.
	dec := func(p, s int32) *arrow.Schema {
		return arrow.NewSchema([]arrow.Field{{Name: "d", Type: &arrow.Decimal128Type{Precision: p, Scale: s}, Nullable: true}}, nil)
	}
	for range 2 {
		if got := c.of(dec(10, 2)).columns[0].Type; got != "decimal(10,2)" {
			t.Fatalf("decimal(10,2) column typed %q", got)
		}
		if got := c.of(dec(12, 4)).columns[0].Type; got != "decimal(12,4)" {
			t.Fatalf("decimal(12,4) column typed %q", got)
		}
	}
}

// The shape of a result whose schema is new, as DuckDB's is for every query: the schema of a
// DuckDB result of a few columns, allocated again per query as duckengine does.
//
//	go test -run '^$' -bench ShapeOfANewSchema -benchmem -count 10 ./internal/frontend/trinohttp/
func BenchmarkShapeOfANewSchema(b *testing.B) {
	fields := duckSchema(b, duckBackend(b), "select 1 as id, 'x' as name, 2.5::decimal(10,2) as price, now() as at, [1, 2] as tags").Fields()
	c := newShapes()
	for b.Loop() {
		c.of(arrow.NewSchema(fields, nil))
	}
}

// Schemas handed over again and again, as pgengine hands each statement's (the same pointer
// each run), in any order with new ones between: each gets the shape built from it, and is
// the one the next call finds without hashing, also when its shape was built from an equal
// schema of another allocation (pgengine's statement read as text at its first run).
func TestAShapeIsItsSchemasWhateverCameBefore(t *testing.T) {
	pool := []*arrow.Schema{
		arrow.NewSchema([]arrow.Field{{Name: "_col0", Type: arrow.PrimitiveTypes.Int32}}, nil),
		arrow.NewSchema([]arrow.Field{{Name: "_col0", Type: arrow.PrimitiveTypes.Int64}}, nil),
		arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.BinaryTypes.String, Nullable: true}}, nil),
		arrow.NewSchema([]arrow.Field{{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}}}, nil),
	}
	rapid.Check(t, func(rt *rapid.T) {
		c := newShapes()
		for range rapid.IntRange(1, 20).Draw(rt, "calls") {
			schema := pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "schema")]
			if rapid.Bool().Draw(rt, "new") { // an equal schema of another allocation, as DuckDB's
				schema = arrow.NewSchema(schema.Fields(), nil)
			}
			got, want := c.of(schema), newShape(schema)
			if !bytes.Equal(got.columnsJSON, want.columnsJSON) {
				rt.Fatalf("%v: columns %s, want %s", schema, got.columnsJSON, want.columnsJSON)
			}
			if l := c.last.Load(); l.schema != schema || l.shape != got { // the next of(schema) is not hashed
				rt.Fatalf("%v: the last shape kept is %v's, not the schema's just handed", schema, l.schema)
			}
		}
	})
}
