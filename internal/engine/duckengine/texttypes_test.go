package duckengine_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// Types go-duckdb cannot read (UNION, UHUGEINT, BIT) or reads losing the offset (TIMETZ) come
// back as DuckDB's own text of them, naming their type; HUGEINT comes back exact, in a
// decimal128 as DuckDB's own Arrow export gives it; each has the PostgreSQL type a client expects.
func TestDuckDBTypesReadAsTextOrDecimal(t *testing.T) {
	e := open(t)
	rows, err := e.Execute(context.Background(), &query.Request{SQL: `select
		union_value(k := 7)::UNION(k int, s varchar) u, '12:00:00+02'::timetz tz,
		'340282366920938463463374607431768211455'::uhugeint uh, '0101'::bit b,
		-170141183460469231731687303715884105727::hugeint h, interval '1 day' i -- a trailing comment;`})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		duck string
		typ  arrow.DataType
		val  string
		oid  uint32
	}{
		{`UNION("k" INTEGER, "s" VARCHAR)`, arrow.BinaryTypes.String, "7", 25},
		{"TIMETZ", arrow.BinaryTypes.String, "12:00:00+02", 1266},
		{"UHUGEINT", arrow.BinaryTypes.String, "340282366920938463463374607431768211455", 1700},
		{"BIT", arrow.BinaryTypes.String, "0101", 1562},
		{"HUGEINT", engine.HugeintType, "-170141183460469231731687303715884105727", 1700},
		{"INTERVAL", arrow.BinaryTypes.String, "1 day", 1186},
	}
	for i, w := range want {
		f := b.Schema().Field(i)
		got := b.Column(i).ValueStr(0)
		if d, ok := engine.DecimalText(b.Column(i), 0); ok {
			got = d
		}
		d, _ := f.Metadata.GetValue(engine.MetaDuckDBType)
		oid, _ := engine.PGTypeOf(f)
		if d != w.duck || !arrow.TypeEqual(f.Type, w.typ) || got != w.val || oid != w.oid {
			t.Errorf("column %s: %s %s %q oid %d; want %s %s %q oid %d", f.Name, d, f.Type, got, oid, w.duck, w.typ, w.val, w.oid)
		}
	}
}
