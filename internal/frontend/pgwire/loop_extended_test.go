//go:build linux

package pgwire_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/node/proxy"
)

// The extended protocol on the unnamed statement runs on the event loop, answer for answer as
// PostgreSQL gives it: row limits and PortalSuspended, named portals and their Close, Describe
// of the statement and of the portal, an error mid-batch that skips to Sync, a Parse that
// fails, two batches in one write, Flush; named statements (renamed on the engine connection,
// parsed there again when it forgot them), their Close and errors. Each case counts the
// Executes the loop relayed and its hand-backs to the goroutine, and the history holds a
// row-limited portal's Executes with their rows.
func TestEventLoopRelaysExtendedProtocol(t *testing.T) {
	for _, mode := range []string{proxy.PoolModeTransaction, proxy.PoolModeSession} {
		t.Run(mode, func(t *testing.T) {
			srv, proxyURL, direct, h := loopServerDirect(t, mode, 4, pgwireTrustAll(), nil)
			pu, _ := url.Parse(proxyURL)
			du, _ := url.Parse(direct)
			db := strings.TrimPrefix(du.Path, "/")
			series := "select g, g::text s, null::int n from generate_series(1, 5) g /* loop-series */"
			cases := []struct {
				name string
				msgs []pgproto3.FrontendMessage
				// The Executes the loop relays, at least and at most: after an error, those
				// it scanned before the error came back.
				least, most int64
				pauses      int64 // hand-backs to the goroutine
			}{
				{"suspension", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Query: series},
					&pgproto3.Bind{ResultFormatCodes: []int16{1, 0, 1}},
					&pgproto3.Describe{ObjectType: 'P'},
					&pgproto3.Execute{MaxRows: 2},
					&pgproto3.Execute{MaxRows: 2},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 3, 3, 0},
				{"named-portal", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Query: "select g from generate_series(1, 3) g"},
					&pgproto3.Bind{DestinationPortal: "p1"},
					&pgproto3.Execute{Portal: "p1", MaxRows: 1},
					&pgproto3.Execute{Portal: "p1", MaxRows: 1},
					&pgproto3.Close{ObjectType: 'P', Name: "p1"},
					&pgproto3.Sync{},
				}, 2, 2, 0},
				{"describe-statement-params", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Query: "select $1::int4 + 1 a, $2::text b", ParameterOIDs: []uint32{23}},
					&pgproto3.Describe{ObjectType: 'S'},
					&pgproto3.Bind{ParameterFormatCodes: []int16{1, 0}, Parameters: [][]byte{{0, 0, 0, 41}, []byte("x")}},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 1, 1, 0},
				{"error-mid-batch", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Query: "select 1/(g-1) from generate_series(1, 2) g"},
					&pgproto3.Bind{},
					&pgproto3.Execute{},
					&pgproto3.Parse{Query: "select 2"},
					&pgproto3.Bind{},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
					&pgproto3.Parse{Query: "select 3"}, // after the Sync: runs
					&pgproto3.Bind{},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 2, 3, 0},
				{"parse-error", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Query: "selec 1"},
					&pgproto3.Bind{},
					&pgproto3.Describe{ObjectType: 'P'},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 0, 1, 0},
				{"two-batches-flush", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Query: "select 'a' x"},
					&pgproto3.Bind{},
					&pgproto3.Execute{},
					&pgproto3.Flush{},
					&pgproto3.Sync{},
					&pgproto3.Parse{Query: "select 'b' y"},
					&pgproto3.Bind{},
					&pgproto3.Describe{ObjectType: 'P'},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 2, 2, 0},
				{"empty", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Query: ""},
					&pgproto3.Bind{},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 1, 1, 0},
				{"named-statement", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Name: "s1", Query: "select $1::int4 * 2 d", ParameterOIDs: []uint32{23}},
					&pgproto3.Bind{PreparedStatement: "s1", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{0, 0, 0, 21}}},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 1, 1, 0},
				// pgx's cache_statement mode: prepared and described once, then Bind, Describe
				// of the portal, Execute and Sync for each statement.
				{"named-prepared-then-executed", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Name: "stmtcache_1", Query: "select $1::int4 + g s from generate_series(1, 2) g"},
					&pgproto3.Describe{ObjectType: 'S', Name: "stmtcache_1"},
					&pgproto3.Sync{},
					&pgproto3.Bind{PreparedStatement: "stmtcache_1", Parameters: [][]byte{[]byte("10")}},
					&pgproto3.Describe{ObjectType: 'P'},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
					&pgproto3.Bind{PreparedStatement: "stmtcache_1", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{0, 0, 0, 20}}, ResultFormatCodes: []int16{1}},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 2, 2, 0},
				// A statement's Close and a new statement under its name.
				{"named-closed-and-reused", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Name: "s2", Query: "select 'first' w"},
					&pgproto3.Bind{PreparedStatement: "s2"},
					&pgproto3.Execute{},
					&pgproto3.Close{ObjectType: 'S', Name: "s2"},
					&pgproto3.Sync{},
					&pgproto3.Parse{Name: "s2", Query: "select 'second' w"},
					&pgproto3.Bind{PreparedStatement: "s2"},
					&pgproto3.Execute{},
					&pgproto3.Close{ObjectType: 'S', Name: "s2"},
					&pgproto3.Close{ObjectType: 'S', Name: "never-prepared"},
					&pgproto3.Sync{},
				}, 2, 2, 0},
				// pgx after an error: the statement closed in a batch of its own (a transaction's
				// first message in transaction mode), then prepared again.
				{"named-closed-alone", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Name: "s4", Query: "select 4 / $1::int4 q"},
					&pgproto3.Bind{PreparedStatement: "s4", Parameters: [][]byte{[]byte("0")}},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
					&pgproto3.Close{ObjectType: 'S', Name: "s4"},
					&pgproto3.Sync{},
					&pgproto3.Parse{Name: "s4", Query: "select 4 / $1::int4 q"},
					&pgproto3.Bind{PreparedStatement: "s4", Parameters: [][]byte{[]byte("2")}},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 2, 2, 0},
				// A statement the engine connection has already, under another client name: its
				// ParseComplete is the unnamed statement's.
				{"named-same-sql", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Name: "a", Query: "select 'same' v"},
					&pgproto3.Bind{PreparedStatement: "a"},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
					&pgproto3.Parse{Name: "b", Query: "select 'same' v"},
					&pgproto3.Bind{PreparedStatement: "b"},
					&pgproto3.Execute{},
					&pgproto3.Close{ObjectType: 'S', Name: "a"},
					&pgproto3.Parse{Name: "a", Query: "select 'same' v"}, // pgx after an error
					&pgproto3.Bind{PreparedStatement: "a"},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 3, 3, 0},
				// Errors: a name taken (forward.go refuses it), a statement that fails to parse
				// (the engine's error, and the name stays free), a Bind of an unknown name.
				{"named-errors", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Name: "e1", Query: "select 1"},
					&pgproto3.Parse{Name: "e1", Query: "select 1"},
					&pgproto3.Sync{},
					&pgproto3.Parse{Name: "e2", Query: "selec 2"},
					&pgproto3.Sync{},
					&pgproto3.Parse{Name: "e2", Query: "select 2"},
					&pgproto3.Bind{PreparedStatement: "e2"},
					&pgproto3.Execute{},
					&pgproto3.Bind{PreparedStatement: "nope"},
					&pgproto3.Execute{},
					&pgproto3.Sync{},
				}, 1, 1, 2},
				// The engine connection forgets its statements (DISCARD PLANS keeps them on
				// PostgreSQL, under names it no longer uses): the next Bind parses the client's
				// statement there again first.
				{"named-parsed-again", []pgproto3.FrontendMessage{
					&pgproto3.Parse{Name: "s3", Query: "select $1::text || '!' x"},
					&pgproto3.Sync{},
					&pgproto3.Query{String: "discard plans"},
					&pgproto3.Bind{PreparedStatement: "s3", Parameters: [][]byte{[]byte("again")}},
					&pgproto3.Describe{ObjectType: 'P'},
					&pgproto3.Execute{},
					&pgproto3.Describe{ObjectType: 'S', Name: "s3"},
					&pgproto3.Sync{},
				}, 1, 1, 1},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					// After a first Query: the loop takes a client once it has used an engine
					// connection, between batches.
					trace := func(addr, user string) []string {
						fe := wireConnect(t, addr, user, db)
						traceOn(t, fe, &pgproto3.Query{String: "select 1"})
						return traceOn(t, fe, tc.msgs...)
					}
					want := trace(du.Host, du.User.Username())
					before, paused := srv.LoopExecutes(), srv.LoopPauses()
					got := trace(pu.Host, "alice")
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("through the loop:\n  %q\ndirect:\n  %q", got, want)
					}
					n := srv.LoopExecutes() - before
					if n < tc.least || n > tc.most {
						t.Fatalf("the loop relayed %d Executes, want %d to %d", n, tc.least, tc.most)
					}
					if n := srv.LoopPauses() - paused; n != tc.pauses {
						t.Fatalf("the loop handed the client back %d times, want %d", n, tc.pauses)
					}
				})
			}
			recs := h.Find(series)
			if len(recs) != 3 || recs[0].Rows+recs[1].Rows+recs[2].Rows != 5 {
				t.Fatalf("history of the row-limited portal: %+v, want 3 Executes of 5 rows in all", recs)
			}
		})
	}
}

// A real client's extended protocol on the loop: pgbench -M extended sends Parse, Bind,
// Describe, Execute and Sync on the unnamed statement for every statement (and -M prepared
// named ones, relayed by the loop too); every transaction must go through and most of the
// extended ones on the loop.
func TestEventLoopPgbenchExtended(t *testing.T) {
	srv, proxyURL, direct, _ := loopServerDirect(t, proxy.PoolModeTransaction, 4, pgwireTrustAll(), nil)
	pu, _ := url.Parse(proxyURL)
	runPgbench(t, pu.Host, direct)
	// select-only/extended: 100 Executes; tpcb -N: 700 more.
	if n := srv.LoopExecutes(); n < 100 {
		t.Fatalf("the loop relayed %d Executes of pgbench -M extended, want at least 100", n)
	}
}

// A cancel request reaches a statement the loop relays (pgconn's ExecParams: the unnamed
// statement in one batch): pg_sleep stops with 57014, and the client's next statement runs.
func TestEventLoopCancelsExtended(t *testing.T) {
	srv, proxyURL, direct, _ := loopServerDirect(t, proxy.PoolModeTransaction, 4, pgwireTrustAll(), nil)
	cfg, err := pgx.ParseConfig(proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	// The cancel request, and time for its answer: pgx's default closes the connection a
	// second after the context ends, which a loaded machine may take.
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: time.Minute}
	}
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	admin := connect(t, direct)
	// The loop takes a client between batches: the first one ends the goroutine's turn.
	if got := queryInt(t, c, "select 1"); got != 1 {
		t.Fatal(got)
	}
	before := srv.LoopExecutes()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.PgConn().ExecParams(ctx, "select pg_sleep(30) /* qf-cancel-test */", nil, nil, nil, nil).Close()
		done <- err
	}()
	waitFor(t, 30*time.Second, func() bool { return countSleeping(t, admin) == 1 })
	if srv.LoopExecutes() != before+1 {
		t.Fatalf("the sleep was not relayed by the loop (%d Executes)", srv.LoopExecutes()-before)
	}
	cancel()
	err = <-done
	var pe *pgconn.PgError
	if !errorsAs(err, &pe) || pe.Code != "57014" {
		t.Fatalf("cancelled sleep: %v, want 57014", err)
	}
	waitFor(t, 10*time.Second, func() bool { return countSleeping(t, admin) == 0 })
	res := c.PgConn().ExecParams(context.Background(), "select $1::int + 1", [][]byte{[]byte("41")}, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "42" {
		t.Fatalf("after the cancel: %+v", res)
	}
}
