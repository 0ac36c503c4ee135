package flightsql

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/queryflux/queryflux/internal/query"
)

// capture keeps copies of the FlightData messages a flight.Writer sends (it reuses one).
type capture struct{ sent []*flight.FlightData }

func (c *capture) Send(d *flight.FlightData) error {
	c.sent = append(c.sent, proto.Clone(d).(*flight.FlightData))
	return nil
}

// parameterMessages encodes rec as the FlightData a client sends to bind the parameters of
// the prepared statement handle.
func parameterMessages(t *testing.T, handle []byte, rec arrow.RecordBatch) []*flight.FlightData {
	return parameterMessagesWith(t, handle, rec)
}

// parameterMessagesWith is parameterMessages written with opts.
func parameterMessagesWith(t *testing.T, handle []byte, rec arrow.RecordBatch, opts ...ipc.Option) []*flight.FlightData {
	var c capture
	w := flight.NewRecordWriter(&c, append([]ipc.Option{ipc.WithSchema(rec.Schema())}, opts...)...)
	cmd, err := anypb.New(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: desc})
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return c.sent
}

// int64Batch is a batch of one INT64 column of rows rows whose validity bitmap is bitmap,
// which a client building its own messages may make shorter than the rows need.
func int64Batch(rows int, bitmap []byte) arrow.RecordBatch {
	values := memory.NewBufferBytes(make([]byte, 8*rows))
	data := array.NewData(arrow.PrimitiveTypes.Int64, rows, []*memory.Buffer{memory.NewBufferBytes(bitmap), values}, nil, 1, 0)
	defer data.Release()
	col := array.MakeFromData(data)
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "p1", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{col}, int64(rows))
}

// unionBatch is one row of a dense union of INT64 (type code 0, as Flight SQL clients send
// parameters) whose type code is code.
func unionBatch(code int8) arrow.RecordBatch {
	child := array.NewInt64Builder(memory.DefaultAllocator)
	child.Append(42)
	values := child.NewArray()
	defer values.Release()
	typ := arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, []arrow.UnionTypeCode{0})
	u := array.NewDenseUnion(typ, 1, []arrow.Array{values}, memory.NewBufferBytes([]byte{byte(code)}), memory.NewBufferBytes([]byte{0, 0, 0, 0}), 0)
	defer u.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "p1", Type: typ}}, nil), []arrow.Array{u}, 1)
}

// TestMalformedDoPutIsRefused: a DoPut whose first message has no FlightDescriptor, or whose
// parameter batch has a validity bitmap shorter than its rows or a union type code naming no
// member (bytes only a client that builds its own messages sends), is refused with
// InvalidArgument saying what was wrong, and the server goes on. Each once panicked in a gRPC
// handler, which ends the whole process.
func TestMalformedDoPutIsRefused(t *testing.T) {
	c := dialFlight(t, serveOn(t, Options{}))
	ctx := context.Background()
	prep, err := c.Prepare(ctx, "select ?")
	if err != nil {
		t.Fatal(err)
	}
	put := func(msgs []*flight.FlightData) error {
		stream, err := c.Client.DoPut(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if err := stream.Send(m); err != nil {
				break // the server answered already
			}
		}
		stream.CloseSend()
		for {
			if _, err := stream.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	noDescriptor := parameterMessages(t, prep.Handle(), int64Batch(1, []byte{1}))
	noDescriptor[0].FlightDescriptor = nil
	if err := put(noDescriptor); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "FlightDescriptor") {
		t.Fatalf("DoPut without a descriptor: %v, want InvalidArgument naming the FlightDescriptor", err)
	}
	shortBitmap := parameterMessages(t, prep.Handle(), int64Batch(64, []byte{0xfe}))
	if err := put(shortBitmap); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "parameter 1") {
		t.Fatalf("a bitmap shorter than the batch: %v, want InvalidArgument naming parameter 1", err)
	}
	if err := put(parameterMessages(t, prep.Handle(), unionBatch(5))); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "parameter 1: row 1: type code 5 names no member of the union") {
		t.Fatalf("a union type code naming no member: %v, want InvalidArgument naming it", err)
	}
	if err := put(parameterMessages(t, prep.Handle(), unionBatch(0))); err != nil {
		t.Fatalf("a well-formed union: %v", err)
	}
	if err := put(parameterMessages(t, prep.Handle(), int64Batch(1, []byte{1}))); err != nil {
		t.Fatalf("well-formed parameters after the refusals: %v", err)
	}
}

// panickingBackend panics on every statement: a bug, as the guard sees one.
type panickingBackend struct{}

func (panickingBackend) Ready() bool { return true }

func (panickingBackend) Execute(context.Context, *query.Request) (query.Rows, error) {
	panic("a bug")
}

// TestPanickingCallEndsOnlyThatCall: a call whose handler panics fails with Internal, counted,
// and the server goes on serving (gRPC itself would let the panic end the process).
func TestPanickingCallEndsOnlyThatCall(t *testing.T) {
	s, addr := serve(t, panickingBackend{}, Options{})
	c := dialFlight(t, addr)
	for range 2 {
		if _, err := c.Execute(context.Background(), "select 1"); status.Code(err) != codes.Internal {
			t.Fatalf("a panicking statement: %v, want Internal", err)
		}
	}
	// A stream call (DoPut) panicking in its handler too.
	if _, err := c.ExecuteUpdate(context.Background(), "delete from t"); status.Code(err) != codes.Internal {
		t.Fatalf("a panicking update: %v, want Internal", err)
	}
	if n := s.panics.Load(); n != 3 {
		t.Fatalf("%d panics counted, want 3", n)
	}
}
