package pgengine_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestOwnersChangedSetupReachesItsOwnConnection: a connection that last served an owner gets
// the owner's setup again when it changed since (the client's SET TIME ZONE, reported on
// another connection), and a NoWait open does not take it before that.
func TestOwnersChangedSetupReachesItsOwnConnection(t *testing.T) {
	e, _ := openConns(t, 1)
	ctx := context.Background()
	zone := func(o engine.PGWireOptions) string {
		t.Helper()
		w, err := e.OpenPGWire(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Close() }()
		rows, _, err := simpleOn(t, w, "show timezone")
		if err != nil || len(rows) != 1 {
			t.Fatalf("show timezone: %v, %v", rows, err)
		}
		return rows[0]
	}
	const tokyo = "SELECT pg_catalog.set_config('TimeZone', 'Asia/Tokyo', false);"
	const paris = "SELECT pg_catalog.set_config('TimeZone', 'Europe/Paris', false);"
	if z := zone(engine.PGWireOptions{Owner: 1, Setup: tokyo}); z != "Asia/Tokyo" {
		t.Fatalf("first setup: %q", z)
	}
	if _, err := e.OpenPGWire(ctx, engine.PGWireOptions{Owner: 1, Setup: paris, NoWait: true}); !errors.Is(err, engine.ErrWouldWait) {
		t.Fatalf("NoWait with a changed setup: %v, want ErrWouldWait", err)
	}
	if z := zone(engine.PGWireOptions{Owner: 1, Setup: paris}); z != "Europe/Paris" {
		t.Fatalf("the owner's own connection after its setup changed: %q, want Europe/Paris", z)
	}
	if z := zone(engine.PGWireOptions{Owner: 1, Setup: paris, NoWait: true}); z != "Europe/Paris" {
		t.Fatalf("NoWait with the setup the connection carries: %q", z)
	}
}

// TestAConnectionChangesOwnerInOneRoundTrip: a relay connection that goes to another client is
// reset, given the client's setup and tagged in one round trip (one write to the server before
// the client's own statements), not one each.
func TestAConnectionChangesOwnerInOneRoundTrip(t *testing.T) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	u.Host = countingForwarder(t, u.Host, &writes)
	e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: u.String(), MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	pe := e.(*pgengine.Engine)
	ctx := context.Background()
	open := func(owner uint64, zone string) engine.PGWire {
		t.Helper()
		w, err := pe.OpenPGWire(ctx, engine.PGWireOptions{Owner: owner, Tag: "qf-lease:pg#1",
			Setup: "SELECT pg_catalog.set_config('TimeZone', '" + zone + "', false);"})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	_ = open(1, "Asia/Tokyo").Close()
	before := writes.Load()
	w := open(2, "Europe/Paris")
	if n := writes.Load() - before; n != 1 {
		t.Errorf("the connection took %d round trips to change owner, want 1", n)
	}
	rows, _, err := simpleOn(t, w, "select current_setting('TimeZone') || ' ' || current_setting('application_name')")
	_ = w.Close()
	if err != nil || len(rows) != 1 || rows[0] != "Europe/Paris qf-lease:pg#1" {
		t.Fatalf("after the change of owner: %v, %v", rows, err)
	}
}

// countingForwarder forwards connections to addr and counts the reads of what the client side
// writes (one per write, for writes a round trip apart); it returns its own address.
func countingForwarder(t *testing.T, addr string, writes *atomic.Int64) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				_ = c.Close()
				continue
			}
			go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						writes.Add(1)
						if _, werr := s.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				_ = s.Close()
			}()
		}
	}()
	return l.Addr().String()
}

// TestASetupTheEngineRefusesFailsNamingIt: an owner's setup the engine refuses fails the open
// with the engine's error, said to be a startup setting's, every time (never run without it);
// the connection still serves another owner.
func TestASetupTheEngineRefusesFailsNamingIt(t *testing.T) {
	e, _ := openConns(t, 1)
	ctx := context.Background()
	bad := engine.PGWireOptions{Owner: 1, Setup: "SELECT pg_catalog.set_config('no_such_setting', '1', false);"}
	for range 2 {
		_, err := e.OpenPGWire(ctx, bad)
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != "42704" || !strings.Contains(qe.Message, "startup parameter or option refused by the engine") {
			t.Fatalf("a refused setup: %v", err)
		}
	}
	w, err := e.OpenPGWire(ctx, engine.PGWireOptions{Owner: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	if rows, _, err := simpleOn(t, w, "select 1"); err != nil || len(rows) != 1 {
		t.Fatalf("the next owner: %v, %v", rows, err)
	}
}
