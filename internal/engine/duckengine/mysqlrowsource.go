package duckengine

import (
	"context"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/queryflux/queryflux/internal/query"
)

// The statements run a row at a time (mysqlignorerows.go, mysqlupsertrows.go) take their rows
// from VALUES, as written, or from an INSERT ... SELECT's SELECT, read whole first in the
// statement's transaction (as MariaDB reads a SELECT of the table it writes into before it
// writes): each value then goes into its row's statement as a parameter.

// readSource reads u's SELECT into u.rows, each value a parameter.
func (s *session) readSource(ctx context.Context, client *query.Request, u *rowUpsert) error {
	if u.selected.text == "" {
		return nil
	}
	rows, err := s.sub(ctx, client, u.selected.text, u.selected.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Schema() == nil || len(rows.Schema().Fields()) != len(u.columns) {
		return &query.Error{Code: "21S01", Message: "Column count doesn't match value count at row 1 (MySQL error 1136)"}
	}
	for {
		b, err := rows.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for r := range int(b.NumRows()) {
			row := make([]sqlPart, b.NumCols())
			for j := range row {
				row[j] = sqlPart{"?", []any{arrowArg(b.Column(j), r)}}
			}
			u.rows = append(u.rows, row)
		}
	}
}

// arrowArg is value i of a as a MySQL client's parameter gives it (nil for NULL).
func arrowArg(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return int64(1)
		}
		return int64(0)
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit)
	}
	return a.ValueStr(i) // dates, decimals: their text, which the column's type reads
}
