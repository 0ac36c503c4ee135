package mysqlwire

// The loopback server every test starts, apart from the tests themselves: the fuzz targets build
// with this file alone (scripts/fuzzharness.py), not with the engines the other tests link.

import (
	"net"
	"sync"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

const (
	testUser     = "queryflux"
	testPassword = "s3cret-pw"
)

// startServer serves backend on a loopback port and returns the address.
func startServer(t testing.TB, backend query.Backend, opts Options) string {
	t.Helper()
	if opts.Users == nil {
		opts.Users = StaticUsers{"alice": testPassword}
	}
	if opts.LoopbackUser == "" {
		opts.LoopbackUser = testUser
	}
	s, err := NewServer(backend, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	testServers.Store(l.Addr().String(), s)
	return l.Addr().String()
}

var testServers sync.Map // addr → *Server

func serverOf(t testing.TB, addr string) *Server {
	s, ok := testServers.Load(addr)
	if !ok {
		t.Fatalf("no server at %s", addr)
	}
	return s.(*Server)
}
