package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/netlimit"
)

var paddedSelect = frontendtest.PaddedSelect

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// heldPgconn is a pgconn connection as frontendtest.CheckHeldBytesBound drives it.
type heldPgconn struct{ c *pgconn.PgConn }

func (h heldPgconn) Prepare(key, sql string) error {
	_, err := h.c.Prepare(context.Background(), key, sql, nil)
	return err
}

func (h heldPgconn) Run(key string) (string, error) {
	rr := h.c.ExecPrepared(context.Background(), key, nil, nil, nil).Read()
	if rr.Err != nil || len(rr.Rows) != 1 {
		return "", fmt.Errorf("%v, rows %q", rr.Err, rr.Rows)
	}
	return string(rr.Rows[0][0]), nil
}

func (h heldPgconn) Close(key string) error { return h.c.Deallocate(context.Background(), key) }
func (h heldPgconn) End()                   { _ = h.c.Close(context.Background()) }

// TestHeldBytesBoundPreparedStatements: frontendtest.CheckHeldBytesBound through pgconn, on
// the relay and the Arrow path: 54000 past the connection's budget, 53200 past the daemon's,
// each refusal counted.
func TestHeldBytesBoundPreparedStatements(t *testing.T) {
	for name, noPassthrough := range boundPaths {
		t.Run(name, func(t *testing.T) {
			limits := netlimit.Limits{HeldBytesMax: frontendtest.HeldBytesConnectionMax, Held: heldmem.NewPool(frontendtest.HeldBytesDaemonMax)}
			d, reg := boundedServer(t, noPassthrough, pgwire.Options{Limits: limits})
			open := func() frontendtest.HeldConn {
				c, err := pgconn.Connect(context.Background(), d.URL())
				if err != nil {
					t.Fatal(err)
				}
				return heldPgconn{c}
			}
			frontendtest.CheckHeldBytesBound(t, open, frontendtest.HeldCodes{Code: pgCode, Connection: "54000", Daemon: "53200"})
			if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "held_bytes")); got != 1 {
				t.Errorf("connection refusals counted %v, want 1", got)
			}
			if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "daemon_held_bytes")); got < 1 {
				t.Errorf("daemon refusals counted %v, want 1 or more", got)
			}
		})
	}
}

// TestHeldBytesBoundPortals (the Arrow path, where a portal's values are held here): named
// portals bound with 400 KB values fill a 1 MiB budget at the third; it is refused with 54000
// and the portals bound before it still execute.
func TestHeldBytesBoundPortals(t *testing.T) {
	d, _ := boundedServer(t, true, pgwire.Options{Limits: netlimit.Limits{HeldBytesMax: 1 << 20}})
	_, fe := rawClient(t, d)
	fe.Send(&pgproto3.Parse{Name: "st", Query: "SELECT length($1::text)"})
	fe.Send(&pgproto3.Sync{})
	expectMessages(t, fe, "1Z")
	value := []byte(strings.Repeat("v", 400<<10))
	fe.Send(&pgproto3.Query{String: "BEGIN"}) // named portals live until the transaction ends
	for _, portal := range []string{"p1", "p2", "p3"} {
		fe.Send(&pgproto3.Bind{DestinationPortal: portal, PreparedStatement: "st", Parameters: [][]byte{value}})
	}
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	if msg := receiveUntilReady(t, fe); msg != nil {
		t.Fatalf("BEGIN: %+v", msg)
	}
	errResp := expectMessages(t, fe, "22EZ")
	if errResp.Code != "54000" || !strings.Contains(errResp.Message, "this connection holds") {
		t.Fatalf("third portal: %s %q, want 54000", errResp.Code, errResp.Message)
	}
	fe.Send(&pgproto3.Execute{Portal: "p1"})
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var row string
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			row = string(m.Values[0])
		case *pgproto3.ErrorResponse:
			t.Fatalf("portal p1 after the refusal: %s %s", m.Code, m.Message)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if row != fmt.Sprint(len(value)) {
		t.Fatalf("portal p1 answered %q", row)
	}
}

// receiveUntilReady reads a simple query's answers; it returns its error, if any.
func receiveUntilReady(t *testing.T, fe *pgproto3.Frontend) *pgproto3.ErrorResponse {
	t.Helper()
	var errResp *pgproto3.ErrorResponse
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			c := *m
			errResp = &c
		case *pgproto3.ReadyForQuery:
			return errResp
		}
	}
}

// TestParsePastTheRoomRefusedUnread: a Parse whose statement could not be kept is refused
// from its header with 54000 and read past, never held whole: under a daemon pool of 1 MiB
// for messages in flight, pgconn's 2 MiB Parse is refused and the connection goes on, where
// holding it whole would have ended the connection (53200). An unnamed Parse counts the
// unnamed statement it replaces as given back.
func TestParsePastTheRoomRefusedUnread(t *testing.T) {
	const size = 600 << 10
	for name, noPassthrough := range boundPaths {
		t.Run(name, func(t *testing.T) {
			limits := netlimit.Limits{HeldBytesMax: 1 << 20, InFlight: heldmem.NewPool(1 << 20)}
			d, reg := boundedServer(t, noPassthrough, pgwire.Options{Limits: limits})
			ctx := context.Background()
			a, err := pgconn.Connect(ctx, d.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(ctx)
			_, err = a.Prepare(ctx, "big", paddedSelect(1, 2<<20), nil)
			if pgCode(err) != "54000" || !strings.Contains(err.Error(), "this connection holds") {
				t.Fatalf("a 2 MiB statement under a 1 MiB budget: %v, want 54000", err)
			}
			for i := range 2 {
				if _, err := a.Prepare(ctx, "", paddedSelect(i, size), nil); err != nil {
					t.Fatalf("unnamed statement %d of %d bytes, replacing the one before: %v", i, size, err)
				}
			}
			_, err = a.Prepare(ctx, "named", paddedSelect(3, size), nil)
			if pgCode(err) != "54000" {
				t.Fatalf("a named statement of %d bytes beside an unnamed one: %v, want 54000", size, err)
			}
			if rr := a.ExecParams(ctx, "select 42", nil, nil, nil, nil).Read(); rr.Err != nil || len(rr.Rows) != 1 || string(rr.Rows[0][0]) != "42" {
				t.Fatalf("select 42 after the refusals: %v %q", rr.Err, rr.Rows)
			}
			if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "held_bytes")); got != 2 {
				t.Fatalf("refusals counted %v, want 2", got)
			}
		})
	}
}

// TestHeldBytesBoundThroughClientLibraries: the client libraries people use (psycopg 3,
// node-postgres, PostgreSQL's JDBC driver), each preparing statements of 300 KB on the server
// under a connection budget of 1 MiB, get 54000 at the fourth, and their connection goes on:
// a new statement runs and so does the first one they kept.
func TestHeldBytesBoundThroughClientLibraries(t *testing.T) {
	const size = "307200"
	d, _ := boundedServer(t, false, pgwire.Options{Limits: netlimit.Limits{HeldBytesMax: 1 << 20}})
	want := map[string]string{"budget": "54000 after 3", "after": "42 0"}
	t.Run("psycopg3", func(t *testing.T) {
		out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "held_budget.py", d.Keywords(), size)
		if err != nil {
			t.Errorf("psycopg 3 (Debian python3-psycopg; make test-deps): %v", err)
		}
		pgclienttest.Expect(t, "psycopg3", out, want)
	})
	t.Run("node-postgres", func(t *testing.T) {
		out, err := pgclienttest.Command(t, time.Minute, nil, "node", "held_budget.js", d.URL(), size)
		if err != nil {
			t.Errorf("node-postgres: %v", err)
		}
		pgclienttest.Expect(t, "node-postgres", out, want)
	})
	t.Run("jdbc", func(t *testing.T) {
		classpath := pgclienttest.JDBCClasspath(t, "HeldBudget.java")
		out, err := pgclienttest.Command(t, 2*time.Minute, nil, "java", "-cp", classpath, "HeldBudget", d.JDBC(), size)
		if err != nil {
			t.Errorf("jdbc: %v", err)
		}
		pgclienttest.Expect(t, "jdbc", out, want)
	})
}

// TestApplicationNameCutAsPostgreSQLCutsIt: the client's application_name is kept with its
// connection (the engine's names the capacity lease), outside its budget; PostgreSQL keeps 63
// bytes of it (NAMEDATALEN - 1), and so does the proxy, on the relay and the Arrow path: a
// SET of a message's size is not kept whole. The proxy cuts at a character's start (PostgreSQL
// writes non-ASCII bytes as '?' first).
func TestApplicationNameCutAsPostgreSQLCutsIt(t *testing.T) {
	name := strings.Repeat("n", 62) + strings.Repeat("é", 1<<19) // bytes 62 and 63 are one character
	for path, noPassthrough := range boundPaths {
		t.Run(path, func(t *testing.T) {
			d, _ := boundedServer(t, noPassthrough, pgwire.Options{})
			ctx := context.Background()
			c, err := pgconn.Connect(ctx, d.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, "set application_name = '"+name+"'").ReadAll(); err != nil {
				t.Fatal(err)
			}
			want := strings.Repeat("n", 62)
			if got := c.ParameterStatus("application_name"); got != want {
				t.Fatalf("application_name reported as %d bytes %.80q..., want the 62 bytes before the character at byte 63", len(got), got)
			}
		})
	}
}
