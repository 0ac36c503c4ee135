package flightsql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestParameterCountMismatchIsRefusedOnDuckDB: a prepared statement bound with more parameter
// columns than it has parameters is refused with InvalidArgument naming both counts (DuckDB
// would bind the first and ignore the rest).
func TestParameterCountMismatchIsRefusedOnDuckDB(t *testing.T) {
	cl := startServer(t, engineCore(t, engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"}), Options{Auth: passwords{"alice": "pw"}})
	ctx := login(t, cl, "alice", "pw")
	_, err := executeWith(t, ctx, cl, "SELECT CAST($1 AS INTEGER) + 1 AS n", 41, 7)
	const want = "[42601] wrong number of parameters: the statement has 1, 2 given"
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), want) {
		t.Fatalf("2 values for 1 parameter: %v, want InvalidArgument saying %q", err, want)
	}
}

// TestParameterCountMismatchIsRefusedOnPostgreSQL: the same on PostgreSQL, however the engine
// runs statements (exec_mode: pgx checks the count of the statement it prepared; or, without
// one, PostgreSQL refuses the Bind): InvalidArgument naming both counts, as on DuckDB, for too
// many values and for none; the right count runs.
func TestParameterCountMismatchIsRefusedOnPostgreSQL(t *testing.T) {
	db := pgtest.NewDatabase(t)
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec"} {
		t.Run(mode, func(t *testing.T) {
			spec := engine.Spec{Name: "pg", Kind: "postgres", Endpoint: db, Options: map[string]string{"exec_mode": mode}}
			cl := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, cl, "alice", "pw")
			const stmt = "SELECT CAST($1 AS INTEGER) + 1 AS n"
			for _, c := range []struct {
				args []int32
				want string
			}{
				{[]int32{41, 7}, "[42601] wrong number of parameters: the statement has 1, 2 given"},
				{nil, "[42601] wrong number of parameters: the statement has 1, 0 given"},
			} {
				_, err := executeWith(t, ctx, cl, stmt, c.args...)
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%d values for 1 parameter: %v, want InvalidArgument saying %q", len(c.args), err, c.want)
				}
			}
			if rows, err := executeWith(t, ctx, cl, stmt, 41); err != nil || len(rows) != 1 || rows[0][0] != "42" {
				t.Errorf("1 value for 1 parameter: rows %v, error %v; want 42", rows, err)
			}
		})
	}
}

// executeWith prepares stmt, binds one row of args (as int32 columns; none bound when there are
// none) and runs it, returning its rows or the error of the run.
func executeWith(t *testing.T, ctx context.Context, cl *fsql.Client, stmt string, args ...int32) ([][]string, error) {
	t.Helper()
	prep, err := cl.Prepare(ctx, stmt)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	if len(args) > 0 {
		var fields []arrow.Field
		for i := range args {
			fields = append(fields, arrow.Field{Name: fmt.Sprintf("p%d", i+1), Type: arrow.PrimitiveTypes.Int32})
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
		defer b.Release()
		for i, a := range args {
			b.Field(i).(*array.Int32Builder).Append(a)
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		prep.SetParameters(rec)
	}
	info, err := prep.Execute(ctx)
	if err != nil {
		return nil, err
	}
	_, rows := fetch(t, ctx, cl, info)
	return rows, nil
}
