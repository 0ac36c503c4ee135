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

	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// paddedSelect is "SELECT n" padded by a comment to size bytes: a statement that costs the
// proxy its text and the engine nothing.
func paddedSelect(n, size int) string {
	head := fmt.Sprintf("SELECT %d /* ", n)
	return head + strings.Repeat("x", size-len(head)-3) + " */"
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestHeldBytesBoundPreparedStatements: pgconn prepares statements of 300 KB under a
// connection budget of 1 MiB; the fourth is refused with 54000 saying what the connection
// holds, the connection goes on, the statements it holds still run, and a deallocated one
// makes room. Under a daemon budget of 1.25 MiB a second connection is refused with 53200
// where the two together would pass it, and gets its room once the first has closed.
func TestHeldBytesBoundPreparedStatements(t *testing.T) {
	const size = 300 << 10
	for name, noPassthrough := range boundPaths {
		t.Run(name, func(t *testing.T) {
			limits := netlimit.Limits{HeldBytesMax: 1 << 20, Held: heldmem.NewPool(5 << 18)}
			d, reg := boundedServer(t, noPassthrough, pgwire.Options{Limits: limits})
			ctx := context.Background()
			a, err := pgconn.Connect(ctx, d.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(ctx)
			for i := range 3 {
				if _, err := a.Prepare(ctx, fmt.Sprintf("s%d", i), paddedSelect(i, size), nil); err != nil {
					t.Fatalf("statement %d of 3: %v", i, err)
				}
			}
			_, err = a.Prepare(ctx, "s3", paddedSelect(3, size), nil)
			if pgCode(err) != "54000" || !strings.Contains(err.Error(), "this connection holds") {
				t.Fatalf("fourth statement of %d bytes: %v, want 54000 naming the connection's limit", size, err)
			}
			if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "held_bytes")); got != 1 {
				t.Fatalf("refusals counted %v, want 1", got)
			}
			// Nothing accepted is lost, and the connection goes on.
			for i := range 3 {
				rr := a.ExecPrepared(ctx, fmt.Sprintf("s%d", i), nil, nil, nil).Read()
				if rr.Err != nil || len(rr.Rows) != 1 || string(rr.Rows[0][0]) != fmt.Sprint(i) {
					t.Fatalf("statement s%d after the refusal: %v %q", i, rr.Err, rr.Rows)
				}
			}
			if err := a.Deallocate(ctx, "s0"); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Prepare(ctx, "s3", paddedSelect(3, size), nil); err != nil {
				t.Fatalf("after a deallocate: %v", err)
			}

			// The daemon's budget: a holds about 900 KB of its 1.25 MiB.
			b, err := pgconn.Connect(ctx, d.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(ctx)
			if _, err := b.Prepare(ctx, "t0", paddedSelect(10, size), nil); err != nil {
				t.Fatalf("b's first statement: %v", err)
			}
			_, err = b.Prepare(ctx, "t1", paddedSelect(11, size), nil)
			if pgCode(err) != "53200" || !strings.Contains(err.Error(), "the server holds") {
				t.Fatalf("b's second statement past the daemon's budget: %v, want 53200", err)
			}
			if rr := b.ExecPrepared(ctx, "t0", nil, nil, nil).Read(); rr.Err != nil {
				t.Fatalf("b's first statement after the refusal: %v", rr.Err)
			}
			a.Close(ctx)
			deadline := time.Now().Add(time.Minute)
			for {
				_, err := b.Prepare(ctx, "t1", paddedSelect(11, size), nil)
				if err == nil {
					break
				}
				if pgCode(err) != "53200" || time.Now().After(deadline) {
					t.Fatalf("b's second statement after a closed: %v", err)
				}
				time.Sleep(20 * time.Millisecond) // a's close is seen by its own goroutine
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
