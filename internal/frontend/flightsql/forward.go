package flightsql

// A ticket names the worker that executed its statement (handle "<random>.<owner>"). A DoGet
// for a ticket of another worker is forwarded there, with the worker secret and the user this
// worker authenticated, and the owner's stream is relayed batch by batch; clients need not
// follow FlightEndpoint locations (arrow-go's does not: it fetches on the connection it has).
// The ticket's handle and the user travel sealed for the owner at the address dialed
// (headerSealed; the ticket sent is sealedHandle): whatever answers at a stale peer address
// reads neither.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/redact"
)

// headerUser carries the user the forwarding worker authenticated (forwarders of the previous
// release; now it travels in headerSealed).
const headerUser = "x-queryflux-forwarded-user"

// headerSealed carries a forwarded DoGet's sealedGet, sealed for the owner at the address
// dialed (forward.Forwarder.Seal); the ticket then names sealedHandle.
const headerSealed = "x-queryflux-sealed-bin"

// sealedHandle is the statement handle of a forwarded DoGet's ticket whose handle is sealed.
const sealedHandle = "sealed"

// sealedGet is what a forwarded DoGet seals: the client's user and its ticket's handle.
type sealedGet struct {
	User   string `json:"user"`
	Handle string `json:"handle"`
}

// openSealedGet opens a forwarded call's headerSealed; ok false when it carries none.
func (s *Server) openSealedGet(md metadata.MD) (get sealedGet, ok bool, err error) {
	sealed := first(md, headerSealed)
	if sealed == "" || s.opts.Forward == nil {
		return sealedGet{}, false, nil
	}
	plain, err := s.opts.Forward.Open(first(md, strings.ToLower(forward.HeaderPeerAddr)), []byte(sealed))
	if err != nil {
		return sealedGet{}, true, err
	}
	if json.Unmarshal(plain, &get) != nil || get.User == "" || get.Handle == "" {
		return sealedGet{}, true, errors.New("a sealed forward whose ticket does not read")
	}
	return get, true, nil
}

// resultHandle is a new statement handle, naming this worker when it forwards.
func (s *Server) resultHandle() string {
	if s.opts.Forward == nil {
		return newHandle()
	}
	return newHandle() + "." + s.opts.Forward.Self()
}

// ownerOfHandle returns the worker a handle names, if any.
func ownerOfHandle(handle string) (string, bool) {
	_, owner, ok := strings.Cut(handle, ".")
	return owner, ok && forward.IsOwnerID(owner)
}

// mdGetter reads gRPC metadata by HTTP header name.
func mdGetter(md metadata.MD) func(string) string {
	return func(name string) string { return first(md, strings.ToLower(name)) }
}

// forwardedUser returns the user of a call forwarded by another worker (ok false for a direct
// call); a call claiming to be forwarded without the worker secret is refused.
func (s *Server) forwardedUser(md metadata.MD) (user string, ok bool, err error) {
	user = first(md, headerUser)
	if first(md, strings.ToLower(forward.HeaderHop)) != "" {
		get, sealed, err := s.openSealedGet(md)
		if err != nil {
			return "", false, status.Error(codes.PermissionDenied, err.Error())
		}
		if sealed {
			user = get.User
		}
	}
	hop, err := s.opts.Forward.Inbound(mdGetter(md), forward.BindFlightSQL(user))
	if err != nil {
		return "", false, status.Error(codes.PermissionDenied, err.Error())
	}
	if !hop.Forwarded {
		return "", false, nil
	}
	if user == "" {
		return "", false, status.Error(codes.PermissionDenied, "a forwarded call names no user")
	}
	return user, true, nil
}

var errUnknownTicket = status.Error(codes.NotFound, "unknown or already fetched ticket")

// doGetElsewhere fetches a ticket another worker issued from that worker. When the ticket names
// no other worker, the call was forwarded already, or the owner is gone, the answer is NotFound.
func (s *Server) doGetElsewhere(ctx context.Context, handle string) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	owner, ok := ownerOfHandle(handle)
	fwd := s.opts.Forward
	md, _ := metadata.FromIncomingContext(ctx)
	if !ok || fwd == nil || owner == fwd.Self() || first(md, strings.ToLower(forward.HeaderHop)) != "" {
		return nil, nil, errUnknownTicket
	}
	start := time.Now()
	reader, conn, err := s.openAtOwner(ctx, fwd, owner, handle)
	if err != nil {
		s.log.Info("flightsql: a ticket's owning worker is gone", "err", redact.Error(err))
		return nil, nil, errUnknownTicket
	}
	fwd.Observe(forward.FlightSQL, forward.OutcomeOK, time.Since(start))
	ch := make(chan flight.StreamChunk)
	go s.relay(ctx, reader, conn, ch)
	return reader.Schema(), ch, nil
}

// openAtOwner starts the DoGet at the owner and reads its schema.
func (s *Server) openAtOwner(ctx context.Context, fwd *forward.Forwarder, owner, handle string) (*flight.Reader, *grpc.ClientConn, error) {
	ep, err := fwd.Endpoint(ctx, owner, forward.FlightSQL)
	if err != nil {
		fwd.Observe(forward.FlightSQL, forward.OutcomeUnknown, 0)
		return nil, nil, err
	}
	creds := insecure.NewCredentials()
	addr, secure := strings.CutPrefix(ep, "grpc+tls://")
	if secure {
		creds = credentials.NewTLS(fwd.TLS())
	} else {
		addr = strings.TrimPrefix(ep, "grpc+tcp://")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		fwd.Observe(forward.FlightSQL, forward.OutcomeUnknown, 0)
		return nil, nil, err
	}
	reader, err := s.doGetAt(ctx, fwd, conn, owner, ep, handle)
	if err != nil {
		conn.Close()
		fwd.Observe(forward.FlightSQL, forward.OutcomeUnreachable, 0)
		return nil, nil, err
	}
	return reader, conn, nil
}

func (s *Server) doGetAt(ctx context.Context, fwd *forward.Forwarder, conn *grpc.ClientConn, owner, ep, handle string) (*flight.Reader, error) {
	ticket, err := fsql.CreateStatementQueryTicket([]byte(sealedHandle))
	if err != nil {
		return nil, err
	}
	user := userOf(ctx)
	plain, _ := json.Marshal(sealedGet{User: user, Handle: handle}) // strings only: it cannot fail
	pairs := []string{headerSealed, string(fwd.Seal(owner, ep, plain))}
	hop := fwd.Outbound(owner, ep, forward.BindFlightSQL(user), clientAddr(ctx), isTLS(ctx))
	for k, v := range hop {
		pairs = append(pairs, strings.ToLower(k), v)
	}
	octx, cancel := context.WithTimeout(ctx, forward.DialTimeout)
	defer cancel()
	// The stream lives on ctx; only reaching the owner and its first message are bounded.
	stream, err := flight.NewFlightServiceClient(conn).DoGet(metadata.AppendToOutgoingContext(ctx, pairs...), &flight.Ticket{Ticket: ticket},
		grpc.WaitForReady(false))
	if err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	var reader *flight.Reader
	go func() {
		defer close(ready)
		defer func() {
			if r := recover(); r != nil {
				s.panicked("DoGet (relayed)", r)
				err = errInternal
			}
		}()
		// Only the owner's stream is the client's: whoever answers at its address (a stale peer
		// entry) without its proof of the secret is not passed on.
		md, herr := stream.Header()
		if herr != nil {
			err = herr
			return
		}
		if !fwd.Vouched(owner, hop[forward.HeaderSecret], first(md, strings.ToLower(forward.HeaderOwnerProof))) {
			fwd.Observe(forward.FlightSQL, forward.OutcomeUnproven, 0)
			err = errors.New("the worker at the owner's address did not prove it holds the fleet's worker secret")
			return
		}
		reader, err = flight.NewRecordReader(stream)
	}()
	select {
	case <-ready:
	case <-octx.Done():
		return nil, errors.New("the owner did not start the stream in time")
	}
	return reader, err
}

// relay sends the owner's batches on ch until the stream ends, then closes ch and the connection.
func (s *Server) relay(ctx context.Context, reader *flight.Reader, conn *grpc.ClientConn, ch chan<- flight.StreamChunk) {
	defer conn.Close()
	defer close(ch)
	defer reader.Release()
	defer s.recoveredChunk(ctx, "DoGet (relayed)", ch)
	for reader.Next() {
		rec := reader.RecordBatch()
		rec.Retain()
		select {
		case ch <- flight.StreamChunk{Data: rec}:
		case <-ctx.Done():
			rec.Release()
			return
		}
	}
	if err := reader.Err(); err != nil {
		select {
		case ch <- flight.StreamChunk{Err: err}:
		case <-ctx.Done():
		}
	}
}
