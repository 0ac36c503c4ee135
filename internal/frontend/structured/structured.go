// Package structured gives frontends whose clients have nested and interval types (Trino HTTP,
// Flight SQL) the structure of values engines hand over as text: PostgreSQL arrays and
// intervals, DuckDB lists, fixed-size arrays, structs, maps and intervals, numbers wider than
// a decimal128 holds (as decimal256), and for Arrow clients times with a zone and DuckDB unions. A Converter reads a
// column's source type from its field metadata (pg.oid, duckdb.type), describes it as an Arrow
// list, struct, map or month-day-nano interval, and parses each value's text into it. Columns
// it cannot describe keep their text. It touches nothing but its arguments.
//
// determinism: pure functions over values (no time, tasks, randomness, network or storage)
package structured

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Converter turns the text columns of one schema into their structured form.
type Converter struct {
	in, out *arrow.Schema
	nodes   []*node // per column; nil where the column keeps its type
}

// NewConverter is the converter for batches of schema s into the structured types Trino has too.
func NewConverter(s *arrow.Schema) *Converter { return newConverter(s, false) }

// NewArrowConverter is NewConverter with the Arrow forms Trino has no type for: a time with a
// zone as an Arrow time of day (its offset dropped, as DuckDB's own Arrow export does), a
// DuckDB UNION as an Arrow sparse union.
func NewArrowConverter(s *arrow.Schema) *Converter { return newConverter(s, true) }

func newConverter(s *arrow.Schema, arrowOnly bool) *Converter {
	c := &Converter{in: s, out: s, nodes: make([]*node, s.NumFields())}
	var fields []arrow.Field
	for i, f := range s.Fields() {
		n := nodeFor(f, arrowOnly)
		if n == nil {
			continue
		}
		if fields == nil {
			fields = append([]arrow.Field(nil), s.Fields()...)
		}
		c.nodes[i] = n
		fields[i] = n.field
		fields[i].Name, fields[i].Metadata = f.Name, f.Metadata
	}
	if fields != nil {
		md := s.Metadata()
		c.out = arrow.NewSchema(fields, &md)
	}
	return c
}

// Schema is the schema of converted batches: the input schema itself when nothing changes.
func (c *Converter) Schema() *arrow.Schema { return c.out }

// Convert is b with its text columns parsed into their structured types. The caller releases the
// result (and still owns b).
func (c *Converter) Convert(b arrow.RecordBatch) (arrow.RecordBatch, error) {
	if c.out == c.in {
		b.Retain()
		return b, nil
	}
	cols := make([]arrow.Array, b.NumCols())
	defer func() {
		for i, n := range c.nodes {
			if n != nil && cols[i] != nil {
				cols[i].Release()
			}
		}
	}()
	for i, col := range b.Columns() {
		n := c.nodes[i]
		if n == nil {
			cols[i] = col
			continue
		}
		conv, err := n.convert(col)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", b.ColumnName(i), err)
		}
		cols[i] = conv
	}
	return array.NewRecordBatch(c.out, cols, b.NumRows()), nil
}

// convert parses every value of the text array a into a new array of n's type.
func (n *node) convert(a arrow.Array) (arrow.Array, error) {
	text, ok := a.(interface {
		arrow.Array
		Value(int) string
	})
	if !ok {
		return nil, fmt.Errorf("%s column is not text", a.DataType())
	}
	b := array.NewBuilder(memory.DefaultAllocator, n.field.Type)
	defer b.Release()
	b.Reserve(a.Len())
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		if err := n.appendText(text.Value(i), b); err != nil {
			return nil, err
		}
	}
	return b.NewArray(), nil
}
