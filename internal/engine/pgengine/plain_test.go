package pgengine_test

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// plainColumns are the column types whose values are plain (query.PlainRows), with a literal
// of a generated value of each.
var plainColumns = []struct {
	sqlType string
	value   func(t *rapid.T, label string) string
}{
	{"boolean", func(t *rapid.T, l string) string { return fmt.Sprint(rapid.Bool().Draw(t, l)) }},
	{"int2", func(t *rapid.T, l string) string { return fmt.Sprint(rapid.Int16().Draw(t, l)) }},
	{"int4", func(t *rapid.T, l string) string { return fmt.Sprint(rapid.Int32().Draw(t, l)) }},
	{"int8", func(t *rapid.T, l string) string { return fmt.Sprint(rapid.Int64().Draw(t, l)) }},
	{"text", textLiteral},
	{"varchar(12)", func(t *rapid.T, l string) string {
		return "'" + strings.ReplaceAll(rapid.StringMatching(`[a-z' ]{0,12}`).Draw(t, l), "'", "''") + "'"
	}},
	{"numeric", func(t *rapid.T, l string) string { return fmt.Sprint(rapid.Int64().Draw(t, l)) + ".5" }}, // carried as text
	{"interval", func(t *rapid.T, l string) string {
		return "'" + fmt.Sprint(rapid.IntRange(0, 999).Draw(t, l)) + " days'"
	}},
}

func textLiteral(t *rapid.T, label string) string {
	s := strings.ReplaceAll(rapid.String().Draw(t, label), "\x00", "")
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// Rows of plain columns read as plain values are the values their Arrow batches hold, of the
// same Go types, NULLs included, in binary results (cache_statement) and text ones (exec, simple protocol); a
// result with any other column is not plain.
func TestPlainRowsAreTheBatchesValues(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	for _, mode := range []string{"exec", "cache_statement", "simple_protocol"} { // text, binary, text results
		e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: dsn, Options: map[string]string{"exec_mode": mode}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		t.Run(mode, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				cols := rapid.SliceOfNDistinct(rapid.IntRange(0, len(plainColumns)-1), 1, 4, rapid.ID).Draw(t, "columns")
				var values []string
				for r := range rapid.IntRange(1, 4).Draw(t, "rows") {
					var row []string
					for i, c := range cols {
						v := "NULL"
						if !rapid.Bool().Draw(t, fmt.Sprintf("null %d %d", r, i)) {
							v = plainColumns[c].value(t, fmt.Sprintf("value %d %d", r, i))
						}
						row = append(row, "("+v+")::"+plainColumns[c].sqlType)
					}
					values = append(values, "("+strings.Join(row, ", ")+")")
				}
				sql := "SELECT * FROM (VALUES " + strings.Join(values, ", ") + ") v"
				batches, plain := batchValues(t, e, sql), plainValues(t, e, sql)
				if !reflect.DeepEqual(plain, batches) {
					t.Fatalf("%s:\nplain   %#v\nbatches %#v", sql, plain, batches)
				}
			})
		})
	}
	e := open(t)
	rows, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT 1 a, 1.5::float8 b"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if p, ok := rows.(query.PlainRows); !ok || p.Plain() {
		t.Fatal("a result with a float column is plain")
	}
}

// batchValues are sql's rows as its Arrow batches hold them.
func batchValues(t *rapid.T, e query.Engine, sql string) [][]any {
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out [][]any
	for {
		b, err := rows.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(b.NumRows()) {
			row := make([]any, b.NumCols())
			for c, col := range b.Columns() {
				row[c] = arrowValue(col, i)
			}
			out = append(out, row)
		}
	}
}

func arrowValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	}
	return fmt.Sprintf("an Arrow %s", a.DataType())
}

// plainValues are sql's rows read as plain values.
func plainValues(t *rapid.T, e query.Engine, sql string) [][]any {
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	p, ok := rows.(query.PlainRows)
	if !ok || !p.Plain() {
		t.Fatalf("%s: not plain rows", sql)
	}
	var out [][]any
	for {
		r, err := p.NextPlain(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r...)
	}
}

// Plain rows come at most engine.BatchRowsMax at a time, and end with the result's tag.
func TestPlainRowsAreBounded(t *testing.T) {
	e := open(t)
	rows, err := e.Execute(context.Background(), &query.Request{SQL: "select g from generate_series(1, 2500) g"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	p := rows.(query.PlainRows)
	var sizes []int
	next := int32(1)
	for {
		r, err := p.NextPlain(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range r {
			if row[0] != next {
				t.Fatalf("row %v, want %d", row, next)
			}
			next++
		}
		sizes = append(sizes, len(r))
	}
	if len(sizes) != 3 || sizes[0] != engine.BatchRowsMax || sizes[2] != 2500-2*engine.BatchRowsMax || rows.Tag() != "SELECT 2500" {
		t.Fatalf("sizes %v, tag %q", sizes, rows.Tag())
	}
}
