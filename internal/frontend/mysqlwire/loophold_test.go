package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/node/proxy"
)

// holdingCore is coreServer with an engine of maxConns connections whose clients may keep one
// idle between statements for holdIdle.
func holdingCore(t *testing.T, maxConns int, holdIdle time.Duration) (*coreFixture, *mysqlengine.Engine) {
	t.Helper()
	dsn, name := mytest.NewDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := mysqlengine.Open(mysqlengine.Config{Name: "mariadb", Addr: cfg.Addr, User: cfg.User, Password: cfg.Passwd,
		Database: name, MaxConns: maxConns, LoopHoldIdle: holdIdle})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	direct, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	f := serveCore(t, "maria", eng, coreSetup{})
	f.dbName, f.dsn, f.direct = name, dsn, direct
	return f, eng
}

// TestLoopKeepsTheEngineConnection: a client's statements on the loop keep their engine
// connection between them (one held once the client pauses, as long as the engine lets it).
func TestLoopKeepsTheEngineConnection(t *testing.T) {
	f, eng := holdingCore(t, 4, time.Hour)
	conn := loopConn(t, openDB(t, f.addr, testUser, "", f.dbName, ""))
	onLoop(t, f.addr, 20, func() {
		for i := range 20 {
			var n int
			if err := conn.QueryRowContext(context.Background(), fmt.Sprintf("SELECT %d", i)).Scan(&n); err != nil || n != i {
				t.Fatalf("SELECT %d: %d, %v", i, n, err)
			}
		}
	})
	if got := eng.Held(); got != 1 {
		t.Fatalf("%d engine connections kept by the one client between statements, want 1", got)
	}
}

// TestLoopKeptConnectionsServeTwiceTheirClients: twice as many clients as the engine has
// connections, each sending statements back to back on the loop: every client gets its turn
// (a client that waits for a connection makes the holders give theirs back) and every
// statement answers right; afterwards nothing is held for long and every connection is back.
func TestLoopKeptConnectionsServeTwiceTheirClients(t *testing.T) {
	const conns, clients, stmts = 2, 4, 150
	f, eng := holdingCore(t, conns, 20*time.Millisecond)
	proxied := openDB(t, f.addr, testUser, "", f.dbName, "")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		conn := loopConn(t, proxied)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range stmts {
				var got string
				want := fmt.Sprintf("%d-%d", c, i)
				if err := conn.QueryRowContext(ctx, "SELECT '"+want+"'").Scan(&got); err != nil || got != want {
					errs <- fmt.Errorf("client %d, statement %d: %q, %v", c, i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for c := range clients {
		last := fmt.Sprintf("SELECT '%d-%d'", c, stmts-1)
		if recs := f.hist.Find(last); len(recs) != 1 || recs[0].Status != proxy.StatusSucceeded {
			t.Fatalf("history of %s: %+v", last, recs)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); eng.Held() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d engine connections still held by idle clients after 20s", eng.Held())
		}
	}
}

// TestLoopKeptConnectionEndedByTheServer: the engine connection a client keeps between
// statements is ended by the server meanwhile: the client's session goes on, and its next
// statement runs on another connection.
func TestLoopKeptConnectionEndedByTheServer(t *testing.T) {
	f, eng := holdingCore(t, 4, time.Hour)
	conn := loopConn(t, openDB(t, f.addr, testUser, "", f.dbName, ""))
	ctx := context.Background()
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT 7").Scan(&n); err != nil || n != 7 {
		t.Fatalf("SELECT 7: %d, %v", n, err)
	}
	if eng.Held() != 1 {
		t.Fatalf("%d engine connections kept, want 1", eng.Held())
	}
	admin := oneConn(t, f.direct)
	var ids []int64
	rows, err := admin.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE db = ? AND command = 'Sleep' AND id <> CONNECTION_ID()", f.dbName)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids { // the kept one among them
		if _, err := admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); eng.Held() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the connection the server ended is still kept after 10s")
		}
	}
	for i := range 3 {
		if err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&n); err != nil || n != i {
			t.Fatalf("after the kept connection ended, SELECT %d: %d, %v", i, n, err)
		}
	}
}
