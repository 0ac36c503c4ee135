package flightsql

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// rowsPanickingOnNext describe one column, then panic when asked for it: a bug in an engine's
// driver, met in the goroutine DoGet starts to stream the result.
type rowsPanickingOnNext struct{}

func (rowsPanickingOnNext) Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
}
func (rowsPanickingOnNext) Next(context.Context) (arrow.RecordBatch, error) { panic("a bug") }
func (rowsPanickingOnNext) Tag() string                                     { return "" }
func (rowsPanickingOnNext) Close() error                                    { return nil }

// TestPanicWhileStreamingEndsOnlyThatDoGet: a panic in the goroutine streaming a DoGet (outside
// the interceptors' recover) fails that DoGet with Internal, is counted, and the server goes on
// serving (unrecovered, it would end the test binary).
func TestPanicWhileStreamingEndsOnlyThatDoGet(t *testing.T) {
	engine := frontendtest.FuncEngine(func(context.Context, *query.Request) (query.Rows, error) {
		return rowsPanickingOnNext{}, nil
	})
	s, addr := serve(t, frontendtest.NewBackend(engine), Options{})
	c := dialFlight(t, addr)
	ctx := context.Background()
	for i := range 2 {
		info, err := c.Execute(ctx, "select 1")
		if err != nil {
			t.Fatalf("statement %d: %v", i+1, err)
		}
		r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatalf("DoGet %d: %v", i+1, err)
		}
		for r.Next() {
		}
		err = r.Err()
		r.Release()
		if status.Code(err) != codes.Internal {
			t.Fatalf("DoGet %d of a result whose rows panic: %v, want Internal", i+1, err)
		}
	}
	if n := s.panics.Load(); n != 2 {
		t.Fatalf("%d panics counted, want 2", n)
	}
}

// TestLikePatternWithMultiByteCharacters: a catalog filter pattern is matched by characters; a
// character of several bytes (or a byte that is no character) does not break the pattern.
func TestLikePatternWithMultiByteCharacters(t *testing.T) {
	pattern := func(p string) *string { return &p }
	cases := []struct {
		pattern, name string
		match         bool
	}{
		{"é%", "école", true},
		{"_cole", "école", true},
		{"__cole", "école", false},
		{"\\é_", "éa", true},
		{"\xc3%", "école", false},
		{"a\xff", "a\xff", true}, // the same bytes
	}
	for _, c := range cases {
		if got := likeMatcher(pattern(c.pattern))(c.name); got != c.match {
			t.Errorf("%q LIKE %q = %v, want %v", c.name, c.pattern, got, c.match)
		}
	}
}

// schemaFieldsCountAt is where a Schema message header stores its number of fields.
func schemaFieldsCountAt(t *testing.T, header []byte) int {
	w := &fbWalker{b: header, tablesLeft: ipcTablesMax}
	root, _ := w.u32(0)
	msg, err := w.table(root)
	if err != nil {
		t.Fatal(err)
	}
	schema, _, err := w.tableField(msg, 2)
	if err != nil {
		t.Fatal(err)
	}
	at, ok, err := w.ref(schema, 1)
	if err != nil || !ok {
		t.Fatalf("no fields vector: %v", err)
	}
	return at
}

// TestMalformedIPCMessagesAreRefused: DoPut messages whose IPC header declares more fields than
// it holds (arrow-go allocated by the count: 4 billion fields ended the process out of memory),
// a compressed batch (arrow-go inflates it to the size it claims), or a batch declaring 2^40
// rows without columns (the parameter loop ran for ever) are refused with InvalidArgument saying
// what was wrong, and the server goes on.
func TestMalformedIPCMessagesAreRefused(t *testing.T) {
	c := dialFlight(t, serveOn(t, Options{}))
	ctx := context.Background()
	prep, err := c.Prepare(ctx, "select ?")
	if err != nil {
		t.Fatal(err)
	}
	client := c.Client
	hugeSchema := parameterMessages(t, prep.Handle(), int64Batch(1, []byte{1}))
	hugeSchema[0].DataHeader = append([]byte(nil), hugeSchema[0].DataHeader...)
	binary.LittleEndian.PutUint32(hugeSchema[0].DataHeader[schemaFieldsCountAt(t, hugeSchema[0].DataHeader):], 0x7fffffff)
	if err := readDoPut(ctx, client, hugeSchema); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "message 1: malformed Arrow IPC header") {
		t.Fatalf("a schema declaring 2^31 fields: %v, want InvalidArgument naming the malformed header", err)
	}
	compressed := parameterMessagesWith(t, prep.Handle(), int64Batch(1, []byte{1}), ipc.WithZstd())
	if err := readDoPut(ctx, client, compressed); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "compressed record batches are not accepted") {
		t.Fatalf("a compressed batch: %v, want InvalidArgument refusing compression", err)
	}
	noColumns := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1<<40)
	if err := readDoPut(ctx, client, parameterMessages(t, prep.Handle(), noColumns)); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "parameter values in one call") {
		t.Fatalf("a batch of 2^40 rows without columns: %v, want InvalidArgument naming the bound", err)
	}
	if err := readDoPut(ctx, client, parameterMessages(t, prep.Handle(), int64Batch(1, []byte{1}))); err != nil {
		t.Fatalf("well-formed parameters after the refusals: %v", err)
	}
}

// TestCatalogFromAnEngineAnsweringFewerColumns: an engine that answers the information_schema
// queries with fewer columns than asked for fails the metadata call with Internal, naming the
// columns, instead of panicking while building the batch.
func TestCatalogFromAnEngineAnsweringFewerColumns(t *testing.T) {
	engine := frontendtest.FuncEngine(func(context.Context, *query.Request) (query.Rows, error) {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.Append("only")
		col := b.NewArray()
		defer col.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}}, nil)
		return frontendtest.NewRecordRows(schema, "", array.NewRecordBatch(schema, []arrow.Array{col}, 1)), nil
	})
	s, addr := serve(t, frontendtest.NewBackend(engine), Options{})
	c := dialFlight(t, addr)
	ctx := context.Background()
	read := func(info *flight.FlightInfo, err error) error {
		if err != nil {
			return err
		}
		r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return err
		}
		defer r.Release()
		for r.Next() {
		}
		return r.Err()
	}
	if err := read(c.GetDBSchemas(ctx, &fsql.GetDBSchemasOpts{})); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "with 1 columns, not 2") {
		t.Fatalf("schemas from a one-column answer: %v, want Internal naming the columns", err)
	}
	if err := read(c.GetTables(ctx, &fsql.GetTablesOpts{})); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "with 1 columns, not 4") {
		t.Fatalf("tables from a one-column answer: %v, want Internal naming the columns", err)
	}
	if err := read(c.GetTableTypes(ctx)); err != nil {
		t.Fatalf("table types from a one-column answer: %v", err)
	}
	if n := s.panics.Load(); n != 0 {
		t.Fatalf("%d calls panicked", n)
	}
}
