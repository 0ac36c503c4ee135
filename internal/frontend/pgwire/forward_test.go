package pgwire_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/proxy"
)

// oneConnProxy serves a PostgreSQL engine whose relay has ONE connection (so clients are known
// to share it) in pool mode mode; it returns the proxy's DSN and a direct admin connection.
func oneConnProxy(t *testing.T, mode string, maxRunning int) (pgclienttest.DSN, *pgx.Conn) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: url, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	d := pgclienttest.Start(t, pgclienttest.Setup{Engine: e, PoolMode: mode, Database: "demo", MaxRunningQueries: maxRunning})
	return d, connect(t, url)
}

func queryInt(t *testing.T, c *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestTransactionModeResetsBetweenClients: what client A leaves on the engine connection (a
// temporary table, a prepared statement, an advisory lock, a setting) is gone when client B
// gets the same connection next; A's own protocol-level prepared statement still works after.
func TestTransactionModeResetsBetweenClients(t *testing.T) {
	d, _ := oneConnProxy(t, proxy.PoolModeTransaction, 8)
	a := connect(t, d.URL())
	b := connect(t, d.URL())
	ctx := context.Background()
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"create temp table leaked (x int)", "prepare leaked_stmt as select 1",
		"select pg_advisory_lock(4242)", "set local work_mem = '7MB'"} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	pidA := queryInt(t, a, "select pg_backend_pid()")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if pidB := queryInt(t, b, "select pg_backend_pid()"); pidB != pidA {
		t.Fatalf("the clients ran on backends %d and %d: the test needs them to share one", pidA, pidB)
	}
	for sql, want := range map[string]int{
		"select count(*) from pg_prepared_statements where name = 'leaked_stmt'":               0,
		"select count(*) from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()": 0,
		"select count(*) from pg_class where relname = 'leaked' and relpersistence = 't'":      0,
		"select count(*) from pg_listening_channels()":                                         0,
		"select count(*)::int from (select 1 where current_setting('work_mem') = '7MB') s":     0,
	} {
		if got := queryInt(t, b, sql); got != want {
			t.Errorf("client B: %s = %d, want %d (leaked from client A)", sql, got, want)
		}
	}
	// A's statements prepared by pgx (protocol level) are prepared again where A runs next.
	for i := range 3 {
		if got := queryInt(t, a, "select pg_backend_pid()*0 + 5"); got != 5 {
			t.Fatalf("run %d: %d", i, got)
		}
		_ = queryInt(t, b, "select 1")
	}
}

// TestSessionModeKeepsTheConnection: a session-mode client keeps its engine connection (and
// its session state) across statements and transactions; another client has its own.
func TestSessionModeKeepsTheConnection(t *testing.T) {
	d := pgProxy(t, proxy.PoolModeSession)
	a := connect(t, d.URL())
	b := connect(t, d.URL())
	ctx := context.Background()
	for _, sql := range []string{"set work_mem = '7MB'", "create temp table mine (x int)", "insert into mine values (1), (2)"} {
		if _, err := a.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if got := queryInt(t, a, "select count(*) from mine"); got != 2 {
		t.Fatalf("the temp table has %d rows", got)
	}
	var wm string
	if err := a.QueryRow(ctx, "show work_mem").Scan(&wm); err != nil || wm != "7MB" {
		t.Fatalf("work_mem %q, %v", wm, err)
	}
	if queryInt(t, a, "select pg_backend_pid()") == queryInt(t, b, "select pg_backend_pid()") {
		t.Fatal("two session-mode clients share a backend")
	}
	// The server's ParameterStatus reaches the client.
	if _, err := a.Exec(ctx, "set timezone = 'Asia/Tokyo'"); err != nil {
		t.Fatal(err)
	}
	if tz := a.PgConn().ParameterStatus("TimeZone"); tz != "Asia/Tokyo" {
		t.Fatalf("the client was told TimeZone %q", tz)
	}
}

// rawClient is a client speaking the protocol by hand, so a test can hang up mid-anything.
func rawClient(t *testing.T, d pgclienttest.DSN) (net.Conn, *pgproto3.Frontend) {
	t.Helper()
	nc, err := net.Dial("tcp", net.JoinHostPort(d.Host, d.PortString()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": d.User, "database": d.Database}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			return nc, fe
		}
	}
}

// receiveUntil reads until a message of want's type.
func receiveUntil[T pgproto3.BackendMessage](t *testing.T, fe *pgproto3.Frontend) T {
	t.Helper()
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := msg.(T); ok {
			return m
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("error %s: %s", e.Code, e.Message)
		}
	}
}

// TestHangUpFreesEngineAndSlot: a client that hangs up mid-COPY, mid-statement or inside a
// transaction leaves no backend working and no capacity slot held (the cluster has ONE), in
// both pool modes.
func TestHangUpFreesEngineAndSlot(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // each mode its own database, proxy and statements (counted in its database only)
			d, admin := oneConnProxy(t, mode, 1)
			ctx := context.Background()
			if _, err := admin.Exec(ctx, "create table sink (x int)"); err != nil {
				t.Fatal(err)
			}
			busy := func(marker string) int {
				return queryInt(t, admin, "select count(*) from pg_stat_activity where query like '%"+marker+"%' and state <> 'idle' and pid <> pg_backend_pid() "+
					"and datname = current_database()")
			}
			// Mid-COPY FROM STDIN, inside a transaction.
			nc, fe := rawClient(t, d)
			fe.Send(&pgproto3.Query{String: "begin; copy sink from stdin /* qf-hangup-copy */"})
			_ = fe.Flush()
			receiveUntil[*pgproto3.CopyInResponse](t, fe)
			fe.Send(&pgproto3.CopyData{Data: []byte("1\n2\n")})
			_ = fe.Flush()
			waitFor(t, 10*time.Second, func() bool { return busy("qf-hangup-copy") == 1 })
			_ = nc.Close()
			waitFor(t, 10*time.Second, func() bool { return busy("qf-hangup-copy") == 0 })
			// Mid-statement.
			nc, fe = rawClient(t, d)
			fe.Send(&pgproto3.Query{String: "select pg_sleep(60) /* qf-hangup-sleep */"})
			_ = fe.Flush()
			waitFor(t, 10*time.Second, func() bool { return busy("qf-hangup-sleep") == 1 })
			_ = nc.Close()
			waitFor(t, 10*time.Second, func() bool { return busy("qf-hangup-sleep") == 0 })
			// The one slot is free: another client runs at once.
			c := connect(t, d.URL())
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var n int
			if err := c.QueryRow(qctx, "select count(*) from sink").Scan(&n); err != nil || n != 0 {
				t.Fatalf("after the hang-ups: %d rows, %v (want 0: the COPY's transaction rolled back)", n, err)
			}
		})
	}
}

// TestPgxCopyAndNotices: pgx's CopyFrom and a notice handler through the proxy.
func TestPgxCopyAndNotices(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := pgProxy(t, mode)
			var notices []string
			cfg, err := pgx.ParseConfig(d.URL())
			if err != nil {
				t.Fatal(err)
			}
			cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
			ctx := context.Background()
			c, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, "create table copied (a int, b text)"); err != nil {
				t.Fatal(err)
			}
			rows := [][]any{{1, "one"}, {2, nil}, {3, "three"}}
			n, err := c.CopyFrom(ctx, pgx.Identifier{"copied"}, []string{"a", "b"}, pgx.CopyFromRows(rows))
			if err != nil || n != 3 {
				t.Fatalf("CopyFrom: %d, %v", n, err)
			}
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"copied"}, []string{"a"}, pgx.CopyFromRows([][]any{{4}})); err != nil {
				t.Fatal(err)
			}
			_ = tx.Rollback(ctx)
			if got := queryInt(t, c, "select count(*) from copied"); got != 3 {
				t.Fatalf("%d rows, want 3", got)
			}
			if _, err := c.Exec(ctx, "do $$ begin raise notice 'hello %', 42; raise warning 'careful'; end $$"); err != nil {
				t.Fatal(err)
			}
			if len(notices) != 2 || notices[0] != "hello 42" || notices[1] != "careful" {
				t.Fatalf("notices %q", notices)
			}
		})
	}
}

// TestDeallocateProtocolStatement: DEALLOCATE of a statement the client prepared at protocol
// level (as psycopg 3 does when its cache evicts one) works, in both modes, and the name can
// be prepared again.
func TestDeallocateProtocolStatement(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			d := pgProxy(t, mode)
			c := connect(t, d.URL())
			ctx := context.Background()
			for _, dealloc := range []string{"deallocate stmt1", `DEALLOCATE PREPARE "stmt1";`} {
				if _, err := c.Prepare(ctx, "stmt1", "select $1::int * 2"); err != nil {
					t.Fatal(err)
				}
				var n int
				if err := c.QueryRow(ctx, "stmt1", 21).Scan(&n); err != nil || n != 42 {
					t.Fatalf("stmt1: %d, %v", n, err)
				}
				if _, err := c.Exec(ctx, dealloc, pgx.QueryExecModeSimpleProtocol); err != nil {
					t.Fatalf("%s: %v", dealloc, err)
				}
				if err := c.DeallocateAll(ctx); err != nil { // forget pgx's own cache of it
					t.Fatal(err)
				}
			}
		})
	}
}

// TestDeallocateAllForgetsClientStatements: after DEALLOCATE ALL the client may prepare the
// same names again.
func TestDeallocateAllForgetsClientStatements(t *testing.T) {
	d := pgProxy(t, proxy.PoolModeTransaction)
	c := connect(t, d.URL())
	ctx := context.Background()
	for range 2 {
		if _, err := c.Prepare(ctx, "again", "select 1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "deallocate all", pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
		if err := c.Deallocate(ctx, "again"); err != nil && !strings.Contains(err.Error(), "does not exist") {
			t.Fatal(err)
		}
	}
}

// TestFlushWithRowLimits: a client that reads a portal in chunks with Execute(max rows) and
// Flush, without Sync (node's pg-cursor, asyncpg), gets each chunk and PortalSuspended, in
// both modes.
func TestFlushWithRowLimits(t *testing.T) {
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			_, fe := rawClient(t, pgProxy(t, mode))
			fe.Send(&pgproto3.Parse{Query: "select generate_series(1, 5)"})
			fe.Send(&pgproto3.Bind{DestinationPortal: "cur"})
			fe.Send(&pgproto3.Execute{Portal: "cur", MaxRows: 2})
			fe.Send(&pgproto3.Flush{})
			_ = fe.Flush()
			var got []string
			read := func(until func(pgproto3.BackendMessage) bool) {
				for {
					msg, err := fe.Receive()
					if err != nil {
						t.Fatal(err)
					}
					switch m := msg.(type) {
					case *pgproto3.DataRow:
						got = append(got, string(m.Values[0]))
					case *pgproto3.PortalSuspended:
						got = append(got, "suspended")
					case *pgproto3.CommandComplete:
						got = append(got, string(m.CommandTag))
					case *pgproto3.ErrorResponse:
						t.Fatalf("error %s: %s", m.Code, m.Message)
					}
					if until(msg) {
						return
					}
				}
			}
			isSuspended := func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.PortalSuspended); return ok }
			read(isSuspended)
			fe.Send(&pgproto3.Execute{Portal: "cur", MaxRows: 2})
			fe.Send(&pgproto3.Flush{})
			_ = fe.Flush()
			read(isSuspended)
			fe.Send(&pgproto3.Execute{Portal: "cur", MaxRows: 2})
			fe.Send(&pgproto3.Sync{})
			_ = fe.Flush()
			read(func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ReadyForQuery); return ok })
			if want := "1 2 suspended 3 4 suspended 5 SELECT 1"; strings.Join(got, " ") != want {
				t.Fatalf("got %q, want %q", strings.Join(got, " "), want)
			}
		})
	}
}
