package pgengine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// openConns opens an engine of maxConns connections on a fresh database and returns it with
// the database's URL. options are connection parameters (sslmode, ...).
func openConns(t *testing.T, maxConns int, options ...string) (*pgengine.Engine, string) {
	t.Helper()
	opts := map[string]string{}
	for i := 0; i+1 < len(options); i += 2 {
		opts[options[i]] = options[i+1]
	}
	dsn := pgtest.NewDatabase(t)
	e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: dsn, MaxConns: maxConns, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e.(*pgengine.Engine), dsn
}

var owners atomic.Uint64

// openWire opens a wire of e for a new owner.
func openWire(t *testing.T, ctx context.Context, e *pgengine.Engine) engine.PGWire {
	t.Helper()
	w, err := e.OpenPGWire(ctx, engine.PGWireOptions{Owner: owners.Add(1)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// simpleOn runs sql as a simple Query on w and returns its rows' text values (one string per
// row, columns joined by "|"), its tag and its error.
func simpleOn(t *testing.T, w engine.PGWire, sql string) ([]string, string, error) {
	t.Helper()
	msg, _ := (&pgproto3.Query{String: sql}).Encode(nil)
	w.Send(msg)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var rows []string
	var tag string
	var qerr error
	for {
		msg, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch msg[0] {
		case 'D':
			rows = append(rows, dataRowText(msg))
		case 'C':
			tag = string(msg[5 : len(msg)-1])
		case 'E':
			var er pgproto3.ErrorResponse
			if err := er.Decode(msg[5:]); err != nil {
				t.Fatal(err)
			}
			qerr = &pgconn.PgError{Code: er.Code, Message: er.Message}
		case 'Z':
			return rows, tag, qerr
		}
	}
}

// simpleOnce runs sql on a wire of its own, closed afterwards.
func simpleOnce(t *testing.T, e *pgengine.Engine, sql string) []string {
	t.Helper()
	w := openWire(t, context.Background(), e)
	defer w.Close()
	rows, _, err := simpleOn(t, w, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

func dataRowText(msg []byte) string {
	body := msg[5:]
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	cols := make([]string, 0, n)
	for range n {
		size := int(int32(binary.BigEndian.Uint32(body)))
		body = body[4:]
		if size < 0 {
			cols = append(cols, "NULL")
			continue
		}
		cols = append(cols, string(body[:size]))
		body = body[size:]
	}
	return strings.Join(cols, "|")
}

func TestWireRowsTagsAndErrors(t *testing.T) {
	e, _ := openConns(t, 1)
	w := openWire(t, context.Background(), e)
	defer w.Close()
	rows, tag, err := simpleOn(t, w, "select g, null::text from generate_series(1,3) g")
	if err != nil || tag != "SELECT 3" || strings.Join(rows, ",") != "1|NULL,2|NULL,3|NULL" {
		t.Fatalf("rows %v tag %q err %v", rows, tag, err)
	}
	_, _, err = simpleOn(t, w, "select 1/0")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("division by zero: %v", err)
	}
	// The connection answered the error to its end: the next statement works on it.
	if rows, _, err := simpleOn(t, w, "select 'after'"); err != nil || rows[0] != "after" {
		t.Fatalf("after an error: %v %v", rows, err)
	}
}

// A wire's Cancel stops its statement on the server, also over TLS (the cancel request is sent
// the way pgconn would have sent it before the connection was taken over), and the cancelled
// connection is not used again.
func TestWireCancelStopsTheStatementOnTheServer(t *testing.T) {
	for _, sslmode := range []string{"disable", "require"} {
		t.Run(sslmode, func(t *testing.T) {
			e, dsn := openConns(t, 2, "sslmode", sslmode)
			const sleep = "select pg_sleep(30)"
			w := openWire(t, context.Background(), e)
			first := pidOn(t, w)
			go cancelWhenRunning(t, dsn, sleep, w.Cancel)
			start := time.Now()
			_, _, err := simpleOn(t, w, sleep)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "57014" {
				t.Fatalf("cancelled statement: %v", err)
			}
			if time.Since(start) > 20*time.Second {
				t.Fatal("the statement ran to its end")
			}
			_ = w.Close()
			w = openWire(t, context.Background(), e)
			defer w.Close()
			if next := pidOn(t, w); next == first {
				t.Fatalf("the cancelled connection (pid %s) was used again", first)
			}
		})
	}
}

// A wire closed while its statement runs (its client went away) has the statement cancelled
// on the server and its connection read to ReadyForQuery: the connection then serves the next
// wire (the same backend, reset for its new owner) instead of being closed and another opened.
func TestWireLeftMidStatementIsCancelledAndReused(t *testing.T) {
	e, dsn := openConns(t, 1)
	w := openWire(t, context.Background(), e)
	first := pidOn(t, w)
	const sleep = "select pg_sleep(30) /* qf-left-mid-statement */"
	msg, _ := (&pgproto3.Query{String: sleep}).Encode(nil)
	w.Send(msg)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	cancelWhenRunning(t, dsn, sleep, func() {})
	_ = w.Close()
	admin, err := pgconn.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	res := admin.ExecParams(context.Background(), "select count(*) from pg_stat_activity where state = 'active' and query = $1", [][]byte{[]byte(sleep)}, nil, nil, nil).Read()
	if res.Err != nil || string(res.Rows[0][0]) != "0" {
		t.Fatalf("the statement left behind still runs on the server: %v %v", res.Rows, res.Err)
	}
	w = openWire(t, context.Background(), e)
	defer w.Close()
	if next := pidOn(t, w); next != first {
		t.Fatalf("the connection left mid-statement (pid %s) was closed and another (pid %s) opened", first, next)
	}
	if rows, _, err := simpleOn(t, w, "select 'after'"); err != nil || rows[0] != "after" {
		t.Fatalf("on the connection taken back: %v %v", rows, err)
	}
}

// A wire's Cancel that comes after its Close (a lost lease's cancel racing the statement's end)
// does nothing: the connection may already serve the next client, whose statement it must not
// cancel.
func TestWireLateCancelLeavesTheNextClientAlone(t *testing.T) {
	e, dsn := openConns(t, 1)
	first := openWire(t, context.Background(), e)
	pid := pidOn(t, first)
	_ = first.Close()
	next := openWire(t, context.Background(), e)
	defer next.Close()
	if p := pidOn(t, next); p != pid {
		t.Fatalf("the next wire is on backend %s, not the first's %s: nothing to check", p, pid)
	}
	const sleep = "select pg_sleep(1) /* qf-late-cancel */"
	msg, _ := (&pgproto3.Query{String: sleep}).Encode(nil)
	next.Send(msg)
	if err := next.Flush(); err != nil {
		t.Fatal(err)
	}
	cancelWhenRunning(t, dsn, sleep, first.Cancel)
	for {
		msg, err := next.Next()
		if err != nil {
			t.Fatal(err)
		}
		if msg[0] == 'E' {
			var er pgproto3.ErrorResponse
			_ = er.Decode(msg[5:])
			t.Fatalf("the next client's statement failed: %s %s", er.Code, er.Message)
		}
		if msg[0] == 'Z' {
			return
		}
	}
}

func pidOn(t *testing.T, w engine.PGWire) string {
	t.Helper()
	rows, _, err := simpleOn(t, w, "select pg_backend_pid()")
	if err != nil {
		t.Fatal(err)
	}
	return rows[0]
}

// cancelWhenRunning calls cancel once the server shows statement running, whatever the load.
func cancelWhenRunning(t *testing.T, dsn, statement string, cancel func()) {
	defer cancel()
	conn, err := pgconn.Connect(context.Background(), dsn)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(context.Background())
	running := "select count(*) from pg_stat_activity where state = 'active' and query = '" + statement + "'"
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res := conn.ExecParams(context.Background(), running, nil, nil, nil, nil).Read()
		if res.Err == nil && len(res.Rows) == 1 && string(res.Rows[0][0]) == "1" {
			return
		}
	}
	t.Error("the statement never showed as running in pg_stat_activity")
}

// TestWireOverTLS: the relay's connections keep the TLS that pgconn negotiated.
func TestWireOverTLS(t *testing.T) {
	e, _ := openConns(t, 1, "sslmode", "require")
	if rows := simpleOnce(t, e, "select ssl from pg_stat_ssl where pid = pg_backend_pid()"); strings.Join(rows, ",") != "t" {
		t.Fatalf("relay connection TLS: %v", rows)
	}
}

// TestWireDropsAConnectionTheServerClosedWhileIdle: a connection the server ended while it sat
// idle (here pg_terminate_backend) is noticed before use, and the statement runs on a new one.
func TestWireDropsAConnectionTheServerClosedWhileIdle(t *testing.T) {
	for _, sslmode := range []string{"disable", "require"} {
		t.Run(sslmode, func(t *testing.T) {
			e, dsn := openConns(t, 1, "sslmode", sslmode)
			first := simpleOnce(t, e, "select pg_backend_pid()")[0]
			admin, err := pgconn.Connect(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(context.Background())
			if err := admin.Exec(context.Background(), "select pg_terminate_backend("+first+")").Close(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1100 * time.Millisecond) // past rawCheckIdleAfter: the idle connection is checked
			if second := simpleOnce(t, e, "select pg_backend_pid()")[0]; second == first {
				t.Fatalf("the terminated connection (pid %s) was used again", first)
			}
		})
	}
}

// TestWireWaitsForTheConnectionInUse: with the budget spent on a wire in use, the next wire
// waits for that connection to come back and is served on it; it does not close the
// connection the moment it comes back and open another (a new backend per hand-over, and the
// clients of a one-connection transaction pool on different backends).
func TestWireWaitsForTheConnectionInUse(t *testing.T) {
	e, _ := openConns(t, 1)
	ctx := context.Background()
	first := openWire(t, ctx, e)
	pid := pidOn(t, first)
	waiting := make(chan struct{})
	var once sync.Once
	pgengine.SetRelayWaiting(e, func() { once.Do(func() { close(waiting) }) })
	next := make(chan engine.PGWire, 1)
	go func() {
		w, err := e.OpenPGWire(ctx, engine.PGWireOptions{Owner: owners.Add(1)})
		if err != nil {
			t.Error(err)
		}
		next <- w
	}()
	select {
	case <-waiting:
	case <-time.After(30 * time.Second): // a bound on a wait that must begin, not a speed check
		_ = first.Close()
		t.Fatal("the second wire never waited for the connection in use")
	}
	_ = first.Close()
	w := <-next
	if w == nil {
		return
	}
	defer w.Close()
	if got := pidOn(t, w); got != pid {
		t.Fatalf("the waiting wire ran on backend %s, not on %s that was given back", got, pid)
	}
}

// The relay and the pgx pool share one budget of MaxConns connections, counted on the real
// PostgreSQL (pg_stat_activity rows of the test's database): with the budget's worth of wires
// open, a pgx-path query waits rather than opening one more, and is refused when its context
// ends first; once a wire is given back, its idle connection is closed to make room for the
// waiting query. The other way round, an idle pgx connection makes room for a wire.
func TestRelayAndPoolShareOneBudget(t *testing.T) {
	const budget = 3
	e, dsn := openConns(t, budget)
	admin, err := pgconn.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	u, _ := url.Parse(dsn)
	db := strings.TrimPrefix(u.Path, "/")
	open := func() int {
		t.Helper()
		res := admin.ExecParams(context.Background(), "select count(*) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
			[][]byte{[]byte(db)}, nil, nil, nil).Read()
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		var n int
		for _, c := range res.Rows[0][0] {
			n = 10*n + int(c-'0')
		}
		return n
	}
	// A closed connection's backend leaves pg_stat_activity a moment after its socket closes:
	// the count must come down to the budget (one over it stays over).
	atBudget := func(when string) {
		t.Helper()
		n := open()
		for deadline := time.Now().Add(10 * time.Second); n > budget && time.Now().Before(deadline); n = open() {
			time.Sleep(20 * time.Millisecond)
		}
		if n != budget {
			t.Fatalf("%d connections %s, want %d", n, when, budget)
		}
	}
	ctx := context.Background()
	var wires []engine.PGWire
	for range budget {
		w := openWire(t, ctx, e)
		pidOn(t, w)
		wires = append(wires, w)
	}
	atBudget("with the budget's worth of wires open")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	rows, err := e.Execute(short, &query.Request{SQL: "select 1"})
	cancel()
	if err == nil {
		_ = rows.Close()
		t.Fatalf("a pgx-path query ran past the budget (%d connections)", open())
	}
	atBudget("after the refused query")
	waited := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a bound on a wait that must end, not a speed check
		defer cancel()
		rows, err := e.Execute(ctx, &query.Request{SQL: "select 1"})
		if err == nil {
			err = rows.Close()
		}
		waited <- err
	}()
	_ = wires[0].Close() // idle in the relay pool: closed for the waiting query
	if err := <-waited; err != nil {
		t.Fatalf("the waiting query: %v", err)
	}
	atBudget("after the waiting query ran")
	// The pgx connection is idle now: a wire takes its place.
	w := openWire(t, ctx, e)
	defer w.Close()
	pidOn(t, w)
	atBudget("with a wire in the idle pgx connection's place")
	for _, w := range wires[1:] {
		_ = w.Close()
	}
}

// A wire is made in a spare's memory (PGWireOptions.Spare: an allocation less per transaction)
// only when the spare is closed and was never cancelled: a cancelled wire's request may still
// be on its way, and an open one is still its client's. The wire made there works.
func TestWireMadeInASpareOnlyWhenNothingReachesIt(t *testing.T) {
	e, _ := openConns(t, 2)
	ctx := context.Background()
	owner := owners.Add(1)
	open := func(spare engine.PGWire) engine.PGWire {
		t.Helper()
		w, err := e.OpenPGWire(ctx, engine.PGWireOptions{Owner: owner, Spare: spare})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	first := open(nil)
	pid := pidOn(t, first)
	_ = first.Close()
	second := open(first)
	if second != first {
		t.Fatal("a closed, uncancelled spare: the wire was not made in its memory")
	}
	if p := pidOn(t, second); p != pid {
		t.Fatalf("the wire made in the spare is on backend %s, not its connection's %s", p, pid)
	}
	other := open(second) // second is still open
	if other == second {
		t.Fatal("a wire was made in the memory of a spare still open")
	}
	_ = other.Close()
	second.Cancel()
	_ = second.Close()
	third := open(second)
	defer third.Close()
	if third == second {
		t.Fatal("a wire was made in the memory of a cancelled spare")
	}
	if _, _, err := simpleOn(t, third, "select 1"); err != nil {
		t.Fatal(err)
	}
}
