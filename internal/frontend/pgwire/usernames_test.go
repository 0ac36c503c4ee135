package pgwire

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestAUserNameHoldingAControlCharacterIsRefused: a startup packet whose user name holds a
// control character (C0, DEL, C1; a NUL ends the name on the wire) is refused FATAL 28000
// naming the character, before the Gate or any password check, however trusting the Gate.
func TestAUserNameHoldingAControlCharacterIsRefused(t *testing.T) {
	names := frontendtest.ControlCharacterNames
	gate := &frontendtest.RecordingGate{Trust: map[string]bool{"alice": true}}
	for _, n := range names {
		gate.Trust[n.Name] = true
	}
	addr := serveStub(t, Options{Gate: gate})
	login := func(user string) error {
		cfg, err := pgx.ParseConfig("postgres://" + addr + "/d?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		cfg.User = user
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "select 1")
		return err
	}
	for _, n := range names {
		err := login(n.Name)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28000" || pe.Severity != "FATAL" || !strings.Contains(pe.Message, "control character ("+n.Char) {
			t.Errorf("%q: %v; want FATAL 28000 naming the control character %s", n.Name, err, n.Char)
		}
	}
	if admits, verifies, _ := gate.Reset(); len(admits)+len(verifies) != 0 {
		t.Errorf("the Gate was told %+v %+v", admits, verifies)
	}
	if err := login("alice"); err != nil {
		t.Errorf("alice: %v", err)
	}
}
