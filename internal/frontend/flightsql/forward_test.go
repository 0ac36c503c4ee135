package flightsql

import (
	"context"
	"testing"

	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

func TestTicketNamesItsOwnerAndForgedHopsAreRefused(t *testing.T) {
	fwd := frontendtest.Forwarder(t, "w1", "s3cret")
	eng, _, _ := frontendtest.MariaDB(t)
	c := startServer(t, frontendtest.NewBackend(eng), Options{Forward: fwd})
	ctx := context.Background()
	info, err := c.Execute(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	forged := metadata.AppendToOutgoingContext(ctx, "x-queryflux-hop", "1", "x-queryflux-peer-secret", "wrong", headerUser, "root")
	if _, err := c.DoGet(forged, info.Endpoint[0].Ticket); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("DoGet claiming to be forwarded without the secret: %v", err)
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	tk, err := fsql.GetStatementQueryTicket(info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if owner, ok := ownerOfHandle(string(tk.GetStatementHandle())); !ok || owner != forward.OwnerID("w1") {
		t.Fatalf("the ticket names owner %q (%v), want w1's", owner, ok)
	}
}
