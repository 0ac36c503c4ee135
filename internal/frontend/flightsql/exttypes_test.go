package flightsql

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// PostgreSQL's uuid reaches arrow-go's Flight SQL client as Arrow's uuid extension type and
// json/jsonb as Arrow's json extension type, in the FlightInfo schema and in the stream.
func TestUUIDAndJSONExtensionTypesFromPostgres(t *testing.T) {
	runTypeCases(t, []typeCase{
		{engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)},
			`select 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid as id, '{"a": 1}'::jsonb as doc, 'x' as s`,
			[]string{"id: type=extension<arrow.uuid>", "doc: type=extension<arrow.json", "s: type=utf8"},
			[]string{"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", `{"a": 1}`, "x"}, nil},
	})
}

// Composite values reach arrow-go's Flight SQL client as Arrow lists, structs, maps and
// month-day-nano intervals (DuckDB's lists, structs, maps and intervals; PostgreSQL's arrays and
// intervals), with UUIDs and JSON inside them as Arrow's extension types.
func TestNestedTypes(t *testing.T) {
	runTypeCases(t, []typeCase{
		{engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"},
			`select [1, NULL] a, {'k': 7, 'v': 'it''s'} b, map {'x': [1.5::decimal(4,1)]} c,
				interval '1 month 2 days 3.5 seconds' d, ['6ccd780c-baba-1026-9564-5b8c656024db'::uuid] e`,
			[]string{"a: type=list<item: int32, nullable>", "b: type=struct<k: int32 nullable, v: utf8 nullable>",
				"c: type=map<utf8, list<item: decimal(4, 1), nullable>, items_nullable>", "d: type=month_day_nano_interval",
				"e: type=list<item: extension<arrow.uuid>, nullable>"},
			[]string{"[1,null]", `{"k":7,"v":"it's"}`, `[{"key":"x","value":["1.5"]}]`, `{"months":1,"days":2,"nanoseconds":3500000000}`,
				`["6ccd780c-baba-1026-9564-5b8c656024db"]`}, []string{"", `STRUCT("k" INTEGER, "v" VARCHAR)`}},
		{engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)},
			`select array[1, null]::int8[] a, array['x,y', null]::text[] b, array['{"j": 1}'::jsonb] c,
				interval '1 mon 2 days 00:00:03.5' d, array['6ccd780c-baba-1026-9564-5b8c656024db'::uuid] e`,
			[]string{"a: type=list<item: int64, nullable>", "b: type=list<item: utf8, nullable>",
				"c: type=list<item: extension<arrow.json[storage_type=utf8]>, nullable>", "d: type=month_day_nano_interval",
				"e: type=list<item: extension<arrow.uuid>, nullable>"},
			[]string{"[1,null]", `["x,y",null]`, `[{"j":1}]`, `{"months":1,"days":2,"nanoseconds":3500000000}`,
				`["6ccd780c-baba-1026-9564-5b8c656024db"]`}, nil},
	})
}

// typeCase is a query, the fields its schema must show and its first row's values.
type typeCase struct {
	spec      engine.Spec
	sql       string
	schema    []string
	values    []string
	duckTypes []string // each column's duckdb.type ("": not checked)
}

// runTypeCases runs each case through arrow-go's Flight SQL client against a core over the
// case's engine: the declared (FlightInfo) and streamed schemas and the values must match.
func runTypeCases(t *testing.T, cases []typeCase) {
	for _, tc := range cases {
		t.Run(tc.spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, tc.spec), Options{})
			ctx := context.Background()
			info, err := c.Execute(ctx, tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			declared, err := flight.DeserializeSchema(info.Schema, c.Alloc)
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			if !r.Next() {
				t.Fatalf("no batch: %v", r.Err())
			}
			b := r.RecordBatch()
			for _, s := range []*arrow.Schema{declared, b.Schema()} {
				for _, want := range tc.schema {
					if !strings.Contains(s.String(), want) {
						t.Fatalf("schema has no %q:\n%s", want, s)
					}
				}
			}
			for i, want := range tc.values {
				got := b.Column(i).ValueStr(0)
				if d, ok := engine.DecimalText(b.Column(i), 0); ok { // ValueStr rounds a decimal128
					got = d
				}
				if got != want {
					t.Errorf("column %d: got %s want %s", i, got, want)
				}
			}
			for i, want := range tc.duckTypes {
				if d, _ := b.Schema().Field(i).Metadata.GetValue("duckdb.type"); want != "" && d != want {
					t.Errorf("column %d's duckdb.type %q, want %q", i, d, want)
				}
			}
		})
	}
}

// Types engines hand over as text reach arrow-go's Flight SQL client as Arrow types: a time with
// a zone as a time64 of its clock time (as DuckDB's own Arrow export), a DuckDB UNION as a sparse
// union, UHUGEINT and PostgreSQL's numeric(39..76, s) as decimal256, HUGEINT as decimal128(38, 0)
// (DuckDB's choice); unbounded numbers (BIGNUM, PostgreSQL's numeric without a precision, NaN
// and infinities included) stay their exact text, as ADBC's PostgreSQL driver gives numeric.
func TestTimeTZUnionAndWideNumbers(t *testing.T) {
	runTypeCases(t, []typeCase{
		{engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"},
			`select '12:34:56.5+02'::timetz a, ['01:02:03-05:30'::timetz, NULL] b,
				union_value(n := 2)::union(n integer, s varchar) c, union_value(s := 'x')::union(n integer, s varchar) d,
				'340282366920938463463374607431768211455'::uhugeint e, -170141183460469231731687303715884105727::hugeint f,
				'-123456789012345678901234567890123456789012'::varint g, NULL::timetz h`,
			[]string{"a: type=time64[us]", "b: type=list<item: time64[us], nullable>",
				"c: type=sparse_union<n: type=int32", "d: type=sparse_union<n: type=int32",
				"e: type=decimal256(39, 0)", "f: type=decimal(38, 0)", "g: type=utf8", "h: type=time64[us]"},
			[]string{"12:34:56.500000", `["01:02:03",null]`, "[0,2]", `[1,"x"]`, "340282366920938463463374607431768211455",
				"-170141183460469231731687303715884105727", "-123456789012345678901234567890123456789012", "(null)"},
			[]string{"TIMETZ", "TIMETZ[]", `UNION("n" INTEGER, "s" VARCHAR)`, "", "UHUGEINT", "HUGEINT", "BIGNUM"}},
		{engine.Spec{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)},
			`select '12:34:56.5+02'::timetz a, array['01:02:03-05:30'::timetz] b, 1234567890123456789012345678901234567890.5::numeric(41,1) c,
				1.5::numeric d, 'NaN'::numeric e`,
			[]string{"a: type=time64[us]", "b: type=list<item: time64[us], nullable>", "c: type=decimal256(41, 1)", "d: type=utf8", "e: type=utf8"},
			[]string{"12:34:56.500000", `["01:02:03"]`, "1234567890123456789012345678901234567890.5", "1.5", "NaN"}, nil},
	})
}
