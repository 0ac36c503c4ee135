package flightsql

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// fakeFlightOwner answers at an address the peer list still gives to w2: a DoGet gets made-up
// rows under a made-up owner proof.
type fakeFlightOwner struct {
	flight.BaseFlightServer
	got int
}

func (o *fakeFlightOwner) DoGet(_ *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	o.got++
	_ = stream.SetHeader(metadata.Pairs(strings.ToLower(forward.HeaderOwnerProof), strings.Repeat("cd", 32)))
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	bld.Field(0).(*array.StringBuilder).Append("made-up rows")
	rec := bld.NewRecordBatch()
	defer rec.Release()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema))
	defer w.Close()
	return w.Write(rec)
}

type flightPeers []workerapi.Peer

func (p flightPeers) Peers() []workerapi.Peer          { return p }
func (flightPeers) RefreshPeers(context.Context) error { return nil }

// flightWorker starts a Flight SQL server for worker name on a loopback port, its forwarder
// listing peers and advertising its own address. Its client and address.
func flightWorker(t *testing.T, name string, peers flightPeers) (*fsql.Client, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := "grpc+tcp://" + l.Addr().String()
	fwd, err := forward.New(forward.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Name: name, Secret: "flight-stale-secret",
		Directory: peers, Client: forward.NewClient(nil), Advertised: func() map[string]string { return map[string]string{forward.FlightSQL: ep} }})
	if err != nil {
		t.Fatal(err)
	}
	eng, _, _ := frontendtest.MariaDB(t)
	s, err := NewServer(frontendtest.NewBackend(eng), Options{Forward: fwd})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	c, err := fsql.NewClient(l.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ep
}

// TestAFlightTicketFetchedFromAStalePeerAddressGetsNoMadeUpRows: w1's peer list still names w2 at
// an address a host now answers as w2 would (a made-up owner proof, made-up rows). A DoGet of a
// ticket w2 issued, made at w1, gets NotFound (as for a gone owner), not that host's rows. From
// the genuine w2 the same ticket's rows come through w1.
func TestAFlightTicketFetchedFromAStalePeerAddressGetsNoMadeUpRows(t *testing.T) {
	gs := grpc.NewServer()
	fake := &fakeFlightOwner{}
	flight.RegisterFlightServiceServer(gs, fake)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(l)
	t.Cleanup(gs.Stop)

	c2, ep2 := flightWorker(t, "w2", nil)
	ctx := context.Background()
	info, err := c2.Execute(ctx, "SELECT 'owner rows' AS v")
	if err != nil {
		t.Fatal(err)
	}
	ticket := info.Endpoint[0].Ticket

	stale, _ := flightWorker(t, "w1", flightPeers{{Name: "w2", Healthy: true, Endpoints: map[string]string{forward.FlightSQL: "grpc+tcp://" + l.Addr().String()}}})
	r, err := stale.DoGet(ctx, ticket)
	if err == nil {
		for r.Next() {
			t.Errorf("the ticket fetched through w1 from the host at w2's old address: %v", r.RecordBatch())
		}
		err = r.Err()
		r.Release()
	}
	if status.Code(err) != codes.NotFound || fake.got != 1 {
		t.Fatalf("the ticket fetched through w1 from the host at w2's old address: %v (the host got %d DoGets); want NotFound", err, fake.got)
	}

	c1, _ := flightWorker(t, "w1", flightPeers{{Name: "w2", Healthy: true, Endpoints: map[string]string{forward.FlightSQL: ep2}}})
	r, err = c1.DoGet(ctx, ticket)
	if err != nil {
		t.Fatalf("the ticket fetched through w1 from the genuine w2: %v", err)
	}
	defer r.Release()
	if !r.Next() || r.RecordBatch().Column(0).(*array.String).Value(0) != "owner rows" {
		t.Fatalf("the ticket fetched through w1 from the genuine w2: %v", r.Err())
	}
}

// peekingFlightOwner answers at a stale peer address and keeps what each DoGet showed it: the
// ticket's bytes and the call's metadata.
type peekingFlightOwner struct {
	flight.BaseFlightServer
	seen   []string
	ticket *flight.Ticket
	md     metadata.MD
}

func (o *peekingFlightOwner) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	var b strings.Builder // metadata.MD's own String redacts
	for k, vs := range md {
		fmt.Fprintf(&b, " %s=%q", k, vs)
	}
	o.seen = append(o.seen, string(t.GetTicket())+b.String())
	o.ticket, o.md = t, md.Copy()
	return status.Errorf(codes.NotFound, "no ticket %q of%s", t.GetTicket(), b.String())
}

// TestAStalePeerAddressReadsNoTicketNorUserOfAFlightDoGet: w1's peer list still names w2 at an
// address a host now answers. Alice's DoGet at w1 of a ticket w2 issued her shows that host
// neither the ticket's handle (w2 hands the rows to whoever presents it as alice) nor her name,
// and what the host answers (here both, echoed) reaches her as a plain NotFound; what it read,
// relayed to the genuine w2, gets nothing. Through the genuine w2 alice gets her rows and bob,
// with her ticket, NotFound; a forward as the previous release sent it (handle and user in
// clear) still gets alice hers.
func TestAStalePeerAddressReadsNoTicketNorUserOfAFlightDoGet(t *testing.T) {
	gs := grpc.NewServer()
	host := &peekingFlightOwner{}
	flight.RegisterFlightServiceServer(gs, host)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(l)
	t.Cleanup(gs.Stop)

	as := func(user string) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "x-queryflux-user", user)
	}
	alice, bob := as("alice-payroll"), as("bob")
	c2, ep2 := flightWorker(t, "w2", nil)
	info, err := c2.Execute(alice, "SELECT 'alice rows' AS v")
	if err != nil {
		t.Fatal(err)
	}
	ticket := info.Endpoint[0].Ticket
	tq, err := fsql.GetStatementQueryTicket(ticket)
	if err != nil {
		t.Fatal(err)
	}
	handle := string(tq.GetStatementHandle())
	secretParts := []string{handle, strings.Split(handle, ".")[0], "alice-payroll"}

	stale, _ := flightWorker(t, "w1", flightPeers{{Name: "w2", Healthy: true, Endpoints: map[string]string{forward.FlightSQL: "grpc+tcp://" + l.Addr().String()}}})
	r, err := stale.DoGet(alice, ticket)
	if err == nil {
		for r.Next() {
		}
		err = r.Err()
		r.Release()
	}
	if status.Code(err) != codes.NotFound || len(host.seen) != 1 {
		t.Fatalf("alice's ticket through w1 from the host at w2's old address: %v (the host got %d DoGets); want NotFound", err, len(host.seen))
	}
	for _, part := range secretParts {
		if strings.Contains(host.seen[0], part) {
			t.Errorf("the host at w2's old address read %q: %s", part, host.seen[0])
		}
		if strings.Contains(err.Error(), part) {
			t.Errorf("alice's NotFound echoes %q: %v", part, err)
		}
	}

	// The host relays what it got, as it got it, to w2's real address.
	conn2, err := grpc.NewClient(strings.TrimPrefix(ep2, "grpc+tcp://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	var relayed []string
	for k, vs := range host.md {
		if strings.HasPrefix(k, "x-queryflux-") {
			for _, v := range vs {
				relayed = append(relayed, k, v)
			}
		}
	}
	fetch := func(ctx context.Context, ticket *flight.Ticket) ([]string, error) {
		stream, err := flight.NewFlightServiceClient(conn2).DoGet(ctx, ticket)
		if err != nil {
			return nil, err
		}
		rr, err := flight.NewRecordReader(stream)
		if err != nil {
			return nil, err
		}
		defer rr.Release()
		var got []string
		for rr.Next() {
			got = append(got, rr.RecordBatch().Column(0).(*array.String).Value(0))
		}
		return got, rr.Err()
	}
	if got, err := fetch(metadata.AppendToOutgoingContext(context.Background(), relayed...), host.ticket); err == nil || len(got) > 0 {
		t.Errorf("what the host read, relayed to the genuine w2: %q %v; want refused", got, err)
	}

	c1, _ := flightWorker(t, "w1", flightPeers{{Name: "w2", Healthy: true, Endpoints: map[string]string{forward.FlightSQL: ep2}}})
	if r, err := c1.DoGet(bob, ticket); err == nil {
		for r.Next() {
			t.Errorf("bob read alice's ticket through w1: %v", r.RecordBatch())
		}
		err = r.Err()
		r.Release()
		if status.Code(err) != codes.NotFound {
			t.Errorf("bob's DoGet of alice's ticket through w1: %v, want NotFound", err)
		}
	} else if status.Code(err) != codes.NotFound {
		t.Errorf("bob's DoGet of alice's ticket through w1: %v, want NotFound", err)
	}
	r, err = c1.DoGet(alice, ticket)
	if err != nil {
		t.Fatalf("alice's ticket through w1 from the genuine w2: %v", err)
	}
	defer r.Release()
	if !r.Next() || r.RecordBatch().Column(0).(*array.String).Value(0) != "alice rows" {
		t.Fatalf("alice's ticket through w1 from the genuine w2: %v", r.Err())
	}

	// A w1 of the previous release: the handle in the ticket, the user in headerUser.
	info, err = c2.Execute(alice, "SELECT 'alice rows again' AS v")
	if err != nil {
		t.Fatal(err)
	}
	tq, err = fsql.GetStatementQueryTicket(info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := ownerOfHandle(string(tq.GetStatementHandle()))
	old, err := forward.New(forward.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Name: "w1", Secret: "flight-stale-secret",
		Directory: flightPeers{}, Client: forward.NewClient(nil), Advertised: func() map[string]string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	pairs := []string{headerUser, "alice-payroll"}
	for k, v := range old.Outbound(owner, ep2, forward.BindFlightSQL("alice-payroll"), "127.0.0.1:1", false) {
		pairs = append(pairs, strings.ToLower(k), v)
	}
	if got, err := fetch(metadata.AppendToOutgoingContext(context.Background(), pairs...), info.Endpoint[0].Ticket); err != nil || len(got) != 1 || got[0] != "alice rows again" {
		t.Errorf("alice's ticket forwarded as the previous release did: %q %v", got, err)
	}
}
