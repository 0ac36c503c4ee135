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

// TestLoggedInConnectionsLeaveTheSourcesShare: a source's share bounds its connections before
// login only. One source (a sidecar's application, all on loopback) keeps more connections
// than its share (4 of 8) open, each after a call that logged in, and each gets in.
func TestLoggedInConnectionsLeaveTheSourcesShare(t *testing.T) {
	addr := serveOn(t, Options{Limits: netlimit.Limits{ConnectionsMax: 8}})
	for i := range 7 {
		c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return frontendtest.DialerFrom("127.0.0.1").DialContext(ctx, "tcp", addr)
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Execute(context.Background(), "SELECT 1"); err != nil {
			t.Fatalf("connection %d of one source, the earlier ones logged in and open: %v", i+1, err)
		}
	}
}
