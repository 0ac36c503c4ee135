package flightsql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
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

// failingRows is a statement without rows (no schema) whose end fails.
type failingRows struct{ err error }

func (r failingRows) Schema() *arrow.Schema                           { return nil }
func (r failingRows) Next(context.Context) (arrow.RecordBatch, error) { return nil, r.err }
func (r failingRows) Tag() string                                     { return "" }
func (r failingRows) Close() error                                    { return nil }

// TestEngineAnswersAsClientsSeeThem: what a client gets for each kind of engine answer: a
// statement without rows is an empty result, and errors keep their gRPC code or get one.
func TestEngineAnswersAsClientsSeeThem(t *testing.T) {
	eng := frontendtest.FuncEngine(func(ctx context.Context, q *query.Request) (query.Rows, error) {
		switch q.SQL {
		case "create":
			return engine.TagRows("CREATE TABLE"), nil
		case "create fails late":
			return failingRows{&query.Error{Code: "42P07", Message: "relation exists"}}, nil
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
	for sql, want := range map[string]codes.Code{
		"create fails late": codes.InvalidArgument, "denied": codes.PermissionDenied,
		"cancelled": codes.Canceled, "timed out": codes.DeadlineExceeded, "other": codes.Internal,
	} {
		if _, err := c.Execute(ctx, sql); status.Code(err) != want {
			t.Errorf("%s: %v, want %s", sql, err, want)
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
