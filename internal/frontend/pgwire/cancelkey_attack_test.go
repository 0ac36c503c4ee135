package pgwire_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// sendCancel sends a CancelRequest for pid with key to addr, as libpq does, and waits for the
// server to close the connection (it has acted on the request by then).
func sendCancel(t *testing.T, addr string, pid uint32, key []byte) { cancelAnswer(t, addr, pid, key) }

// TestACancelRequestCancelsOnlyTheSessionItsKeyIs: each session gets its own process id and
// secret key (unlike each other, unlike another session of the same user). While alice's
// statement runs, CancelRequests with her process id and bob's key, her key off by one bit, her
// key cut short or padded, and bob's own key leave it running; only her own key cancels it.
func TestACancelRequestCancelsOnlyTheSessionItsKeyIs(t *testing.T) {
	addr, url, _ := pgBackend(t)
	alice := connect(t, proxyURL(addr, "alice"))
	alice2 := connect(t, proxyURL(addr, "alice"))
	bob := connect(t, proxyURL(addr, "bob"))
	admin := connect(t, url)
	a, a2, b := alice.PgConn(), alice2.PgConn(), bob.PgConn()
	keys := map[string]bool{}
	for _, c := range []*pgconn.PgConn{a, a2, b} {
		if len(c.SecretKey()) != 4 || c.PID() == 0 {
			t.Fatalf("BackendKeyData: pid %d, key %x", c.PID(), c.SecretKey())
		}
		keys[string(c.SecretKey())] = true
	}
	if a.PID() == a2.PID() || a.PID() == b.PID() || a2.PID() == b.PID() || len(keys) != 3 {
		t.Fatalf("sessions share a process id or key: alice %d %x, alice again %d %x, bob %d %x",
			a.PID(), a.SecretKey(), a2.PID(), a2.SecretKey(), b.PID(), b.SecretKey())
	}

	done := make(chan error, 1)
	go func() {
		_, err := alice.Exec(context.Background(), "select pg_sleep(30) /* qf-cancel-test */")
		done <- err
	}()
	waitFor(t, 10*time.Second, func() bool { return countSleeping(t, admin) == 1 })
	flipped := append([]byte(nil), a.SecretKey()...)
	flipped[3] ^= 1
	for name, k := range map[string]struct {
		pid uint32
		key []byte
	}{
		"alice's pid, bob's key":  {a.PID(), b.SecretKey()},
		"alice's pid, alice2 key": {a.PID(), a2.SecretKey()},
		"alice's pid, a bit off":  {a.PID(), flipped},
		"alice's pid, key cut":    {a.PID(), a.SecretKey()[:3]},
		"alice's pid, key padded": {a.PID(), append(append([]byte(nil), a.SecretKey()...), 0)},
		"bob's own key":           {b.PID(), b.SecretKey()},
		"alice's key, alice2 pid": {a2.PID(), a.SecretKey()},
		"alice's key, bob's pid":  {b.PID(), a.SecretKey()},
		"alice's key, pid plus 1": {a.PID() + 1, a.SecretKey()},
		"alice's key, pid 0":      {0, a.SecretKey()},
	} {
		sendCancel(t, addr, k.pid, k.key)
		if countSleeping(t, admin) != 1 {
			t.Fatalf("a CancelRequest with %s cancelled alice's statement", name)
		}
		select {
		case err := <-done:
			t.Fatalf("a CancelRequest with %s cancelled alice's statement: %v", name, err)
		default:
		}
	}
	// A cancel reaches the engine on a connection of its own, after the request's connection
	// closed: had any of them cancelled, the statement would end within this while.
	for range 20 {
		select {
		case err := <-done:
			t.Fatalf("a CancelRequest with another key cancelled alice's statement: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if countSleeping(t, admin) != 1 {
		t.Fatal("a CancelRequest with another key cancelled alice's statement")
	}
	if err := bob.Ping(context.Background()); err != nil {
		t.Fatalf("bob's session after the cancels: %v", err)
	}
	sendCancel(t, addr, a.PID(), a.SecretKey())
	err := <-done
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("alice's own CancelRequest: %v, want 57014", err)
	}
}
