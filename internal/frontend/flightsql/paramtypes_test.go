package flightsql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestPreparedStatementsBindArrowTypes: arrow-go's prepared statements bind parameters of the
// Arrow types engines take (decimal128, timestamps with a zone, date32, binary, doubles,
// booleans, text with quotes, NULL), one execution per row, and what lands is what was bound,
// read back by the engine; PostgreSQL also takes date64, large strings and lists as arrays.
func TestPreparedStatementsBindArrowTypes(t *testing.T) {
	for _, spec := range txEngines(t) {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			if _, err := ingest(ctx, c, ingestOpts("bound", create, fail), ingestBatch(1, 0)); err != nil {
				t.Fatal(err)
			}
			marks := make([]string, len(ingestSchema.Fields()))
			for i := range marks {
				marks[i] = "$" + fmt.Sprint(i+1)
				if spec.Kind == "mysql" {
					marks[i] = "?"
				}
			}
			prep, err := c.Prepare(ctx, "INSERT INTO bound VALUES ("+strings.Join(marks, ", ")+")")
			if err != nil {
				t.Fatal(err)
			}
			defer prep.Close(ctx)
			prep.SetParameters(ingestBatch(1, 6))
			if n, err := prep.ExecuteUpdate(ctx); err != nil || n != 6 {
				t.Fatalf("prepared insert of 6 rows: %d, %v", n, err)
			}
			checkReadBack(t, ctx, c, spec, "bound", seq(1, 6)...)
			if spec.Kind != "postgres" {
				return
			}
			mustUpdate(t, ctx, c, "CREATE TABLE more (d date, s text, l bigint[], ts timestamptz)")
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "d", Type: arrow.FixedWidthTypes.Date64, Nullable: true},
				{Name: "s", Type: arrow.BinaryTypes.LargeString, Nullable: true},
				{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
				{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "America/New_York"}, Nullable: true},
			}, nil)
			b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
			b.Field(0).(*array.Date64Builder).Append(arrow.Date64FromTime(ingestAt))
			b.Field(1).(*array.LargeStringBuilder).Append(strings.Repeat("é'", 3))
			lb := b.Field(2).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int64Builder).AppendValues([]int64{3, 1, 2}, nil)
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(ingestAt.UnixNano()))
			rec := b.NewRecordBatch()
			b.Release()
			more, err := c.Prepare(ctx, "INSERT INTO more VALUES ($1, $2, $3, $4)")
			if err != nil {
				t.Fatal(err)
			}
			defer more.Close(ctx)
			more.SetParameters(rec)
			if n, err := more.ExecuteUpdate(ctx); err != nil || n != 1 {
				t.Fatalf("prepared insert of date64, large string, list, zoned timestamp: %d, %v", n, err)
			}
			got := query1(t, ctx, c, "SELECT d::text, s, l::text, to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') FROM more")
			want := [][]string{{"2024-02-29", strings.Repeat("é'", 3), "{3,1,2}", ingestAt.Format("2006-01-02 15:04:05.000000")}}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("bound date64, large string, list, zoned timestamp:\n got %q\nwant %q", got, want)
			}
		})
	}
}
