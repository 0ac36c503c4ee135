package disconnect

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/querynode"
	"github.com/queryflux/queryflux/node/env"
)

// stopBound is how long a gone client's query may keep running on the engine, and its slot
// stay taken, once the proxy could know it is gone. It is far below every expiry the proxy
// also has (Flight's one-minute result TTL, the engines' own timeouts), so a query stopped
// only by one of those fails; its margin is for a machine loaded by a parallel test run.
const stopBound = 15 * time.Second

// startBound is how long a long query may take to show up as running.
const startBound = 30 * time.Second

// clientTimeout is the Trino frontend's abandoned-query expiry in these tests.
const clientTimeout = 2 * time.Second

// target is one engine behind the proxy.
type target struct {
	name    string
	db      string // the database clients name
	cluster string // the YAML of the cluster named "c"
	// long returns a statement that runs for tens of seconds, carrying marker.
	long func(marker string) string
	// firstFast, when set, returns a statement whose first rows come at once (more than the
	// engine buffers before it sends, and more than one record batch of engine.BatchRowsMax)
	// and whose last takes tens of seconds, carrying marker.
	firstFast func(marker string) string
	// running reports whether the engine still runs the statement carrying marker.
	running func(t *testing.T, n *querynode.Node, marker string) bool
	// listsQueries: running reads the engine's own list of what it runs (a server's process
	// list), so it shows the moment the slot frees whether the query still runs there.
	listsQueries bool
}

// node starts a query node with every frontend on loopback and one cluster "c" (one slot).
func node(t *testing.T, tg target) *querynode.Node {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`queryflux:
  frontends:
    trino: {clientTimeoutSecs: %d}
%s
clusterGroups:
  - {name: g, members: [c], maxQueuedQueries: 10, capacityWaitTimeoutSecs: 60}
routingFallback: g
settings:
  security: {trustLoopback: true}
`, int(clientTimeout/time.Second), tg.cluster)))
	if err != nil {
		t.Fatal(err)
	}
	n := querynode.New(querynode.Options{Env: env.Real(slog.New(slog.DiscardHandler)), OpenEngine: querynode.EngineFactory(querynode.Engines())})
	t.Cleanup(func() { _ = n.Close() })
	if err := n.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	lo := config.Frontend{Enabled: true, Listen: "127.0.0.1:0"}
	fe := config.Frontends{Postgres: lo, MySQL: lo, Trino: lo, FlightSQL: lo}
	fe.Trino.ClientTimeoutSecs = int(clientTimeout / time.Second)
	if err := n.Listen(fe); err != nil {
		t.Fatal(err)
	}
	return n
}

func postgresTarget(t *testing.T) target {
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	return target{
		name: "postgres", db: strings.TrimPrefix(u.Path, "/"),
		cluster: fmt.Sprintf(`clusters:
  - {name: c, engine: postgres, endpoint: "%s", database: "%s", credentials: {user: "%s"}, maxRunningQueries: 1}`,
			u.Host, strings.TrimPrefix(u.Path, "/"), u.User.Username()),
		long: func(m string) string { return "select pg_sleep(60) /* " + m + " */" },
		firstFast: func(m string) string {
			return "select g, repeat('x', 100), pg_sleep(case when g < 3000 then 0 else 60 end) from generate_series(1, 3000) g /* " + m + " */"
		},
		listsQueries: true,
		running: func(t *testing.T, _ *querynode.Node, m string) bool {
			var n int
			err := admin.QueryRow(context.Background(), `select count(*) from pg_stat_activity
				where query like '%'||$1||'%' and state = 'active' and pid <> pg_backend_pid()`, m).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			return n > 0
		},
	}
}

func mariadbTarget(t *testing.T) target {
	dsn, name := mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return target{
		name: "mariadb", db: name,
		cluster: fmt.Sprintf(`clusters:
  - {name: c, engine: mysql, endpoint: "%s", database: "%s", credentials: {user: "%s"}, maxRunningQueries: 1}`,
			cfg.Addr, name, cfg.User),
		long: func(m string) string { return "select sleep(60) /* " + m + " */" },
		firstFast: func(m string) string {
			return "select seq, repeat('x', 100), sleep(if(seq < 3000, 0, 60)) from seq_1_to_3000 /* " + m + " */"
		},
		listsQueries: true,
		running: func(t *testing.T, _ *querynode.Node, m string) bool {
			var n int
			err := admin.QueryRow(`select count(*) from information_schema.processlist
				where info like ? and info not like '%processlist%'`, "%"+m+"%").Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			return n > 0
		},
	}
}

// duckdbTarget has one slot and so one DuckDB connection: while the long query runs on it,
// nothing else can; a short query that gets through proves it stopped.
func duckdbTarget(t *testing.T) target {
	return target{
		name: "duckdb", db: "memory",
		cluster: `clusters:
  - {name: c, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 1}`,
		// A scan, not a join: DuckDB looks at an interrupt only between the chunks an operator
		// emits, and a cross join's probe of one input chunk can run for minutes.
		long: func(m string) string {
			return "select sum(a.range) as " + strings.ReplaceAll(m, "-", "_") + " from range(1000000000000) a"
		},
		running: func(t *testing.T, n *querynode.Node, _ string) bool {
			if n.Core().Running("c") > 0 {
				return true
			}
			ctx, cancel := context.WithTimeout(context.Background(), stopBound)
			defer cancel()
			db := openMySQL(t, n, nil)
			var v int
			if err := db.QueryRowContext(ctx, "select 42").Scan(&v); err != nil || v != 42 {
				t.Logf("duckdb still busy: %v", err)
				return true
			}
			return false
		},
	}
}

func targets(t *testing.T) []func(*testing.T) target {
	return []func(*testing.T) target{postgresTarget, mariadbTarget, duckdbTarget}
}

// waitUntil polls cond until it holds or limit passes.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// started waits until the long query holds its slot and, where the engine shows it, runs there.
func started(t *testing.T, n *querynode.Node, tg target, marker string) {
	t.Helper()
	waitUntil(t, startBound, "the slot taken", func() bool { return n.Core().Running("c") == 1 })
	if tg.name != "duckdb" {
		waitUntil(t, startBound, "the query running on the engine", func() bool { return tg.running(t, n, marker) })
	}
}

// stopped requires the engine to stop the query and the slot to be free within bound, and the
// query to be gone from the engine by the time its slot is free: a slot freed earlier lets the
// next query in while the engine still runs this one, over the cluster's cap.
func stopped(t *testing.T, n *querynode.Node, tg target, marker string, bound time.Duration) {
	t.Helper()
	start := time.Now()
	waitUntil(t, bound, "the slot freed", func() bool { return n.Core().Running("c") == 0 })
	if tg.listsQueries && tg.running(t, n, marker) {
		t.Fatalf("%s: the slot was freed while the engine still ran the query", tg.name)
	}
	waitUntil(t, bound, "the query stopped on the engine", func() bool { return !tg.running(t, n, marker) })
	t.Logf("%s: stopped %v after the client left", tg.name, time.Since(start).Round(time.Millisecond))
}

var markers atomic.Int64

func marker() string { return fmt.Sprintf("qf-gone-%d-%d", time.Now().UnixNano()%1e6, markers.Add(1)) }

// connTracker is a dialer that remembers its last connection, to close it as a killed client
// process would leave it.
type connTracker struct{ last atomic.Pointer[net.Conn] }

func (c *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		c.last.Store(&nc)
	}
	return nc, err
}

func (c *connTracker) kill() { (*c.last.Load()).Close() }

func openMySQL(t *testing.T, n *querynode.Node, tr *connTracker) *sql.DB {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = querynode.LoopbackUser, "tcp", n.Addrs()["mysql"]
	if tr != nil {
		name := fmt.Sprintf("qfgone%d", markers.Add(1))
		gomysql.RegisterDialContext(name, func(ctx context.Context, addr string) (net.Conn, error) { return tr.dial(ctx, "tcp", addr) })
		cfg.Net = name
	}
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// each runs fn against every engine.
func each(t *testing.T, fn func(t *testing.T, n *querynode.Node, tg target)) {
	for _, mk := range targets(t) {
		tg := mk(t)
		t.Run(tg.name, func(t *testing.T) { fn(t, node(t, tg), tg) })
	}
}

// The PostgreSQL wire: the client's socket closes while the statement runs.
func TestPgwireClientKilled(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		m := marker()
		c, err := pgx.Connect(context.Background(), "postgres://"+querynode.LoopbackUser+"@"+n.Addrs()["postgres"]+"/"+tg.db+"?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			if _, err := c.Exec(context.Background(), tg.long(m)); err != nil {
				t.Logf("pgwire: %v", err)
			}
		}()
		started(t, n, tg, m)
		_ = c.PgConn().Conn().Close()
		stopped(t, n, tg, m, stopBound)
	})
}

// The MySQL wire: the client's socket closes while the statement runs.
func TestMySQLClientKilled(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		m := marker()
		tr := &connTracker{}
		db := openMySQL(t, n, tr)
		go func() { _, _ = db.Exec(tg.long(m)) }()
		started(t, n, tg, m)
		tr.kill()
		stopped(t, n, tg, m, stopBound)
	})
}

// The MySQL wire: the client's deadline passes (go-sql-driver then closes its connection).
func TestMySQLClientDeadline(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		m := marker()
		db := openMySQL(t, n, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _, _ = db.ExecContext(ctx, tg.long(m)) }()
		started(t, n, tg, m)
		cancel()
		stopped(t, n, tg, m, stopBound)
	})
}

func trinoDB(t *testing.T, n *querynode.Node) *sql.DB {
	return frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://" + querynode.LoopbackUser + "@" + n.Addrs()["trino"]})
}

// Trino: trino-go-client's context is cancelled; it DELETEs the query.
func TestTrinoClientCancel(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		m := marker()
		db := trinoDB(t, n)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			rows, err := db.QueryContext(ctx, tg.long(m))
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			done <- err
		}()
		started(t, n, tg, m)
		cancel()
		stopped(t, n, tg, m, stopBound)
		if err := <-done; err == nil {
			t.Fatal("a cancelled query succeeded")
		}
	})
}

// Trino: a client that stops polling without a DELETE has its query expired after the
// frontend's client timeout, as Trino's query.client.timeout does.
func TestTrinoClientAbandons(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		m := marker()
		req, _ := http.NewRequest("POST", "http://"+n.Addrs()["trino"]+"/v1/statement", strings.NewReader(tg.long(m)))
		req.Header.Set("X-Trino-User", querynode.LoopbackUser)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST: %d %s", resp.StatusCode, body)
		}
		started(t, n, tg, m)
		stopped(t, n, tg, m, clientTimeout+stopBound)
	})
}

// Flight SQL: the client's deadline passes while it reads the result.
func TestFlightClientDeadline(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		m := marker()
		c := frontendtest.DialFlight(t, n.Addrs()["flightsql"])
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			info, err := c.Execute(ctx, tg.long(m))
			if err != nil {
				return
			}
			r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				return
			}
			for r.Next() {
			}
			r.Release()
		}()
		started(t, n, tg, m)
		cancel()
		stopped(t, n, tg, m, stopBound)
	})
}

// Flight SQL: the client goes away (its connection closed) while GetFlightInfo runs.
func TestFlightClientGone(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		m := marker()
		c, err := frontendtest.NewFlightClient(n.Addrs()["flightsql"])
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = c.Execute(context.Background(), tg.long(m)) }()
		started(t, n, tg, m)
		c.Close()
		stopped(t, n, tg, m, stopBound)
	})
}

// Flight SQL: a result waiting for its DoGet (its engine query open, its slot held) is
// dropped when the client's connection ends, and a DoGet whose client gives up while the next
// batch computes stops the engine query.
func TestFlightResultOfGoneClient(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		if tg.firstFast == nil {
			t.Skipf("%s computes the whole result before GetFlightInfo answers", tg.name)
		}
		for _, fetch := range []bool{false, true} {
			m := marker()
			c, err := frontendtest.NewFlightClient(n.Addrs()["flightsql"])
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			info, err := c.Execute(ctx, tg.firstFast(m))
			if err != nil {
				t.Fatal(err)
			}
			started(t, n, tg, m)
			if fetch {
				firstBatch(t, ctx, c, info)
			}
			if fetch {
				cancel()
			} else {
				c.Close()
			}
			stopped(t, n, tg, m, stopBound)
			cancel()
			c.Close()
		}
	})
}

// firstBatch starts the DoGet of info and reads its first batch: the server has then taken
// the ticket. (A DoGet cancelled before that may never show its ticket to the server: gRPC
// drops the request of a call reset before its handler reads it.)
func firstBatch(t *testing.T, ctx context.Context, c *fsql.Client, info *flight.FlightInfo) {
	t.Helper()
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Release)
	if !r.Next() {
		t.Fatalf("DoGet: no first batch: %v", r.Err())
	}
}

// Flight SQL: CancelFlightInfo stops an executed statement nobody fetched.
func TestFlightCancelFlightInfo(t *testing.T) {
	each(t, func(t *testing.T, n *querynode.Node, tg target) {
		if tg.firstFast == nil {
			t.Skipf("%s computes the whole result before GetFlightInfo answers", tg.name)
		}
		m := marker()
		c := frontendtest.DialFlight(t, n.Addrs()["flightsql"])
		info, err := c.Execute(context.Background(), tg.firstFast(m))
		if err != nil {
			t.Fatal(err)
		}
		started(t, n, tg, m)
		res, err := c.CancelFlightInfo(context.Background(), &flight.CancelFlightInfoRequest{Info: info})
		if err != nil || res.Status != flight.CancelStatusCancelled {
			t.Fatalf("CancelFlightInfo: %v %v", res.Status, err)
		}
		stopped(t, n, tg, m, stopBound)
	})
}
