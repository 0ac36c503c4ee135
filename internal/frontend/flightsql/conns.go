package flightsql

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/stats"
)

// A result waits for its DoGet on the server, holding its engine query and capacity slot. A
// client that executed a statement and then went away (killed, its connection closed) never
// fetches it, so its results are dropped when its connection ends, not when they expire.

type connKey struct{}

// connID is the id of the client connection ctx's call arrived on; 0 when unknown.
func connID(ctx context.Context) uint64 {
	id, _ := ctx.Value(connKey{}).(uint64)
	return id
}

// connEnds is the gRPC stats handler that numbers connections and reports their end.
type connEnds struct {
	seq   atomic.Uint64
	ended func(id uint64)
}

func (h *connEnds) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connKey{}, h.seq.Add(1))
}

func (h *connEnds) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, end := s.(*stats.ConnEnd); end {
		if id := connID(ctx); id != 0 {
			h.ended(id)
		}
	}
}

func (h *connEnds) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (h *connEnds) HandleRPC(context.Context, stats.RPCStats)                       {}

// dropConn drops the results executed on connection id that nobody fetched, and rolls back
// the transactions it began (as a PostgreSQL client's ends with its connection).
func (s *Server) dropConn(id uint64) {
	var stale []*pendingResult
	s.mu.Lock()
	for h, r := range s.results {
		if r.conn == id {
			stale = append(stale, r)
			s.takeResultLocked(h, r)
		}
	}
	s.mu.Unlock()
	for _, r := range stale {
		r.drop()
	}
	s.endTxsWhere(func(tx *transaction) bool { return tx.conn == id })
}
