package flightsql

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// fuzzCommands are the messages a Flight SQL client can put in a descriptor's or ticket's Any.
var fuzzCommands = []proto.Message{
	&pb.CommandStatementQuery{}, &pb.CommandStatementUpdate{}, &pb.CommandStatementSubstraitPlan{},
	&pb.CommandPreparedStatementQuery{}, &pb.CommandPreparedStatementUpdate{}, &pb.CommandStatementIngest{},
	&pb.TicketStatementQuery{}, &pb.CommandGetCatalogs{}, &pb.CommandGetDbSchemas{}, &pb.CommandGetTables{},
	&pb.CommandGetTableTypes{}, &pb.CommandGetXdbcTypeInfo{}, &pb.CommandGetSqlInfo{},
	&pb.CommandGetPrimaryKeys{}, &pb.CommandGetExportedKeys{}, &pb.CommandGetImportedKeys{},
	&pb.CommandGetCrossReference{},
}

// fuzzActions are the action types a Flight SQL client can send.
var fuzzActions = []string{
	fsql.CreatePreparedStatementActionType, fsql.ClosePreparedStatementActionType,
	fsql.CreatePreparedSubstraitPlanActionType, fsql.CancelQueryActionType, fsql.BeginSavepointActionType,
	fsql.BeginTransactionActionType, fsql.EndTransactionActionType, fsql.EndSavepointActionType,
	flight.CancelFlightInfoActionType, flight.RenewFlightEndpointActionType, flight.SetSessionOptionsActionType,
	flight.GetSessionOptionsActionType, flight.CloseSessionActionType,
}

// fuzzHandle is a prepared statement the fuzz server holds, so that DoPut and GetFlightInfo
// for a prepared statement reach parameter decoding.
const fuzzHandle = "h"

// anyOf is cmd's message packed in an Any whose value is value: the bytes a client puts in a
// descriptor, ticket or action. kind beyond the commands is value itself, not an Any.
func anyOf(kind uint8, value []byte) []byte {
	if int(kind) >= len(fuzzCommands) {
		return value
	}
	a := &anypb.Any{TypeUrl: "type.googleapis.com/" + string(proto.MessageName(fuzzCommands[kind])), Value: value}
	b, _ := proto.Marshal(a)
	return b
}

// FuzzFlightCommands sends a command of every kind with arbitrary bytes (and arbitrary bytes as
// the Any itself) through GetFlightInfo, GetSchema, DoGet, DoAction and DoPut, the DoPut with
// two arbitrary IPC messages after the descriptor, over a real gRPC connection. It is judged by
// panics alone: every call must end, and no handler (nor a goroutine one starts) may panic.
func FuzzFlightCommands(f *testing.F) {
	prepared, _ := proto.Marshal(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: []byte(fuzzHandle)})
	query, _ := proto.Marshal(&pb.CommandStatementQuery{Query: "select 1"})
	tables, _ := proto.Marshal(&pb.CommandGetTables{IncludeSchema: true, TableTypes: []string{"TABLE"}})
	schema, batch := fuzzParams(f)
	for kind, value := range map[uint8][]byte{0: query, 1: query, 3: prepared, 4: prepared, 9: tables, 12: nil, 99: {0xff, 0x01}} {
		f.Add(kind, value, uint8(0), schema.DataHeader, schema.DataBody, batch.DataHeader, batch.DataBody)
	}
	s, conn := fuzzServer(f)
	client := flight.NewFlightServiceClient(conn)
	// The seeds reach the handlers: a statement runs and parameters bind.
	if _, err := client.GetFlightInfo(context.Background(), &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: anyOf(0, query)}); err != nil {
		f.Fatalf("a statement: %v", err)
	}
	bind := []*flight.FlightData{{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: anyOf(3, prepared)},
		DataHeader: schema.DataHeader, DataBody: schema.DataBody}, batch}
	if err := readDoPut(context.Background(), client, bind); err != nil {
		f.Fatalf("binding parameters: %v", err)
	}
	f.Fuzz(func(t *testing.T, kind uint8, value []byte, action uint8, header1, body1, header2, body2 []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		panicsBefore := s.panics.Load()
		cmd := anyOf(kind, value)
		desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}
		if info, err := client.GetFlightInfo(ctx, desc); err == nil {
			for _, ep := range info.GetEndpoint() {
				readDoGet(ctx, client, ep.GetTicket())
			}
		}
		_, _ = client.GetSchema(ctx, desc)
		readDoGet(ctx, client, &flight.Ticket{Ticket: cmd})
		act := &flight.Action{Type: fuzzActions[int(action)%len(fuzzActions)], Body: value}
		if stream, err := client.DoAction(ctx, act); err == nil {
			for _, err := stream.Recv(); err == nil; _, err = stream.Recv() {
			}
		}
		readDoPut(ctx, client, []*flight.FlightData{{FlightDescriptor: desc, DataHeader: header1, DataBody: body1}, {DataHeader: header2, DataBody: body2}})
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("calls still running after 20s for kind %d, action %d", kind, action)
		}
		if n := s.panics.Load() - panicsBefore; n != 0 {
			t.Fatalf("%d calls panicked for kind %d, action %d (the stack is logged above)", n, kind, action)
		}
	})
}

// fuzzServer serves the all-types backend over an in-memory listener, holding fuzzHandle.
func fuzzServer(f *testing.F) (*Server, *grpc.ClientConn) {
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		f.Fatal(err)
	}
	s.prepared[fuzzHandle] = &preparedStatement{sql: "select ?", user: "anonymous"}
	l := bufconn.Listen(1 << 20)
	go s.Serve(l)
	f.Cleanup(func() { s.Close() })
	conn, err := grpc.NewClient("passthrough:///fuzz", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return l.DialContext(ctx) }))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close() })
	return s, conn
}

// fuzzParams is the schema message and record batch message of one INT64 parameter, as a
// client binding parameters sends them.
func fuzzParams(f *testing.F) (schema, batch *flight.FlightData) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(7)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "p1", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil), []arrow.Array{col}, 1)
	defer rec.Release()
	var c capture
	w := flight.NewRecordWriter(&c, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		f.Fatal(err)
	}
	w.Close()
	return c.sent[0], c.sent[1]
}

// readDoGet reads a DoGet to its end.
func readDoGet(ctx context.Context, client flight.FlightServiceClient, ticket *flight.Ticket) {
	stream, err := client.DoGet(ctx, ticket)
	if err != nil {
		return
	}
	for _, err := stream.Recv(); err == nil; _, err = stream.Recv() {
	}
}

// readDoPut sends msgs as a DoPut and reads its answers to the end.
func readDoPut(ctx context.Context, client flight.FlightServiceClient, msgs []*flight.FlightData) error {
	stream, err := client.DoPut(ctx)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if stream.Send(m) != nil {
			break // the server answered already
		}
	}
	_ = stream.CloseSend()
	for {
		if _, err := stream.Recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}
