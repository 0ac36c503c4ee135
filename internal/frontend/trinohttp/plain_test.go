package trinohttp

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// plainRows hand the same rows as plain values and as a batch, and count which were read.
type plainRows struct {
	*frontendtest.RecordRows
	values         [][]any
	plain, batches *atomic.Int32
	plainHandedOut bool
}

func (r *plainRows) Plain() bool { return true }

func (r *plainRows) NextPlain(context.Context) ([][]any, error) {
	r.plain.Add(1)
	if r.plainHandedOut {
		return nil, io.EOF
	}
	r.plainHandedOut = true
	return r.values, nil
}

func (r *plainRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	r.batches.Add(1)
	return r.RecordRows.Next(ctx)
}

// stringRows is an engine answering one column of field f (a string) with values, as plain
// rows counting the reads of each kind.
func stringRows(f arrow.Field, values []string, plain, batches *atomic.Int32) frontendtest.FuncEngine {
	return func(context.Context, *query.Request) (query.Rows, error) {
		schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int32}, f}, nil)
		nb, sb := array.NewInt32Builder(memory.DefaultAllocator), array.NewStringBuilder(memory.DefaultAllocator)
		defer nb.Release()
		defer sb.Release()
		var rows [][]any
		for i, v := range values {
			nb.Append(int32(i + 1))
			sb.Append(v)
			rows = append(rows, []any{int32(i + 1), v})
		}
		n, s := nb.NewArray(), sb.NewArray()
		defer n.Release()
		defer s.Release()
		batch := array.NewRecordBatch(schema, []arrow.Array{n, s}, int64(len(values)))
		defer batch.Release()
		return &plainRows{RecordRows: frontendtest.NewRecordRows(schema, "", batch), values: rows, plain: plain, batches: batches}, nil
	}
}

// A result whose values the Trino encoding writes as they are is read as plain values, not
// batches, by both kinds of clients (its POST answered whole, or its rows from a GET), and
// written as the batches' values would be; one with a column whose values it rewrites (a
// time with a zone, carried as a string) is read as batches.
func TestPlainRowsWrittenAsTheirBatchesWouldBe(t *testing.T) {
	text := arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}
	timeTZ := arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true,
		Metadata: arrow.NewMetadata([]string{engine.MetaPGOID}, []string{"1266"})}
	for _, c := range []struct {
		name      string
		field     arrow.Field
		values    []string
		wantData  string
		wantPlain bool
	}{
		{"text", text, []string{"a", `"b"`}, `[[1 a] [2 "b"]]`, true},
		{"time with a zone", timeTZ, []string{"12:34:56+02", "01:02:03-05:30"}, "[[1 12:34:56.000000+02:00] [2 01:02:03.000000-05:30]]", false},
	} {
		for _, agent := range []string{pythonAgent, "Go-http-client/1.1"} {
			t.Run(fmt.Sprintf("%s/%s", c.name, agent), func(t *testing.T) {
				var plain, batches atomic.Int32
				ts := startServer(t, frontendtest.NewBackend(stringRows(c.field, c.values, &plain, &batches)), Options{PostWait: 10 * time.Second})
				_, qr := postAs(t, ts.addr, agent, "SELECT n, s")
				data, last := readAll(t, qr)
				if fmt.Sprint(data) != c.wantData || last.Stats.State != stateFinished {
					t.Fatalf("rows %v, want %s; last page %+v", data, c.wantData, last)
				}
				if read := plain.Load() > 0; read != c.wantPlain || (batches.Load() > 0) == c.wantPlain {
					t.Fatalf("plain reads %d, batch reads %d; want plain %v", plain.Load(), batches.Load(), c.wantPlain)
				}
			})
		}
	}
}
