package pgwire_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// oneEngine is the test stand-in for the proxy core: every request goes to one engine.
type oneEngine struct {
	e        query.Engine
	notReady atomic.Bool
	requests atomic.Int64
}

func (b *oneEngine) Ready() bool { return !b.notReady.Load() }

func (b *oneEngine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	b.requests.Add(1)
	return b.e.Execute(ctx, q)
}

// describingEngine also forwards Describe, as the proxy core should.
type describingEngine struct{ *oneEngine }

func (b describingEngine) Describe(ctx context.Context, q *query.Request) (*engine.Description, error) {
	return b.e.(engine.Describer).Describe(ctx, q)
}

func (b describingEngine) OpenSession(ctx context.Context, q *query.Request) (engine.Session, error) {
	return b.e.(engine.SessionOpener).OpenSession(ctx, q)
}

// startServer serves backend on a loopback port and returns its address.
func startServer(t testing.TB, backend query.Backend, opts pgwire.Options) string {
	t.Helper()
	_, addr := serveBackend(t, backend, opts)
	return addr
}

// serveBackend is startServer, also returning the server.
func serveBackend(t testing.TB, backend query.Backend, opts pgwire.Options) (*pgwire.Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := pgwire.NewServer(backend, opts)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, l.Addr().String()
}

// pgEngine opens the PostgreSQL engine on a fresh test database; it returns the engine and
// the database URL for direct comparisons.
func pgEngine(t testing.TB) (*pgengine.Engine, string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	e, err := pgengine.Open(engine.Spec{Name: "pgtest", Kind: pgengine.Kind, Endpoint: url, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e.(*pgengine.Engine), url
}

// pgBackend is a describing backend over a fresh PostgreSQL database, served on loopback
// with trust for every user.
func pgBackend(t testing.TB) (addr, directURL string, b *oneEngine) {
	e, url := pgEngine(t)
	b = &oneEngine{e: e}
	addr = startServer(t, describingEngine{b}, pgwire.Options{TrustUsers: []string{"*"}})
	return addr, url, b
}

func pgwireTrustAll() pgwire.Options { return pgwire.Options{TrustUsers: []string{"*"}} }
