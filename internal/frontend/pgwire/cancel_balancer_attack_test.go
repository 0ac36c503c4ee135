package pgwire_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// roundRobin is a TCP balancer in front of workers: each connection it accepts goes to the next
// worker in turn, as an L4 balancer without client affinity sends them.
func roundRobin(t *testing.T, workers ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	var next atomic.Uint32
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w, err := net.Dial("tcp", workers[int(next.Add(1)-1)%len(workers)])
			if err != nil {
				_ = c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(w, c); _ = w.(*net.TCPConn).CloseWrite() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, w); _ = c.Close(); _ = w.Close() }()
		}
	}()
	return ln.Addr().String()
}

// cancelAnswer sends a CancelRequest for pid with key to addr and returns what the server wrote
// before it closed the connection.
func cancelAnswer(t *testing.T, addr string, pid uint32, key []byte) []byte {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg := binary.BigEndian.AppendUint32(nil, uint32(12+len(key)))
	msg = binary.BigEndian.AppendUint32(msg, 80877102)
	msg = binary.BigEndian.AppendUint32(msg, pid)
	if _, err := nc.Write(append(msg, key...)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("cancel request: the server did not close the connection: %v", err)
	}
	return got
}

// TestACancelRequestReachesOnlyTheWorkerThatHoldsTheSession documents what a PostgreSQL cancel
// is through workers behind one address: a session's process id and secret key live in the
// worker that runs it, and a CancelRequest that reaches another worker is dropped, as
// PostgreSQL drops one for a pid it does not know (the connection closed, nothing written: no
// worker says whether a pid or key exists anywhere). pgx, like libpq and JDBC, sends its cancel
// on a new connection to the address it connected to; through a balancer without client
// affinity that is another worker as often as not, and the statement runs on. docs/security.md
// ("PostgreSQL cancels behind a balancer") says so, and the balancer setting that makes cancels
// work (client-address affinity).
func TestACancelRequestReachesOnlyTheWorkerThatHoldsTheSession(t *testing.T) {
	a, url, _ := pgBackend(t)
	b, _, _ := pgBackend(t)
	balancer := roundRobin(t, a, b)
	alice := connect(t, proxyURL(balancer, "alice")) // the balancer's first connection: worker a
	admin := connect(t, url)
	marker := fmt.Sprintf("qf-rt-cancel-%d", time.Now().UnixNano())
	sleeping := func() int {
		var n int
		if err := admin.QueryRow(context.Background(), "select count(*) from pg_stat_activity where query like '%' || $1 || '%' and state = 'active' and pid <> pg_backend_pid()", marker).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ac := alice.PgConn()
	done := make(chan error, 1)
	go func() {
		_, err := alice.Exec(context.Background(), "select pg_sleep(30) /* "+marker+" */")
		done <- err
	}()
	waitFor(t, 10*time.Second, func() bool { return sleeping() == 1 })

	if got := cancelAnswer(t, b, ac.PID(), ac.SecretKey()); len(got) != 0 {
		t.Fatalf("worker b answered a CancelRequest of a session it does not hold with %q, want nothing", got)
	}
	// pgx's own cancel, through the balancer: its next connection goes to worker b.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ac.CancelRequest(ctx); err != nil {
		t.Fatalf("pgx's CancelRequest through the balancer: %v", err)
	}
	for range 20 {
		select {
		case err := <-done:
			t.Fatalf("a CancelRequest at the worker that does not hold the session ended its statement: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if sleeping() != 1 {
		t.Fatal("a CancelRequest at the worker that does not hold the session ended its statement")
	}
	// The balancer's next connection is worker a's: pgx's cancel now reaches the session.
	if err := ac.CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("pgx's CancelRequest at the worker that holds the session: %v, want 57014", err)
	}
	var n int
	if err := alice.QueryRow(context.Background(), "select 41+1").Scan(&n); err != nil || n != 42 {
		t.Fatalf("alice's session after the cancel: %d %v", n, err)
	}
}
