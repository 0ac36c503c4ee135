package flightsql

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A client that stops reading a stream (a DoGet never drained: suspended, or a reader never
// released while its connection lives) never makes a socket write wait: gRPC's flow control
// stops the handler's Send at the stream's window instead, so the socket's write stall bound
// never sees it, nor does MaxConnectionIdle (the connection has a stream). Each Send of a
// server-streaming call is therefore timed: one that waits longer than the write stall timeout
// ends the call, and with it the engine query and capacity slot its result holds.
//
// A Send returns once the stream's previous messages have gone to the client but for gRPC's
// small per-stream quota, and a client takes a message whole (its Recv, a reader's Next): the
// time a Send waits is the time the client spends before taking its next message. A client that
// reads slowly but takes a message within the bound each time is never cut, however long the
// stream lasts.

// stallStream times its Sends; when one waits past bound, stall cancels its context and the
// call ends (sendBound).
type stallStream struct {
	grpc.ServerStream
	ctx     context.Context
	bound   time.Duration
	timer   *time.Timer // armed only while a Send waits
	stalled chan struct{}
	once    sync.Once
	cancel  context.CancelFunc
}

func (b *stallStream) Context() context.Context { return b.ctx }

func (b *stallStream) SendMsg(m any) error {
	select {
	case <-b.stalled:
		return b.refusal()
	default:
	}
	b.timer.Reset(b.bound)
	err := b.ServerStream.SendMsg(m)
	if !b.timer.Stop() {
		return b.refusal() // the call ended while this Send waited
	}
	return err
}

// stall ends the call: its context first, so that the result's engine query is cancelled and
// its slot freed even while the Send stays blocked until gRPC closes the stream.
func (b *stallStream) stall() {
	b.once.Do(func() {
		b.cancel()
		close(b.stalled)
	})
}

func (b *stallStream) refusal() error {
	return status.Errorf(codes.DeadlineExceeded,
		"the client took nothing of this stream within the write stall timeout (%s): it stopped reading; its query was cancelled", b.bound)
}

// sendBound is the innermost stream interceptor (after authentication, so that it knows the
// user): it runs the handler on a goroutine of its own, so that a Send blocked in flow control
// can be left there. Returning ends the stream (gRPC then cancels it, which releases that
// Send), which a handler blocked in Send could not do itself.
func (s *Server) sendBound(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	bound := s.opts.Limits.WriteStallTimeout
	if bound <= 0 || !info.IsServerStream {
		return handler(srv, ss)
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	b := &stallStream{ServerStream: ss, ctx: ctx, bound: bound, stalled: make(chan struct{}), cancel: cancel}
	b.timer = time.AfterFunc(bound, b.stall)
	b.timer.Stop()
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer s.recovered(info.FullMethod, &err)
		err = handler(srv, b)
	}()
	select {
	case err := <-done:
		b.timer.Stop()
		return err
	case <-b.stalled:
	}
	s.refusals.WithLabelValues("flightsql", "write_stall").Inc()
	s.log.Warn("flightsql: stream ended: the client took nothing of its answer within the write stall timeout (it stopped reading); its query was cancelled",
		"method", info.FullMethod, "remote", clientAddr(ctx), "user", userOf(ctx), "timeout", bound.String())
	return b.refusal()
}
