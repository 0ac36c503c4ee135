package flightsql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestServerLifecycle: a server needs a backend, serves one listener, reports a listener that
// fails, and Close stops the engine query of every result nobody fetched.
func TestServerLifecycle(t *testing.T) {
	if _, err := NewServer(nil, Options{}); err == nil {
		t.Fatal("NewServer without a backend succeeded")
	}
	ended := make(chan error, 4)
	s, err := NewServer(frontendtest.NewBackend(blockingEngine(ended, true)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	c := dialFlight(t, l.Addr().String())
	if _, err := c.Execute(context.Background(), "SELECT forever"); err != nil {
		t.Fatal(err)
	}
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if err := s.Serve(l2); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a second Serve: %v", err)
	}
	s.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the unfetched result's query ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close left the unfetched result's query running")
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve ended by Close returned %v", err)
	}

	// A listener that fails under Serve is reported.
	s2, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	l3, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l3.Close()
	if err := s2.Serve(l3); err == nil {
		t.Fatal("Serve on a closed listener returned nil")
	}
}

// TestStatementStartedPastTheClientsDeadline: a statement whose engine answers only after the
// client gave up is dropped at once (its query stopped, nothing left waiting for a DoGet).
func TestStatementStartedPastTheClientsDeadline(t *testing.T) {
	ended := make(chan error, 1)
	late := frontendtest.FuncEngine(func(ctx context.Context, q *query.Request) (query.Rows, error) {
		<-ctx.Done() // the client's deadline passes while the statement starts
		return &blockingRows{ctx: context.Background(), ended: ended}, nil
	})
	s, addr := serve(t, frontendtest.NewBackend(late), Options{})
	c := dialFlight(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Execute(ctx, "SELECT late"); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a statement past its deadline: %v", err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the late result was never closed")
	}
	if n := s.pending(); n != 0 {
		t.Fatalf("%d results wait for a DoGet nobody will send", n)
	}
}

// TestRoutingHeadersAreOnlyXMetadata: only x-* metadata (never credentials) reaches routing.
func TestRoutingHeadersAreOnlyXMetadata(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	_, addr := serve(t, backend, Options{})
	c := dialFlight(t, addr)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-team", "data", "team", "other", "x-session-token", "t0k")
	info, err := c.Execute(ctx, "types")
	if err != nil {
		t.Fatal(err)
	}
	fetch(t, ctx, c, info)
	h := backend.LastRequest(t).Headers
	if h["x-team"] != "data" || len(h) != 1 {
		t.Fatalf("routing headers %v, want only x-team", h)
	}
}

// failingRows is a statement without rows (no schema) whose end fails; closed is closed by Close.
type failingRows struct {
	err    error
	closed chan<- struct{}
}

// failsAtEnd fails with division_by_zero where its rows would end.
type failsAtEnd struct{ query.Rows }

func (r failsAtEnd) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := r.Rows.Next(ctx)
	if err == io.EOF {
		return nil, &query.Error{Code: "22012", Message: "division by zero"}
	}
	return b, err
}

func (r failingRows) Schema() *arrow.Schema                           { return nil }
func (r failingRows) Next(context.Context) (arrow.RecordBatch, error) { return nil, r.err }
func (r failingRows) Tag() string                                     { return "" }
func (r failingRows) Close() error                                    { r.closed <- struct{}{}; return nil }

// closingRows closes closed when it is closed.
type closingRows struct {
	query.Rows
	closed chan struct{}
}

func (r closingRows) Close() error { close(r.closed); return r.Rows.Close() }

// TestEngineAnswersAsClientsSeeThem: what a client gets for each kind of engine answer: a
// statement without rows is an empty result, and errors keep their gRPC code or get one.
func TestEngineAnswersAsClientsSeeThem(t *testing.T) {
	lateClosed, fetchedClosed := make(chan struct{}, 8), make(chan struct{})
	eng := frontendtest.FuncEngine(func(ctx context.Context, q *query.Request) (query.Rows, error) {
		switch q.SQL {
		case "create":
			return engine.TagRows("CREATE TABLE"), nil
		case "two rows":
			schema, batch := frontendtest.AllTypes()
			defer batch.Release()
			return closingRows{frontendtest.NewRecordRows(schema, "", batch), fetchedClosed}, nil
		case "fails midway":
			schema, batch := frontendtest.AllTypes()
			defer batch.Release()
			return failsAtEnd{frontendtest.NewRecordRows(schema, "", batch)}, nil
		case "create fails late":
			return failingRows{&query.Error{Code: "42P07", Message: "relation exists"}, lateClosed}, nil
		case "denied":
			return nil, status.Error(codes.PermissionDenied, "not yours")
		case "cancelled":
			return nil, fmt.Errorf("engine: %w", context.Canceled)
		case "timed out":
			return nil, fmt.Errorf("engine: %w", context.DeadlineExceeded)
		}
		return nil, errors.New("disk on fire")
	})
	c := dialFlight(t, serveOn2(t, eng))
	ctx := context.Background()
	info, err := c.Execute(ctx, "create")
	if err != nil {
		t.Fatal(err)
	}
	if schema, rows := fetch(t, ctx, c, info); schema.NumFields() != 0 || len(rows) != 0 {
		t.Fatalf("a statement without rows: %v %v", schema, rows)
	}
	// A fetched result is closed once its stream ends.
	info, err = c.Execute(ctx, "two rows")
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := fetch(t, ctx, c, info); len(rows) != 2 {
		t.Fatalf("two rows: %v", rows)
	}
	select {
	case <-fetchedClosed:
	case <-time.After(10 * time.Second):
		t.Error("a fetched result was never closed")
	}
	for sql, want := range map[string]codes.Code{
		"create fails late": codes.InvalidArgument, "denied": codes.PermissionDenied,
		"cancelled": codes.Canceled, "timed out": codes.DeadlineExceeded, "other": codes.Internal,
	} {
		if _, err := c.Execute(ctx, sql); status.Code(err) != want {
			t.Errorf("%s: %v, want %s", sql, err, want)
		}
	}
	// Updates report the engine's errors, early or late.
	for sql, want := range map[string]codes.Code{"create fails late": codes.InvalidArgument, "denied": codes.PermissionDenied} {
		if _, err := c.ExecuteUpdate(ctx, sql); status.Code(err) != want {
			t.Errorf("update %s: %v, want %s", sql, err, want)
		}
	}
	// An error after some rows reaches the client after those rows.
	info, err = c.Execute(ctx, "fails midway")
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r.Next() {
		n += int(r.RecordBatch().NumRows())
	}
	if err := r.Err(); n != 2 || status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "22012") {
		t.Errorf("a result failing after its rows: %d rows, then %v", n, err)
	}
	r.Release()
	// The late-failing statement's rows were closed, as a query and as an update, not left to
	// the garbage collector.
	for range 2 {
		select {
		case <-lateClosed:
		case <-time.After(10 * time.Second):
			t.Fatal("the rows of a statement failing late were never closed")
		}
	}
}

func serveOn2(t *testing.T, e query.Engine) string {
	_, addr := serve(t, frontendtest.NewBackend(e), Options{})
	return addr
}

// TestExpiryKeepsFreshResultsAndTokens: a sweep drops only the results older than ResultTTL
// (stopping their queries) and the tokens past their time.
func TestExpiryKeepsFreshResultsAndTokens(t *testing.T) {
	ended := make(chan error, 4)
	s, addr := serve(t, frontendtest.NewBackend(blockingEngine(ended, true)), Options{Auth: passwords{"alice": "pw"}, ResultTTL: time.Hour, TokenTTL: time.Hour})
	c := dialFlight(t, addr)
	ctx := login(t, c, "alice", "pw")
	if _, err := c.Execute(ctx, "SELECT forever"); err != nil {
		t.Fatal(err)
	}
	s.expireOnce(time.Now().Add(30 * time.Minute))
	if s.pending() != 1 {
		t.Fatal("a sweep dropped a result younger than ResultTTL")
	}
	select {
	case err := <-ended:
		t.Fatalf("the fresh result's query ended: %v", err)
	default:
	}
	if _, err := c.Execute(ctx, "SELECT forever"); err != nil {
		t.Fatalf("a token younger than TokenTTL: %v", err)
	}
	s.expireOnce(time.Now().Add(2 * time.Hour))
	if s.pending() != 0 {
		t.Fatal("a sweep kept results older than ResultTTL")
	}
	for range 2 {
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("an expired result's query ended with %v", err)
		}
	}
	s.mu.Lock()
	tokens := len(s.tokens)
	s.mu.Unlock()
	if tokens != 0 {
		t.Fatalf("%d expired tokens kept", tokens)
	}
}

// TestClientGoneDropsItsResults: results a client executed and never fetched are dropped (their
// queries stopped) when its connection ends, not when they expire.
func TestClientGoneDropsItsResults(t *testing.T) {
	ended := make(chan error, 4)
	s, addr := serve(t, frontendtest.NewBackend(blockingEngine(ended, true)), Options{ResultTTL: time.Hour})
	other := dialFlight(t, addr)
	kept, err := other.Execute(context.Background(), "SELECT forever")
	if err != nil {
		t.Fatal(err)
	}
	c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(context.Background(), "SELECT forever"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the gone client's query ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the gone client's result was kept")
	}
	if n := s.pending(); n != 1 {
		t.Fatalf("%d results pending, want the other client's one", n)
	}
	// and that one is the other client's.
	if res, err := other.CancelFlightInfo(context.Background(), &flight.CancelFlightInfoRequest{Info: kept}); err != nil || res.Status != flight.CancelStatusCancelled {
		t.Fatalf("the other client's result: %v %v", res, err)
	}
}
