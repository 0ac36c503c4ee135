package pgengine_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// lostCancelSleep is the statement whose first cancel request PostgreSQL drops: long enough
// that running to its end, rather than being cancelled, is plain.
const lostCancelSleep = "select pg_sleep(20)"

// cancelCode runs what is written on w through its ReadyForQuery and returns the SQLSTATE of
// the error that ended it ("" for none).
func cancelCode(t *testing.T, w engine.PGWire) string {
	t.Helper()
	code := ""
	for {
		msg, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch msg[0] {
		case 'E':
			var er pgproto3.ErrorResponse
			if err := er.Decode(msg[5:]); err != nil {
				t.Fatal(err)
			}
			code = er.Code
		case 'Z':
			return code
		}
	}
}

// A wire's Cancel (the query timeout's, a lost lease's, a row limit's, a client's CancelRequest)
// whose request lands while the backend waits for the statement's messages is dropped by
// PostgreSQL; the request is sent again while the statement sent before the Cancel has not
// answered, so the statement is cancelled (57014) rather than run to its end.
func TestWireCancelDroppedBetweenMessagesIsSentAgain(t *testing.T) {
	e, _ := openConns(t, 1)
	sent := make(chan struct{}, 1000)
	pgengine.SetCancelSent(e, func() { sent <- struct{}{} })
	w := openWire(t, context.Background(), e)
	defer w.Close()
	q, _ := (&pgproto3.Query{String: lostCancelSleep}).Encode(nil)
	w.Send(q) // sent as far as the wire counts, not yet written: the backend waits for it
	w.Cancel()
	<-sent // the first request reached PostgreSQL while the backend waited for a message
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if code := cancelCode(t, w); code != "57014" {
		t.Fatalf("the statement cancelled while on its way to the backend ended with %q, want 57014 (query_canceled)", code)
	}
}

// A wire given back mid-statement (its client left) has its statement cancelled and read to its
// ReadyForQuery before the connection serves again; a request that PostgreSQL dropped (it
// landed before the backend read the statement) is sent again while the answer does not come,
// so the connection is drained, not abandoned with the statement still running: the next wire
// gets the same backend.
func TestWireGivenBackMidStatementCancelsItDespiteADroppedRequest(t *testing.T) {
	e, _ := openConns(t, 1)
	var mu sync.Mutex
	var flush func() // writes the statement once the first request was sent
	pgengine.SetCancelSent(e, func() {
		mu.Lock()
		f := flush
		flush = nil
		mu.Unlock()
		if f != nil {
			f()
		}
	})
	w := openWire(t, context.Background(), e)
	pid := pidOn(t, w)
	q, _ := (&pgproto3.Query{String: lostCancelSleep}).Encode(nil)
	w.Send(q)
	var flushErr error
	mu.Lock()
	flush = func() { flushErr = w.Flush() }
	mu.Unlock()
	_ = w.Close() // given back with the statement unanswered: cancelled, then awaited
	if flushErr != nil {
		t.Fatal(flushErr)
	}
	next := openWire(t, context.Background(), e)
	defer next.Close()
	if got := pidOn(t, next); got != pid {
		t.Fatalf("the next wire runs on backend %s, not %s: the connection given back mid-statement was abandoned", got, pid)
	}
	var pe *pgconn.PgError
	_, _, err := simpleOn(t, next, "select 1")
	if errors.As(err, &pe) {
		t.Fatalf("the connection serves on with an error: %v", err)
	}
}

// A pooled connection's cancel (its statement's context ended: the query timeout, a lost
// lease, the client gone) whose request PostgreSQL drops, because the backend still waited for
// the statement's messages, is sent again while the statement has not answered: it is
// cancelled (57014) within the connection's deadline, not run on past it. The handler is driven
// as pgx drives it: HandleCancel when the context ends, HandleUnwatchAfterCancel once the
// statement answered.
func TestPoolCancelDroppedBetweenMessagesIsSentAgain(t *testing.T) {
	pc, err := pgconn.Connect(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(context.Background())
	sent := make(chan struct{}, 1000)
	h := pgengine.CancelHandler(pc, func() { sent <- struct{}{} })
	h.HandleCancel(context.Background()) // the context ended before the statement reached the backend
	<-sent                               // the first request reached PostgreSQL while the backend waited
	_, err = pc.Exec(context.Background(), lostCancelSleep).ReadAll()
	h.HandleUnwatchAfterCancel()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("the statement cancelled on its way to the backend ended with %v, want 57014 (query_canceled)", err)
	}
}
