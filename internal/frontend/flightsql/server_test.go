package flightsql

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

type passwords map[string]string

func (p passwords) Authenticate(_ context.Context, c Credentials) (string, error) {
	if c.Token != "" && p["token:"+c.Token] != "" {
		return p["token:"+c.Token], nil
	}
	if want, ok := p[c.User]; ok && want == c.Password {
		return c.User, nil
	}
	return "", errors.New("bad credentials")
}

// serve starts a server over backend on a loopback port, closed when t ends.
func serve(t testing.TB, backend query.Backend, opts Options) (*Server, string) {
	t.Helper()
	s, err := NewServer(backend, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return s, l.Addr().String()
}

func startServer(t testing.TB, backend query.Backend, opts Options) *fsql.Client {
	t.Helper()
	_, addr := serve(t, backend, opts)
	c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pending is how many executed results wait for their DoGet.
func (s *Server) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.results)
}

func login(t testing.TB, c *fsql.Client, user, password string) context.Context {
	t.Helper()
	ctx, err := c.Client.AuthenticateBasicToken(context.Background(), user, password)
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	return ctx
}

// fetch reads every batch behind info as text rows, and returns the schema.
func fetch(t testing.TB, ctx context.Context, c *fsql.Client, info *flight.FlightInfo) (*arrow.Schema, [][]string) {
	t.Helper()
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out [][]string
	for r.Next() {
		b := r.RecordBatch()
		for i := 0; i < int(b.NumRows()); i++ {
			var row []string
			for col := 0; col < int(b.NumCols()); col++ {
				row = append(row, b.Column(col).ValueStr(i))
			}
			out = append(out, row)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r.Schema(), out
}

func query1(t testing.TB, ctx context.Context, c *fsql.Client, sql string) [][]string {
	t.Helper()
	info, err := c.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	_, rows := fetch(t, ctx, c, info)
	return rows
}

func TestStatementsOnMariaDB(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	c := startServer(t, backend, Options{Auth: passwords{"alice": "pw"}})
	ctx := login(t, c, "alice", "pw")
	if got := query1(t, ctx, c, "SELECT 40+2 AS answer"); fmt.Sprint(got) != "[[42]]" {
		t.Fatalf("select: %v", got)
	}
	if req := backend.LastRequest(t); req.User != "alice" || req.Protocol != query.ProtocolFlightSQL {
		t.Fatalf("request %+v", req)
	}
	if _, err := c.ExecuteUpdate(ctx, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(8,2))"); err != nil {
		t.Fatal(err)
	}
	n, err := c.ExecuteUpdate(ctx, "INSERT INTO t VALUES (1, 'one', 1.50), (2, 'two', NULL)")
	if err != nil || n != 2 {
		t.Fatalf("insert: %d %v", n, err)
	}
	info, err := c.Execute(ctx, "SELECT id, name, amount FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
	if err != nil || schema.Field(2).Type.String() != "decimal(8, 2)" {
		t.Fatalf("FlightInfo schema %v %v", schema, err)
	}
	_, rows := fetch(t, ctx, c, info)
	if fmt.Sprint(rows) != "[[1 one 1.5] [2 two (null)]]" {
		t.Fatalf("rows %v", rows)
	}
	// A ticket is good once.
	if r, err := c.DoGet(ctx, info.Endpoint[0].Ticket); err == nil {
		r.Next()
		err = r.Err()
		if status.Code(err) != codes.NotFound {
			t.Fatalf("second DoGet: %v", err)
		}
	}

	// Prepared statements: bind, execute, update, close.
	prep, err := c.Prepare(ctx, "SELECT name FROM t WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	prep.SetParameters(paramBatch(t, 2))
	info, err = prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := fetch(t, ctx, c, info); fmt.Sprint(rows) != "[[two]]" {
		t.Fatalf("prepared rows %v", rows)
	}
	if req := backend.LastRequest(t); fmt.Sprint(req.Args) != "[2]" {
		t.Fatalf("prepared args %v", req.Args)
	}
	if err := prep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	upd, err := c.Prepare(ctx, "UPDATE t SET name = 'x' WHERE id >= ?")
	if err != nil {
		t.Fatal(err)
	}
	upd.SetParameters(paramBatch(t, 1))
	if n, err := upd.ExecuteUpdate(ctx); err != nil || n != 2 {
		t.Fatalf("prepared update: %d %v", n, err)
	}
	upd.Close(ctx)

	// Metadata from information_schema.
	info, err = c.GetCatalogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := fetch(t, ctx, c, info); fmt.Sprint(rows) != "[[def]]" {
		t.Fatalf("catalogs %v", rows)
	}
	info, err = c.GetDBSchemas(ctx, &fsql.GetDBSchemasOpts{DbSchemaFilterPattern: &dbName})
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := fetch(t, ctx, c, info); fmt.Sprint(rows) != "[[def "+dbName+"]]" {
		t.Fatalf("schemas %v", rows)
	}
	pattern := "_"
	info, err = c.GetTables(ctx, &fsql.GetTablesOpts{DbSchemaFilterPattern: &dbName, TableNameFilterPattern: &pattern, TableTypes: []string{"BASE TABLE"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := fetch(t, ctx, c, info); fmt.Sprint(rows) != "[[def "+dbName+" t BASE TABLE]]" {
		t.Fatalf("tables %v", rows)
	}
}

func paramBatch(t testing.TB, v int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "p1", Type: arrow.PrimitiveTypes.Int64}}, nil))
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(v)
	return b.NewRecordBatch()
}

func TestErrorsAndAuth(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	backend := frontendtest.NewBackend(eng)
	c := startServer(t, backend, Options{Auth: passwords{"alice": "pw", "token:k3y": "bot"}})
	if _, err := c.Execute(context.Background(), "SELECT 1"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no credentials: %v", err)
	}
	if _, err := c.Client.AuthenticateBasicToken(context.Background(), "alice", "wrong"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("wrong password: %v", err)
	}
	// An API token the Authenticator knows works without a handshake.
	apiCtx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer k3y")
	if got := query1(t, apiCtx, c, "SELECT 1"); fmt.Sprint(got) != "[[1]]" {
		t.Fatal(got)
	}
	if req := backend.LastRequest(t); req.User != "bot" {
		t.Fatalf("token user %q", req.User)
	}
	routed := metadata.AppendToOutgoingContext(apiCtx, "x-queryflux-tags", "etl, nightly", "x-api-key", "s3cr3t", "x-team", "data")
	query1(t, routed, c, "SELECT 1")
	if req := backend.LastRequest(t); strings.Join(req.Tags, ",") != "etl,nightly" || req.Headers["x-team"] != "data" || req.Headers["x-api-key"] != "" {
		t.Fatalf("routing metadata: tags %v headers %v", req.Tags, req.Headers)
	}
	// Basic credentials on a call, without a handshake.
	basicCtx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:pw")))
	if got := query1(t, basicCtx, c, "SELECT 2"); fmt.Sprint(got) != "[[2]]" {
		t.Fatal(got)
	}
	ctx := login(t, c, "alice", "pw")
	info, err := c.GetTableTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := fetch(t, ctx, c, info); !strings.Contains(fmt.Sprint(rows), "BASE TABLE") {
		t.Fatalf("table types %v", rows)
	}
	_, err = c.Execute(ctx, "SELEC 1")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "[42000]") {
		t.Fatalf("syntax error: %v", err)
	}
	backend.SetReady(false)
	if _, err := c.Execute(ctx, "SELECT 1"); status.Code(err) != codes.Unavailable {
		t.Fatalf("not configured: %v", err)
	}
}

func TestArrowTypesPassThrough(t *testing.T) {
	c := startServer(t, frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	ctx := context.Background()
	info, err := c.Execute(ctx, "types")
	if err != nil {
		t.Fatal(err)
	}
	schema, rows := fetch(t, ctx, c, info)
	want, batch := frontendtest.AllTypes()
	defer batch.Release()
	if !schema.Equal(want) {
		t.Fatalf("schema\n got %s\nwant %s", schema, want)
	}
	for c := 0; c < int(batch.NumCols()); c++ {
		if rows[0][c] != batch.Column(c).ValueStr(0) || rows[1][c] != batch.Column(c).ValueStr(1) {
			t.Errorf("column %s: %q/%q", schema.Field(c).Name, rows[0][c], rows[1][c])
		}
	}
}

// TestUnfetchedResultsExpire: a result nobody fetches is dropped after ResultTTL, freeing its
// engine query.
func TestUnfetchedResultsExpire(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	s, addr := serve(t, frontendtest.NewBackend(eng), Options{ResultTTL: 200 * time.Millisecond})
	c := dialFlight(t, addr)
	ctx := context.Background()
	info, err := c.Execute(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); s.pending() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) { // a hang guard, far beyond ResultTTL
			t.Fatal("the unfetched result was not dropped")
		}
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err == nil {
		r.Next()
		err = r.Err()
	}
	if status.Code(err) != codes.NotFound {
		t.Fatalf("DoGet after expiry: %v", err)
	}
}

func TestServeAfterCloseReturns(t *testing.T) {
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Serve after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve after Close did not return")
	}
}

// TestDoGetCancelledBeforeItsTicket: a DoGet whose client cancels it before the server reads
// its ticket takes nothing (gRPC hands a reset call's request to no handler, so the server
// cannot know which result it named): the ticket still fetches the whole result. Such a result
// is freed by CancelFlightInfo, the end of the client's connection, or ResultTTL.
func TestDoGetCancelledBeforeItsTicket(t *testing.T) {
	conn, err := grpc.NewClient(serveOn(t, Options{}), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := &fsql.Client{Client: flight.NewClientFromConn(conn, nil)}
	ctx := context.Background()
	info, err := c.Execute(ctx, "types")
	if err != nil {
		t.Fatal(err)
	}
	callCtx, cancel := context.WithCancel(ctx)
	// The call's headers go out; its ticket never does.
	if _, err := conn.NewStream(callCtx, &grpc.StreamDesc{ServerStreams: true}, "/arrow.flight.protocol.FlightService/DoGet"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, rows := fetch(t, ctx, c, info); len(rows) != 2 {
		t.Fatalf("rows after a cancelled DoGet: %v", rows)
	}
}
