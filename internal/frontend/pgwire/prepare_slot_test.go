package pgwire_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestPrepareTakesNoSlot: a message batch that executes nothing (pgx's prepare: Parse,
// Describe, Sync) is not a running query. On a PostgreSQL cluster of cap 1 in transaction pool
// mode, with the slot held by another client's open transaction, a client prepares statements
// at once (its parameters and columns as PostgreSQL describes them); the prepare of a CREATE
// TABLE creates nothing (a prepare runs nothing uncounted); a statement PostgreSQL refuses does
// not exist after, so it can be prepared again under its name. Its execution then queues, and
// keeps its place: a query that arrived after it runs after it. With the event loop and
// without it (the goroutine's forward.go).
func TestPrepareTakesNoSlot(t *testing.T) {
	for name, noLoop := range map[string]bool{"loop": false, "goroutine": true} {
		t.Run(name, func(t *testing.T) {
			e, url := pgEngine(t)
			// A prepare that waited for the slot would fail after the capacity wait: the slot is
			// held until the test ends the transaction, after the prepares.
			core, addr := slotOfOne(t, e, noLoop)
			dsn := "postgres://u@" + addr + "/db?sslmode=disable"
			ctx := context.Background()
			holder, b, c, admin := connect(t, dsn), connect(t, dsn), connect(t, dsn), connect(t, url)

			tx, err := holder.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "select 1"); err != nil {
				t.Fatal(err)
			}
			sd, err := b.Prepare(ctx, "plus", "select $1::int4 + 1 as n, clock_timestamp() as at")
			if err != nil {
				t.Fatalf("prepare with the slot held: %v", err)
			}
			if len(sd.ParamOIDs) != 1 || sd.ParamOIDs[0] != 23 || len(sd.Fields) != 2 || sd.Fields[0].DataTypeOID != 23 || sd.Fields[1].DataTypeOID != 1184 {
				t.Errorf("prepared: params %v, fields %+v; want int4, then int4 and timestamptz", sd.ParamOIDs, sd.Fields)
			}
			if _, err := b.Prepare(ctx, "made", "create table made_by_prepare (x int)"); err != nil {
				t.Fatalf("prepare of a CREATE TABLE: %v", err)
			}
			if _, err := b.Prepare(ctx, "again", "select * from no_such_table_yet"); err == nil {
				t.Fatal("prepare of a query of a missing table succeeded")
			}
			if _, err := admin.Exec(ctx, "create table no_such_table_yet (x int)"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Prepare(ctx, "again", "select * from no_such_table_yet"); err != nil {
				t.Errorf("prepare again under the name of a refused statement: %v", err)
			}
			if n := core.Queued("main"); n != 0 || core.Running("pg") != 1 {
				t.Errorf("after the prepares: %d queued, %d running; want 0 and 1 (the holder)", n, core.Running("pg"))
			}
			var made bool
			if err := admin.QueryRow(ctx, "select exists (select from pg_class where relname = 'made_by_prepare')").Scan(&made); err != nil || made {
				t.Errorf("a prepared CREATE TABLE made the table (%v): a prepare ran a statement uncounted", err)
			}

			// The execution queues first, then a query that comes after it: it runs first.
			type ran struct {
				at  time.Time
				err error
			}
			first, second := make(chan ran, 1), make(chan ran, 1)
			go func() {
				var r ran
				var n int
				r.err = b.QueryRow(ctx, "plus", 41).Scan(&n, &r.at)
				if r.err == nil && n != 42 {
					r.err = fmt.Errorf("plus(41) = %d", n)
				}
				first <- r
			}()
			waitQueued(t, core, 1)
			go func() {
				var r ran
				r.err = c.QueryRow(ctx, "select clock_timestamp()", pgx.QueryExecModeSimpleProtocol).Scan(&r.at)
				second <- r
			}()
			waitQueued(t, core, 2)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			r1, r2 := <-first, <-second
			if r1.err != nil || r2.err != nil {
				t.Fatalf("the queued queries: %v, %v", r1.err, r2.err)
			}
			if !r1.at.Before(r2.at) {
				t.Errorf("the prepared statement's execution, queued first, ran at %v, after the query queued behind it (%v)", r1.at, r2.at)
			}
		})
	}
}

// slotOfOne serves, through this frontend (with the event loop or without it), a proxy core
// whose one cluster "pg" is e with one slot, in transaction pool mode, its group "main"
// queueing up to 10 queries for up to 20 s.
func slotOfOne(t *testing.T, e query.Engine, noLoop bool) (*proxy.Core, string) {
	t.Helper()
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "pg", Enabled: true, MaxRunningQueries: 1, Engine: e}},
		Groups: []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "pg"}}, MaxQueuedQueries: 10,
			CapacityWaitTimeout: 20 * time.Second, PoolMode: proxy.PoolModeTransaction}},
		Fallback: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	return core, startServer(t, core, pgwire.Options{TrustUsers: []string{"*"}, NoEventLoop: noLoop})
}

// waitQueued waits until n queries wait in the core's queue of group main.
func waitQueued(t *testing.T, core *proxy.Core, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); core.Queued("main") != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d queries queued, want %d", core.Queued("main"), n)
		}
	}
}

// TestPrepareAwaitingSyncTakesNoSlot: a client that sends a Parse and stalls before its batch's
// Sync holds no slot. On a PostgreSQL cluster of cap 1, another client's query runs while the
// Parse waits (before: the Parse opened a wire with the slot, and the query waited until the
// stalled client's Sync, or failed after its capacity wait); the stalled batch, once whole, is
// answered as PostgreSQL answers it and its statement then runs. With the event loop and
// without it.
func TestPrepareAwaitingSyncTakesNoSlot(t *testing.T) {
	for name, noLoop := range map[string]bool{"loop": false, "goroutine": true} {
		t.Run(name, func(t *testing.T) {
			e, _ := pgEngine(t)
			core, addr := slotOfOne(t, e, noLoop)
			host, port, _ := net.SplitHostPort(addr)
			portNum, _ := strconv.Atoi(port)
			_, stalled := rawClient(t, pgclienttest.DSN{Host: host, Port: portNum, User: "u", Database: "db"})
			other := connect(t, "postgres://u@"+addr+"/db?sslmode=disable")
			ctx := context.Background()

			before := pgwire.PreparesAwaitingSync()
			stalled.Send(&pgproto3.Parse{Name: "s1", Query: "select $1::int4 * 2 as n"})
			if err := stalled.Flush(); err != nil {
				t.Fatal(err)
			}
			// The server has read the Parse when it waits for the batch's rest, or (the fault this
			// test catches) when the Parse took the slot.
			for deadline := time.Now().Add(20 * time.Second); pgwire.PreparesAwaitingSync() == before && core.Running("pg") == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the server never read the Parse")
				}
			}
			if n := core.Running("pg"); n != 0 {
				t.Fatalf("a Parse awaiting its Sync: %d running, want 0", n)
			}
			var got int
			if err := other.QueryRow(ctx, "select 7", pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil || got != 7 {
				t.Fatalf("another client's query while a Parse awaits its Sync: %d, %v", got, err)
			}

			stalled.Send(&pgproto3.Describe{ObjectType: 'S', Name: "s1"})
			stalled.Send(&pgproto3.Sync{})
			stalled.Send(&pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("21")}})
			stalled.Send(&pgproto3.Execute{})
			stalled.Send(&pgproto3.Sync{})
			if err := stalled.Flush(); err != nil {
				t.Fatal(err)
			}
			var seen []string
			for ready := 0; ready < 2; {
				msg, err := stalled.Receive()
				if err != nil {
					t.Fatalf("after %q: %v", seen, err)
				}
				switch m := msg.(type) {
				case *pgproto3.ReadyForQuery:
					ready++
					seen = append(seen, "Z")
				case *pgproto3.ParseComplete:
					seen = append(seen, "1")
				case *pgproto3.ParameterDescription:
					seen = append(seen, fmt.Sprint("t", m.ParameterOIDs))
				case *pgproto3.RowDescription:
					seen = append(seen, "T "+string(m.Fields[0].Name))
				case *pgproto3.BindComplete:
					seen = append(seen, "2")
				case *pgproto3.DataRow:
					seen = append(seen, "D "+string(m.Values[0]))
				case *pgproto3.CommandComplete:
					seen = append(seen, "C "+string(m.CommandTag))
				case *pgproto3.ErrorResponse:
					seen = append(seen, "E "+m.Message)
				}
			}
			if got, want := strings.Join(seen, ","), "1,t[23],T n,Z,2,D 42,C SELECT 1,Z"; got != want {
				t.Errorf("the stalled batch, then its execution: %s, want %s", got, want)
			}
		})
	}
}
