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
	c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return frontendtest.DialerFrom("127.0.0.2").DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Execute(context.Background(), "SELECT 1"); err != nil {
		t.Fatalf("another source's query, with the first source's sockets open: %v", err)
	}
}
