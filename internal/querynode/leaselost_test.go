package querynode

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/trinodb/trino-go-client/trino"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestLostLeaseTellsEveryClient: a statement running on PostgreSQL whose capacity lease is lost
// (as a worker's is when it cannot renew it) is stopped on the engine, and each protocol's
// own client gets the lost lease's error, not the queue's capacity timeout (53000, 1637,
// GENERIC_INSUFFICIENT_RESOURCES, RESOURCE_EXHAUSTED) nor a cancel of its own (57014): pgx
// 40000 transaction_rollback, go-sql-driver 1213 (40001), trino-go-client
// ADMINISTRATIVELY_PREEMPTED with sqlState 40000, the Flight SQL client ABORTED. Every message
// names the cluster and the lease; the history records 40000 and the metrics count the query
// under queries_total{status="lease_lost"}.
func TestLostLeaseTellsEveryClient(t *testing.T) {
	f := newLostLeaseNode(t)
	ctx, addrs, guard, reg, recs := f.ctx, f.addrs, f.guard, f.reg, f.recs

	pg, err := pgx.Connect(ctx, "postgres://queryflux@"+addrs["postgres"]+"/g?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	my, err := sql.Open("mysql", "queryflux@tcp("+addrs["mysql"]+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	tr := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + addrs["trino"]})
	fl := frontendtest.DialFlight(t, addrs["flightsql"])
	clients := []struct {
		proto string
		run   func(stmt string) error
		check func(err error) string // what is wrong with err, "" for nothing
	}{
		{query.ProtocolPostgres, func(stmt string) error { _, err := pg.Exec(ctx, stmt); return err }, func(err error) string {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != query.CodeLeaseLost {
				return "want SQLSTATE " + query.CodeLeaseLost
			}
			return ""
		}},
		{query.ProtocolMySQL, func(stmt string) error { _, err := my.ExecContext(ctx, stmt); return err }, func(err error) string {
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1213 || string(me.SQLState[:]) != "40001" {
				return "want error 1213 (40001)"
			}
			return ""
		}},
		{query.ProtocolTrino, func(stmt string) error { _, err := frontendtest.QueryAll(ctx, tr, stmt); return err }, func(err error) string {
			var qf *trino.ErrQueryFailed
			var et *trino.ErrTrino
			if !errors.As(err, &qf) || !errors.As(qf.Reason, &et) || et.ErrorName != "ADMINISTRATIVELY_PREEMPTED" ||
				et.ErrorType != "INSUFFICIENT_RESOURCES" || et.ErrorCode != 131080 || et.SqlState != query.CodeLeaseLost {
				return "want ADMINISTRATIVELY_PREEMPTED (131080, INSUFFICIENT_RESOURCES), sqlState " + query.CodeLeaseLost
			}
			return ""
		}},
		{query.ProtocolFlightSQL, func(stmt string) error {
			_, err := frontendtest.FlightRows(ctx, fl, stmt, frontendtest.ValueStr)
			return err
		}, func(err error) string {
			if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "["+query.CodeLeaseLost+"]") {
				return "want ABORTED [" + query.CodeLeaseLost + "]"
			}
			return ""
		}},
	}
	for _, c := range clients {
		marker := "qf_lease_lost_" + c.proto
		before := len(guard.Slots())
		done := make(chan error, 1)
		go func() { done <- c.run(sleepMarked(marker)) }()
		lease, granted := f.loseRunning(c.proto, marker, before)
		if granted != 1 {
			t.Fatalf("%s: %d slots granted for one statement", c.proto, granted)
		}
		start := time.Now()
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the statement whose lease was lost still runs", c.proto)
		}
		switch {
		case err == nil:
			t.Errorf("%s: the statement whose lease was lost succeeded", c.proto)
		case c.check(err) != "":
			t.Errorf("%s: %v: %s", c.proto, err, c.check(err))
		case !strings.Contains(err.Error(), "capacity lease "+lease+" on cluster pg was lost"):
			t.Errorf("%s: %v: the message does not name the lease %s and its cluster", c.proto, err, lease)
		case strings.Contains(err.Error(), "57014") || strings.Contains(err.Error(), "53000"):
			t.Errorf("%s: %v: reads as a cancel or a capacity timeout", c.proto, err)
		}
		f.waitStopped(c.proto, marker, start)
		rec := nextRecord(t, recs, marker)
		if rec.Status != proxy.StatusFailed || rec.ErrorCode != query.CodeLeaseLost || rec.Cluster != "pg" {
			t.Errorf("%s: history record %s %s %q", c.proto, rec.Status, rec.ErrorCode, rec.Cluster)
		}
	}
	if got := counter(t, reg, "queryflux_queries_total", map[string]string{"group": "g", "cluster": "pg", "status": "lease_lost"}); got != float64(len(clients)) {
		t.Errorf(`queries_total{status="lease_lost"} = %v, want %d`, got, len(clients))
	}
	if got := counter(t, reg, "queryflux_queries_total", map[string]string{"group": "g", "cluster": "pg", "status": "failed"}); got != 0 {
		t.Errorf(`queries_total{status="failed"} = %v, want 0: the lost leases were counted as failures`, got)
	}
}

// lostLeaseNode is a Node serving every frontend on a fresh PostgreSQL database (cluster pg,
// group g, cap 4) whose capacity slots the test loses at will, with the node's history records,
// its metrics and an administrator's connection to the database.
type lostLeaseNode struct {
	t     *testing.T
	ctx   context.Context
	addrs map[string]string
	guard *capacitytest.LosingGuard
	reg   *prometheus.Registry
	recs  chan proxy.Record
	admin *pgx.Conn
}

func newLostLeaseNode(t *testing.T) *lostLeaseNode {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	f := &lostLeaseNode{t: t, guard: capacitytest.NewLosingGuard(), reg: prometheus.NewRegistry(), recs: make(chan proxy.Record, 64)}
	n := New(Options{OpenEngine: EngineFactory(Engines()), Guard: f.guard, Registerer: f.reg,
		OnFinish: func(r *proxy.Record) { f.recs <- *r },
		Env:      env.Real(slog.New(slog.NewTextHandler(&logbuf.Buffer{}, nil)))})
	t.Cleanup(func() { _ = n.Close() })
	cfg, err := config.Parse(fmt.Appendf(nil, `clusters:
  pg: {engine: postgres, endpoint: %q, database: %q, credentials: {user: postgres}, options: {sslmode: disable}, maxRunningQueries: 4}
clusterGroups: [{name: g, members: [pg]}]
routingFallback: g
`, u.Host, strings.TrimPrefix(u.Path, "/")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Settings.Security.TrustLoopback = true
	if err := config.Compile(cfg); err != nil {
		t.Fatal(err)
	}
	if err := n.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if err := n.Listen(loopbackFrontends()); err != nil {
		t.Fatal(err)
	}
	f.addrs = n.Addrs()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	f.ctx = ctx
	if f.admin, err = pgx.Connect(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.admin.Close(context.Background()) })
	return f
}

// sleepMarked is a minute's statement on PostgreSQL that carries marker, to be found in
// pg_stat_activity.
func sleepMarked(marker string) string { return "select pg_sleep(60) /* " + marker + " */" }

// active counts PostgreSQL's backends running a statement that holds marker.
func (f *lostLeaseNode) active(marker string) int {
	var k int
	if err := f.admin.QueryRow(f.ctx, "select count(*) from pg_stat_activity where state = 'active' and query like '%'||$1||'%' and pid <> pg_backend_pid()", marker).Scan(&k); err != nil {
		f.t.Fatal(err)
	}
	return k
}

// loseRunning waits for the statement holding marker to run on PostgreSQL, then loses the last
// slot granted (the statement's: a client runs one statement at a time, and the ones it sent
// before, a driver's session set-up, have ended), and returns its lease's ID and how many slots
// were granted since before were.
func (f *lostLeaseNode) loseRunning(client, marker string, before int) (string, int) {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for f.active(marker) != 1 {
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: the statement never ran on PostgreSQL", client)
		}
		time.Sleep(20 * time.Millisecond)
	}
	slots := f.guard.Slots()[before:]
	if len(slots) == 0 {
		f.t.Fatalf("%s: the statement runs without a slot", client)
	}
	last := slots[len(slots)-1]
	last.Lose()
	return last.Lease().ID, len(slots)
}

// waitStopped waits for PostgreSQL to stop the statement holding marker, whose lease was lost
// at start.
func (f *lostLeaseNode) waitStopped(client, marker string, start time.Time) {
	f.t.Helper()
	for f.active(marker) != 0 {
		if time.Since(start) > 30*time.Second {
			f.t.Fatalf("%s: PostgreSQL still runs the statement whose lease was lost", client)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// counter is the value of the series of name with labels in reg (0 when there is none).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// nextRecord is the next finished query's record whose SQL holds marker.
func nextRecord(t *testing.T, recs <-chan proxy.Record, marker string) proxy.Record {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case r := <-recs:
			if strings.Contains(r.SQL, marker) {
				return r
			}
		case <-timeout:
			t.Fatalf("no history record of %s", marker)
		}
	}
}
