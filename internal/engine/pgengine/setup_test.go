package pgengine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
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
