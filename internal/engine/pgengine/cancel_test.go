package pgengine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// startBound is how long a statement may take to show up as running on a loaded machine.
const startBound = 30 * time.Second

// cancelled is one engine with a single connection, and an admin connection that looks at
// what the server runs.
type cancelled struct {
	e     query.Engine
	mu    sync.Mutex // admin serves one goroutine at a time
	admin *pgx.Conn
}

func openCancelled(t *testing.T) *cancelled {
	t.Helper()
	url := pgtest.NewDatabase(t)
	e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: url, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	return &cancelled{e: e, admin: admin}
}

// active counts the backends running a statement that carries marker (-1 after an error, which
// it reports; it may run on another goroutine than the test's).
func (c *cancelled) active(t *testing.T, marker string) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int
	err := c.admin.QueryRow(context.Background(), `select count(*) from pg_stat_activity
		where query like '%'||$1||'%' and state = 'active' and pid <> pg_backend_pid()`, marker).Scan(&n)
	if err != nil {
		t.Error(err)
		return -1
	}
	return n
}

// whenRunning calls fn once the statement carrying marker runs on the server.
func (c *cancelled) whenRunning(t *testing.T, marker string, fn func()) {
	t.Helper()
	deadline := time.Now().Add(startBound)
	for c.active(t, marker) == 0 {
		if time.Now().After(deadline) {
			t.Errorf("the statement %s did not start within %v", marker, startBound)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fn()
}

// backendPID is the server process behind the engine's one connection.
func (c *cancelled) backendPID(t *testing.T) int64 {
	t.Helper()
	rows, err := c.e.Execute(context.Background(), &query.Request{SQL: "select pg_backend_pid()::int8"})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	b, err := rows.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var pid int64
	if _, err := fmt.Sscan(b.Column(0).ValueStr(0), &pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// drain reads rows to their end and closes them; it returns the error that ended them (nil
// for the end).
func drain(rows query.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		if _, err := rows.Next(context.Background()); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

var cancelMarkers atomic.Int64

func cancelMarker() string {
	return fmt.Sprintf("qf_cancel_%d_%d", time.Now().UnixNano()%1e6, cancelMarkers.Add(1))
}

// firstFast returns its first batches at once and then sleeps a long time before its last row.
func firstFast(marker string) string {
	return "select g, pg_sleep(case when g < 3000 then 0 else 120 end) from generate_series(1, 3000) g /* " + marker + " */"
}

// A statement whose context ends, while it runs or while its rows stream, or whose rows are
// closed before their end, no longer runs on PostgreSQL once the call that saw it returns (so
// the capacity slot freed after it is free on the engine too), and the connection it ran on
// serves the next statement.
func TestCancelEndsTheStatementOnTheServer(t *testing.T) {
	c := openCancelled(t)
	pid := c.backendPID(t)
	cases := []struct {
		name string
		run  func(t *testing.T, m string) error // returns the error the caller saw
	}{
		{"cancel while it runs", func(t *testing.T, m string) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go c.whenRunning(t, m, cancel)
			return drain(c.e.Execute(ctx, &query.Request{SQL: "select pg_sleep(600) /* " + m + " */"}))
		}},
		{"deadline while it runs", func(t *testing.T, m string) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return drain(c.e.Execute(ctx, &query.Request{SQL: "select pg_sleep(600) /* " + m + " */"}))
		}},
		{"cancel while it streams", func(t *testing.T, m string) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			return c.cancelWhileStreaming(t, m, ctx, cancel)
		}},
		{"closed before its end", func(t *testing.T, m string) error {
			rows, err := c.e.Execute(context.Background(), &query.Request{SQL: firstFast(m)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rows.Next(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.whenRunning(t, m, func() {})
			closed := make(chan struct{})
			go func() { _ = rows.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(startBound):
				t.Fatal("Close waits for the rest of the result instead of cancelling it")
			}
			return context.Canceled
		}},
		{"closed before its end, with the core's cancel handed down", func(t *testing.T, m string) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stopped atomic.Bool
			qctx := query.WithStop(ctx, func() { stopped.Store(true); cancel() })
			rows := c.firstBatch(t, m, qctx)
			c.whenRunning(t, m, func() {})
			if stopped.Load() {
				t.Fatal("the statement was stopped before its rows were closed")
			}
			_ = rows.Close()
			if !stopped.Load() {
				t.Fatal("Close did not stop the statement through the cancel it was handed")
			}
			return ctx.Err()
		}},
		// A query.Statement (trinohttp's): the engine watches it itself (watchedRows), not pgx.
		{"a statement's cancel while it runs", func(t *testing.T, m string) error {
			sc, cancel := query.NewStatement(context.Background())
			defer cancel()
			go c.whenRunning(t, m, cancel)
			return drain(c.e.Execute(query.WithEngineTag(sc, "qf-tag"), &query.Request{SQL: "select pg_sleep(600) /* " + m + " */"}))
		}},
		{"a statement's cancel while it streams", func(t *testing.T, m string) error {
			sc, cancel := query.NewStatement(context.Background())
			defer cancel()
			return c.cancelWhileStreaming(t, m, sc, cancel)
		}},
		{"a statement's rows closed before their end", func(t *testing.T, m string) error {
			sc, cancel := query.NewStatement(context.Background())
			defer cancel()
			rows := c.firstBatch(t, m, sc)
			c.whenRunning(t, m, func() {})
			_ = rows.Close()
			return sc.Err()
		}},
		{"a deadline over a statement", func(t *testing.T, m string) error {
			sc, cancel := query.NewStatement(context.Background())
			defer cancel()
			ctx, stop := context.WithTimeout(sc, time.Second)
			defer stop()
			return drain(c.e.Execute(ctx, &query.Request{SQL: "select pg_sleep(600) /* " + m + " */"}))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := cancelMarker()
			err := tc.run(t, m)
			if n := c.active(t, m); n != 0 {
				t.Fatalf("%d backends still run the statement after the call returned", n)
			}
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the caller saw %v, want the cancellation", err)
			}
			if got := c.backendPID(t); got != pid {
				t.Fatalf("the next statement ran on backend %d, not on the cancelled one's %d: its connection was closed", got, pid)
			}
		})
	}
}

// cancelWhileStreaming runs firstFast(m) under ctx, reads its first batch, cancels it once it
// runs on the server and returns the error its rows end with.
func (c *cancelled) cancelWhileStreaming(t *testing.T, m string, ctx context.Context, cancel func()) error {
	rows := c.firstBatch(t, m, ctx)
	defer rows.Close()
	go c.whenRunning(t, m, cancel)
	var err error
	for err == nil {
		_, err = rows.Next(ctx)
	}
	return err
}

// firstBatch runs firstFast(m) under ctx and reads its first batch.
func (c *cancelled) firstBatch(t *testing.T, m string, ctx context.Context) query.Rows {
	rows, err := c.e.Execute(ctx, &query.Request{SQL: firstFast(m)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rows.Next(ctx); err != nil {
		t.Fatal(err)
	}
	return rows
}

// A relay connection given back in the middle of a statement (the client left, the frontend
// gave up on it) no longer runs the statement on PostgreSQL once Close returns: the slot the
// caller frees next is free on the engine too. Whether its statement was sent whole (a simple
// Query), without its Sync (an Execute and a Flush) or cancelled first.
func TestWireClosedMidStatementEndsItOnTheServer(t *testing.T) {
	c := openCancelled(t)
	e := c.e.(*pgengine.Engine)
	encode := func(msgs ...pgproto3.FrontendMessage) []byte {
		var b []byte
		for _, m := range msgs {
			b, _ = m.Encode(b)
		}
		return b
	}
	// The statement takes two seconds to end once cancelled (as a statement that cleans up
	// after itself would): closing the socket after the cancel request leaves it running.
	slow := func(m string) string {
		return "do $$ begin perform pg_sleep(600); exception when query_canceled then perform pg_sleep(2); end $$ /* " + m + " */"
	}
	cases := []struct {
		name   string
		send   func(m string) []byte
		cancel bool
	}{
		{"query", func(m string) []byte {
			return encode(&pgproto3.Query{String: slow(m)})
		}, false},
		{"execute without its sync", func(m string) []byte {
			return encode(&pgproto3.Parse{Query: slow(m)}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Flush{})
		}, false},
		{"cancelled first", func(m string) []byte {
			return encode(&pgproto3.Query{String: slow(m)})
		}, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := cancelMarker()
			w, err := e.OpenPGWire(context.Background(), engine.PGWireOptions{Owner: uint64(1000 + i)})
			if err != nil {
				t.Fatal(err)
			}
			msg := tc.send(m)
			for len(msg) > 0 {
				n := 1 + int(binary.BigEndian.Uint32(msg[1:5]))
				w.Send(msg[:n])
				msg = msg[n:]
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			c.whenRunning(t, m, func() {})
			if tc.cancel {
				w.Cancel()
			}
			_ = w.Close()
			if n := c.active(t, m); n != 0 {
				t.Fatalf("%d backends still run the statement after Close returned", n)
			}
		})
	}
}

// Under a query.Statement (the engine's own watch, watchedRows), a statement's rows, its
// PostgreSQL error and an early Close are as under any context, and each gives its connection
// back (the engine has one: a connection kept would hold the next statement for ever).
func TestAStatementsRowsAndErrorsGiveTheConnectionBack(t *testing.T) {
	c := openCancelled(t)
	pid := c.backendPID(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			sc, cancel := query.NewStatement(context.Background())
			switch i % 3 {
			case 0:
				rows, err := c.e.Execute(sc, &query.Request{SQL: "select 41 + 1"})
				if err != nil {
					t.Errorf("select: %v", err)
					break
				}
				b, err := rows.Next(sc)
				if err != nil || b == nil || b.NumRows() != 1 {
					t.Errorf("select's rows: %v, %v", b, err)
				}
				if _, err := rows.Next(sc); err != io.EOF {
					t.Errorf("select's end: %v, want io.EOF", err)
				}
				_ = rows.Close()
			case 1:
				_, err := c.e.Execute(sc, &query.Request{SQL: "selec 1"})
				var qe *query.Error
				if !errors.As(err, &qe) || qe.Code != "42601" {
					t.Errorf("a syntax error: %v, want SQLSTATE 42601", err)
				}
			case 2:
				rows, err := c.e.Execute(sc, &query.Request{SQL: "select g from generate_series(1, 100000) g"})
				if err != nil {
					t.Errorf("select: %v", err)
					break
				}
				_ = rows.Close()
			}
			cancel()
		}
	}()
	select {
	case <-done:
	case <-time.After(startBound):
		t.Fatal("the statements did not end: a connection was not given back")
	}
	if got := c.backendPID(t); got != pid {
		t.Fatalf("the last statement ran on backend %d, not %d: a connection was closed", got, pid)
	}
}
