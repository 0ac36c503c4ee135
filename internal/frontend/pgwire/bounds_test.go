package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// boundPaths are the two ways a statement runs: relayed to the engine, or through the Arrow
// path. Each keeps its own portals, and both must stop at the bounds.
var boundPaths = map[string]bool{"passthrough": false, "arrow": true}

// boundedServer serves the core with the bounds of opts and returns its DSN and the registry
// of its refusal counter.
func boundedServer(t *testing.T, noPassthrough bool, opts pgwire.Options) (pgclienttest.DSN, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	addr, _, _, _ := coreServer(t, coreSetup{noPassthrough: noPassthrough, frontend: opts})
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return pgclienttest.DSN{Host: host, Port: p, User: "u", Database: "db"}, reg
}

// TestStatementsMax: pgconn prepares named statements up to StatementsMax; the next Parse
// fails with 54000 naming the bound and counts a refusal, the connection goes on, and a
// deallocated statement makes room again.
func TestStatementsMax(t *testing.T) {
	for name, noPassthrough := range boundPaths {
		t.Run(name, func(t *testing.T) {
			d, reg := boundedServer(t, noPassthrough, pgwire.Options{StatementsMax: 3})
			ctx := context.Background()
			c, err := pgconn.Connect(ctx, d.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			for i := range 3 {
				if _, err := c.Prepare(ctx, fmt.Sprintf("s%d", i), "SELECT 1", nil); err != nil {
					t.Fatalf("statement %d of 3: %v", i, err)
				}
			}
			_, err = c.Prepare(ctx, "s3", "SELECT 1", nil)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "54000" || !strings.Contains(pe.Message, "holds 3 prepared statements") {
				t.Fatalf("fourth statement: %v, want 54000 naming the bound", err)
			}
			if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "prepared_statements")); got != 1 {
				t.Fatalf("refusals counted %v, want 1", got)
			}
			if err := c.Deallocate(ctx, "s0"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Prepare(ctx, "s3", "SELECT 1", nil); err != nil {
				t.Fatalf("after a Close: %v", err)
			}
			if _, err := c.Exec(ctx, "SELECT 1").ReadAll(); err != nil {
				t.Fatalf("the connection did not go on: %v", err)
			}
		})
	}
}

// TestPortalsMax speaks the protocol itself (pgconn binds only the unnamed portal): a batch
// binding one named portal more than PortalsMax gets BindComplete for each allowed one, then
// 54000, and the portals close with the batch's implicit transaction, so the next batch binds
// again.
func TestPortalsMax(t *testing.T) {
	for name, noPassthrough := range boundPaths {
		t.Run(name, func(t *testing.T) {
			d, reg := boundedServer(t, noPassthrough, pgwire.Options{PortalsMax: 2})
			_, fe := rawClient(t, d)
			fe.Send(&pgproto3.Parse{Name: "st", Query: "SELECT 1"})
			fe.Send(&pgproto3.Sync{})
			expectMessages(t, fe, "1Z")
			for round := range 2 {
				for _, portal := range []string{"p1", "p2", "p3"} {
					fe.Send(&pgproto3.Bind{DestinationPortal: portal, PreparedStatement: "st"})
				}
				fe.Send(&pgproto3.Sync{})
				errResp := expectMessages(t, fe, "22EZ")
				if errResp.Code != "54000" || !strings.Contains(errResp.Message, "holds 2 open portals") {
					t.Fatalf("round %d: third portal got %s %q, want 54000 naming the bound", round, errResp.Code, errResp.Message)
				}
			}
			if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "portals")); got != 2 {
				t.Fatalf("refusals counted %v, want 2", got)
			}
		})
	}
}

// expectMessages flushes fe and requires the server's answers to be the message types of want
// ('1' ParseComplete, '2' BindComplete, 'E' ErrorResponse, 'Z' ReadyForQuery), in order. It
// returns the last ErrorResponse.
func expectMessages(t *testing.T, fe *pgproto3.Frontend, want string) *pgproto3.ErrorResponse {
	t.Helper()
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	var errResp *pgproto3.ErrorResponse
	for got.Len() < len(want) {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("after %q: %v", got.String(), err)
		}
		switch m := msg.(type) {
		case *pgproto3.ParseComplete:
			got.WriteByte('1')
		case *pgproto3.BindComplete:
			got.WriteByte('2')
		case *pgproto3.ErrorResponse:
			got.WriteByte('E')
			c := *m
			errResp = &c
		case *pgproto3.ReadyForQuery:
			got.WriteByte('Z')
		default:
			got.WriteByte('?')
		}
	}
	if got.String() != want {
		t.Fatalf("server answered %q, want %q (last error: %+v)", got.String(), want, errResp)
	}
	return errResp
}
