package pgengine

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cespare/xxhash/v2"
	"github.com/jackc/pgx/v5/pgconn"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// A statement run again reuses its result's schema; statements whose columns differ in name,
// type, modifier or format (binary int4 or text numeric) each get their own, and decode their
// values by it.
func TestShapesAreReusedOnlyForTheSameColumns(t *testing.T) {
	qe, err := Open(engine.Spec{Name: "pg", Kind: Kind, Endpoint: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer qe.Close()
	ctx := context.Background()
	run := func(sql string) (*arrow.Schema, string) {
		t.Helper()
		rows, err := qe.Execute(ctx, &query.Request{SQL: sql})
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		b, err := rows.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rows.Schema(), b.Column(0).ValueStr(0)
	}
	first, _ := run("select 7::int4 a")
	again, v := run("select 8::int4 a")
	if first != again || v != "8" {
		t.Errorf("the same columns again: schema reused %v, value %s (want true, 8)", first == again, v)
	}
	for _, c := range []struct{ sql, typ, value string }{
		{"select 9::int4 b", "int32", "9"},                     // another name
		{"select 10::int8 a", "int64", "10"},                   // another type
		{"select 1.5::numeric(6,2) a", "decimal(6, 2)", "1.5"}, // a modifier
		{"select 1.5::numeric(6,3) a", "decimal(6, 3)", "1.5"}, // another modifier
		{"select '11'::text a", "utf8", "11"},
	} {
		s, v := run(c.sql)
		if s == first || s.Field(0).Type.String() != c.typ || v != c.value {
			t.Errorf("%s: shared the first schema %v, type %s, value %s; want a schema of its own, %s, %s",
				c.sql, s == first, s.Field(0).Type, v, c.typ, c.value)
		}
	}
}

// Two column lists have the same key exactly when they agree on everything schemaFor reads.
func TestShapeKeyTellsColumnListsApart(t *testing.T) {
	field := rapid.Custom(func(t *rapid.T) pgconn.FieldDescription {
		return pgconn.FieldDescription{
			Name:         rapid.StringMatching(`[ab]{0,3}`).Draw(t, "name"),
			DataTypeOID:  rapid.SampledFrom([]uint32{23, 20, 1700, 25}).Draw(t, "oid"),
			TypeModifier: rapid.Int32Range(-1, 2).Draw(t, "typmod"),
			Format:       rapid.Int16Range(0, 1).Draw(t, "format"),
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOfN(field, 0, 3).Draw(t, "a")
		b := rapid.SliceOfN(field, 0, 3).Draw(t, "b")
		same := len(a) == len(b)
		for i := 0; same && i < len(a); i++ {
			same = a[i].Name == b[i].Name && a[i].DataTypeOID == b[i].DataTypeOID &&
				a[i].TypeModifier == b[i].TypeModifier && a[i].Format == b[i].Format
		}
		if keysEqual := string(shapeKey(nil, a)) == string(shapeKey(nil, b)); keysEqual != same {
			t.Fatalf("keys equal %v for column lists equal %v: %+v, %+v", keysEqual, same, a, b)
		}
	})
}

// Shapes are kept by a hash of their columns: a shape found under a column list's hash but built
// for other columns (a collision) is not handed out for it; the right one is built and kept.
func TestShapeOfTellsACollisionApart(t *testing.T) {
	c := newShapes()
	a := []pgconn.FieldDescription{{Name: "a", DataTypeOID: 23, TypeModifier: -1, Format: 1}}
	b := []pgconn.FieldDescription{{Name: "b", DataTypeOID: 25, TypeModifier: -1, Format: 0}}
	shA, err := c.of(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	sa := shA.schema
	// b's hash holds a's shape, as if the two hashed alike.
	c.Put(xxhash.Sum64(shapeKey(nil, b)), &shape{key: string(shapeKey(nil, a)), schema: sa, decoders: shA.decoders, builders: shA.builders})
	shB, err := c.of(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, poolB := shB.schema, shB.builders
	if sb == sa || sb.Field(0).Name != "b" || sb.Field(0).Type.ID() != arrow.STRING || poolB.Schema() != sb {
		t.Fatalf("columns b text under a colliding hash: got schema %v (a's: %v)", sb, sb == sa)
	}
	if again, _ := c.of(b, nil); again.schema != sb {
		t.Fatal("the shape built after the collision was not kept")
	}
}
