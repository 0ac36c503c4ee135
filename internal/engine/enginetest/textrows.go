package enginetest

import (
	"context"
	"io"

	"github.com/queryflux/queryflux/internal/query"
)

// TextRows runs q on e: its column names and its rows, each value as the Arrow text of it.
func TextRows(e query.Engine, q *query.Request) ([]string, [][]string, error) {
	ctx := context.Background()
	rows, err := e.Execute(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var names []string
	if rows.Schema() != nil {
		for _, f := range rows.Schema().Fields() {
			names = append(names, f.Name)
		}
	}
	var out [][]string
	for {
		b, err := rows.Next(ctx)
		if err == io.EOF {
			return names, out, nil
		}
		if err != nil {
			return nil, nil, err
		}
		for i := range int(b.NumRows()) {
			var row []string
			for c := range int(b.NumCols()) {
				row = append(row, b.Column(c).ValueStr(i))
			}
			out = append(out, row)
		}
	}
}
