package flightsql

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

func serveOn(t *testing.T, opts Options) string {
	t.Helper()
	_, addr := serve(t, frontendtest.NewBackend(frontendtest.AllTypesEngine()), opts)
	return addr
}

func dialFlight(t *testing.T, addr string) *fsql.Client {
	t.Helper()
	c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMessageLargerThanLimitBeforeAuth: a message over MessageBytesMax is refused by gRPC
// (ResourceExhausted) before any authentication looks at it.
func TestMessageLargerThanLimitBeforeAuth(t *testing.T) {
	addr := serveOn(t, Options{Auth: passwords{"alice": "pw"}, MessageBytesMax: 64 << 10})
	c := dialFlight(t, addr)
	_, err := c.Execute(context.Background(), "SELECT '"+strings.Repeat("x", 100<<10)+"'")
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("100 KB statement: %v, want ResourceExhausted", err)
	}
	_, err = c.Execute(context.Background(), "SELECT 1")
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("small statement without credentials: %v, want Unauthenticated", err)
	}
}

// TestConnectionsMax: beyond ConnectionsMax, a client's connection is closed (Unavailable);
// once a client leaves, another gets in.
func TestConnectionsMax(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{ConnectionsMax: 1}})
	first := dialFlight(t, addr)
	if _, err := first.Execute(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	second := dialFlight(t, addr)
	if _, err := second.Execute(context.Background(), "SELECT 1"); status.Code(err) != codes.Unavailable {
		t.Fatalf("second connection: %v, want Unavailable", err)
	}
	first.Close()
	for { // the server sees the close, then frees the slot
		third := dialFlight(t, addr)
		_, err := third.Execute(context.Background(), "SELECT 1")
		third.Close()
		if err == nil {
			break
		}
		if status.Code(err) != codes.Unavailable {
			t.Fatal(err)
		}
	}
}

// TestHandshakeDeadline: a TCP client that never starts HTTP/2 is disconnected.
func TestHandshakeDeadline(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{HandshakeTimeout: 100 * time.Millisecond}})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("the server kept a silent connection open: %v", err)
	}
}
