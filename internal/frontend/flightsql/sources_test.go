package flightsql

import (
	"context"
	"net"
	"testing"

	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestOneSourceCannotFillTheListener: a source (127.0.0.1) opening idle sockets up to the
// connection limit holds only its share of it (gRPC logs in per call: a connection counts
// until a call on it logged in); another source's client (127.0.0.2) runs a query meanwhile (before:
// Unavailable until the first source's sockets timed out).
func TestOneSourceCannotFillTheListener(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{ConnectionsMax: 8}})
	frontendtest.IdleSockets(t, "127.0.0.1", addr, 8)
	c := clientFrom(t, addr, "127.0.0.2")
	if _, err := c.Execute(context.Background(), "SELECT 1"); err != nil {
		t.Fatalf("another source's query, with the first source's sockets open: %v", err)
	}
}

// clientFrom is a Flight SQL client of addr dialing from the loopback address src, closed when
// t ends.
func clientFrom(t *testing.T, addr, src string) *fsql.Client {
	t.Helper()
	c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return frontendtest.DialerFrom(src).DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLoggedInConnectionsLeaveTheSourcesShare: a source's share bounds its connections before
// login only. One source (a sidecar's application, all on loopback) keeps more connections
// than its share (4 of 8) open, each after a call that logged in, and each gets in.
func TestLoggedInConnectionsLeaveTheSourcesShare(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{ConnectionsMax: 8}})
	for i := range 7 {
		if _, err := clientFrom(t, addr, "127.0.0.1").Execute(context.Background(), "SELECT 1"); err != nil {
			t.Fatalf("connection %d of one source, the earlier ones logged in and open: %v", i+1, err)
		}
	}
}
