package structured

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
)

// textBatch is a one-column batch of field f holding vals (nil for NULL).
func textBatch(f arrow.Field, vals ...*string) arrow.RecordBatch {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
		} else {
			b.Append(*v)
		}
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{f}, nil), []arrow.Array{col}, int64(len(vals)))
}

// fataler is a *testing.T or a *rapid.T.
type fataler interface{ Fatalf(string, ...any) }

func convertOne(t fataler, f arrow.Field, text string) arrow.Array {
	c := NewConverter(arrow.NewSchema([]arrow.Field{f}, nil))
	b := textBatch(f, &text)
	defer b.Release()
	out, err := c.Convert(b)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	col := out.Column(0)
	col.Retain()
	out.Release()
	return col
}

// pgQuote writes s as PostgreSQL's array output does: quoted when it needs to be, with
// backslashes before quotes and backslashes.
func pgQuote(s string) string {
	if s != "" && !strings.EqualFold(s, "NULL") && !strings.ContainsAny(s, "{},\"\\ \t\n\r\v\f") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Any text[] value PostgreSQL writes reads back as the same strings and NULLs.
func TestPGTextArrayRoundTrip(t *testing.T) {
	f := engine.PGField("a", 1009, -1) // text[]
	rapid.Check(t, func(t *rapid.T) {
		elems := rapid.SliceOf(rapid.Ptr(rapid.String(), true)).Draw(t, "elems")
		parts := make([]string, len(elems))
		for i, e := range elems {
			parts[i] = "NULL"
			if e != nil {
				parts[i] = pgQuote(*e)
			}
		}
		col := convertOne(t, f, "{"+strings.Join(parts, ",")+"}").(*array.List)
		defer col.Release()
		start, end := col.ValueOffsets(0)
		vals := col.ListValues().(*array.String)
		if int(end-start) != len(elems) {
			t.Fatalf("%d elements, want %d", end-start, len(elems))
		}
		for i, e := range elems {
			j := int(start) + i
			if (e == nil) != vals.IsNull(j) || (e != nil && vals.Value(j) != *e) {
				t.Fatalf("element %d: got %q (null %v), want %q", i, vals.Value(j), vals.IsNull(j), *e)
			}
		}
	})
}

// duckQuote writes s as duckengine writes a string inside a composite value.
func duckQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// A DuckDB MAP(VARCHAR, INTEGER[]) value written as duckengine writes it reads back whole.
func TestDuckMapOfListsRoundTrip(t *testing.T) {
	f := arrow.Field{Name: "m", Type: arrow.BinaryTypes.String,
		Metadata: arrow.NewMetadata([]string{engine.MetaDuckDBType}, []string{"MAP(VARCHAR, INTEGER[])"})}
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.MapOf(rapid.String(), rapid.SliceOf(rapid.Ptr(rapid.Int32(), true))).Draw(t, "map")
		var parts []string
		for k, list := range m {
			items := make([]string, len(list))
			for i, v := range list {
				items[i] = "NULL"
				if v != nil {
					items[i] = fmt.Sprint(*v)
				}
			}
			parts = append(parts, duckQuote(k)+"=["+strings.Join(items, ", ")+"]")
		}
		col := convertOne(t, f, "{"+strings.Join(parts, ", ")+"}").(*array.Map)
		defer col.Release()
		keys, items := col.Keys().(*array.String), col.Items().(*array.List)
		ints := items.ListValues().(*array.Int32)
		if keys.Len() != len(m) {
			t.Fatalf("%d keys, want %d", keys.Len(), len(m))
		}
		for i := 0; i < keys.Len(); i++ {
			want := m[keys.Value(i)]
			s, e := items.ValueOffsets(i)
			if int(e-s) != len(want) {
				t.Fatalf("key %q: %d items, want %d", keys.Value(i), e-s, len(want))
			}
			for j, w := range want {
				if (w == nil) != ints.IsNull(int(s)+j) || (w != nil && ints.Value(int(s)+j) != *w) {
					t.Fatalf("key %q item %d", keys.Value(i), j)
				}
			}
		}
	})
}

// Any interval written PostgreSQL's way reads back as its months, days and microseconds.
func TestIntervalRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		years := rapid.Int32Range(-1000, 1000).Draw(t, "years")
		mons := rapid.Int32Range(-11, 11).Draw(t, "mons")
		days := rapid.Int32Range(-100000, 100000).Draw(t, "days")
		us := rapid.Int64Range(-1e12, 1e12).Draw(t, "us")
		var parts []string
		if years != 0 {
			parts = append(parts, fmt.Sprintf("%d years", years))
		}
		if mons != 0 {
			parts = append(parts, fmt.Sprintf("%d mons", mons))
		}
		if days != 0 {
			parts = append(parts, fmt.Sprintf("%d days", days))
		}
		if us != 0 || len(parts) == 0 {
			sign, a := "", us
			if a < 0 {
				sign, a = "-", -a
			}
			parts = append(parts, fmt.Sprintf("%s%02d:%02d:%02d.%06d", sign, a/3600e6, a/60e6%60, a/1e6%60, a%1e6))
		}
		text := strings.Join(parts, " ")
		got, err := ParseInterval(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		want := arrow.MonthDayNanoInterval{Months: years*12 + mons, Days: days, Nanoseconds: us * 1000}
		if got != want {
			t.Fatalf("%q: got %+v want %+v", text, got, want)
		}
	})
}

// Types with no Arrow form here, and non-composite columns, keep their text and schema.
func TestUnknownTypesKeepTheirText(t *testing.T) {
	for _, d := range []string{"VARCHAR", "UNION(a INTEGER)", "ENUM('a', 'b')[]", "STRUCT(a BIT)", "MAP(INTEGER[], INTEGER)", "BIT"} {
		f := arrow.Field{Name: "x", Type: arrow.BinaryTypes.String,
			Metadata: arrow.NewMetadata([]string{engine.MetaDuckDBType}, []string{d})}
		s := arrow.NewSchema([]arrow.Field{f}, nil)
		if NewConverter(s).Schema() != s {
			t.Errorf("%s: converted to %s", d, NewConverter(s).Schema())
		}
	}
	for _, oid := range []uint32{25, 114, 2249 /* record */, 3904 /* int4range */} {
		s := arrow.NewSchema([]arrow.Field{engine.PGField("x", oid, -1)}, nil)
		if NewConverter(s).Schema() != s {
			t.Errorf("oid %d: converted to %s", oid, NewConverter(s).Schema())
		}
	}
}

// JSON inside a DuckDB composite value (typed VARCHAR there, handed over decoded) keeps its
// text rather than failing the column.
func TestDuckJSONInsideListStaysText(t *testing.T) {
	f := arrow.Field{Name: "l", Type: arrow.BinaryTypes.String,
		Metadata: arrow.NewMetadata([]string{engine.MetaDuckDBType}, []string{"VARCHAR[]"})}
	col := convertOne(t, f, `[{'a': [1, '}']}, [1, 2], 'x', NULL]`).(*array.List)
	defer col.Release()
	vals := col.ListValues().(*array.String)
	if vals.Len() != 4 || vals.Value(0) != `{'a': [1, '}']}` || vals.Value(1) != "[1, 2]" || vals.Value(2) != "x" || !vals.IsNull(3) {
		t.Fatalf("elements %v", vals)
	}
}
