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
// checkParams); the interceptors below turn whatever still panics into an Internal error for
// that call alone, logged with its stack (every one is a bug).

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

// recovered is deferred by the interceptors: a panic becomes the call's error.
func (s *Server) recovered(method string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	s.panics.Add(1)
	s.log.Error("flightsql: a call panicked", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	*err = status.Error(codes.Internal, "internal error")
}

// putStream refuses a DoPut whose first message carries no FlightDescriptor: arrow-go's Flight
// SQL server reads the command from it without checking that it is there.
type putStream struct {
	grpc.ServerStream
	received bool // the first message was received
}

func (p *putStream) RecvMsg(m any) error {
	if err := p.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if p.received {
		return nil
	}
	p.received = true
	if fd, ok := m.(*flight.FlightData); ok && fd.FlightDescriptor == nil {
		return status.Error(codes.InvalidArgument, "DoPut: the first message carries no FlightDescriptor (the command to run)")
	}
	return nil
}
