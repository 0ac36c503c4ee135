package flightsql

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A call's handler runs on the gRPC server's goroutine, and gRPC does not recover panics: one
// malformed request that panics in arrow-go or here would end the whole process. The client's
// bytes are checked before arrow-go reads them where arrow-go trusts them (putStream,
// checkColumn); the interceptors below (and recoveredChunk in the goroutines handlers start)
// turn whatever still panics into an Internal error for that call alone, logged with its stack
// (every one is a bug).

func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer s.recovered(info.FullMethod, &err)
	return handler(ctx, req)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer s.recovered(info.FullMethod, &err)
	if strings.HasSuffix(info.FullMethod, "/DoPut") {
		ss = &putStream{ServerStream: ss}
	}
	return handler(srv, ss)
}

var errInternal = status.Error(codes.Internal, "internal error")

// recovered is deferred by the interceptors: a panic becomes the call's error.
func (s *Server) recovered(method string, err *error) {
	if r := recover(); r != nil {
		s.panicked(method, r)
		*err = errInternal
	}
}

// A goroutine a handler starts (streaming a result, relaying another worker's stream) runs
// outside the interceptors, where a panic would end the process just the same.
// recoveredChunk, deferred by such a goroutine before it closes ch, ends the stream with an
// Internal error for that call alone.
func (s *Server) recoveredChunk(ctx context.Context, what string, ch chan<- flight.StreamChunk) {
	r := recover()
	if r == nil {
		return
	}
	s.panicked(what, r)
	select {
	case ch <- flight.StreamChunk{Err: errInternal}:
	case <-ctx.Done():
	}
}

// panicked counts and logs a recovered panic, with its stack (every one is a bug).
func (s *Server) panicked(where string, r any) {
	s.panics.Add(1)
	s.log.Error("flightsql: a call panicked", "method", where, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
}

// putStream refuses a DoPut whose first message carries no FlightDescriptor (arrow-go's Flight
// SQL server reads the command from it without checking that it is there), and any message
// whose IPC header checkIPCHeader refuses.
type putStream struct {
	grpc.ServerStream
	received int // messages received
}

func (p *putStream) RecvMsg(m any) error {
	if err := p.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	p.received++
	fd, ok := m.(*flight.FlightData)
	if !ok {
		return nil
	}
	if p.received == 1 && fd.FlightDescriptor == nil {
		return status.Error(codes.InvalidArgument, "DoPut: the first message carries no FlightDescriptor (the command to run)")
	}
	if len(fd.DataHeader) > 0 {
		if err := checkIPCHeader(fd.DataHeader); err != nil {
			return status.Errorf(codes.InvalidArgument, "DoPut: message %d: malformed Arrow IPC header: %v", p.received, err)
		}
	}
	return nil
}
