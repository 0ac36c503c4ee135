package flightsql

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
)

// TestParameterCountMismatchIsRefusedOnDuckDB: a prepared statement bound with more parameter
// columns than it has parameters is refused with InvalidArgument naming both counts (DuckDB
// would bind the first and ignore the rest).
func TestParameterCountMismatchIsRefusedOnDuckDB(t *testing.T) {
	cl := startServer(t, engineCore(t, engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"}), Options{Auth: passwords{"alice": "pw"}})
	ctx := login(t, cl, "alice", "pw")
	prep, err := cl.Prepare(ctx, "SELECT CAST($1 AS INTEGER) + 1 AS n")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "p1", Type: arrow.PrimitiveTypes.Int32}, {Name: "p2", Type: arrow.PrimitiveTypes.Int32}}, nil))
	defer b.Release()
	b.Field(0).(*array.Int32Builder).Append(41)
	b.Field(1).(*array.Int32Builder).Append(7)
	rec := b.NewRecordBatch()
	defer rec.Release()
	prep.SetParameters(rec)
	_, err = prep.Execute(ctx)
	const want = "[42601] wrong number of parameters: the statement has 1, 2 given"
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), want) {
		t.Fatalf("2 values for 1 parameter: %v, want InvalidArgument saying %q", err, want)
	}
}
