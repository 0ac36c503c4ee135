package frontendtest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// PaddedSelect is "SELECT n" padded by a comment to size bytes: a statement that costs the
// proxy its text and the engine nothing.
func PaddedSelect(n, size int) string {
	head := fmt.Sprintf("SELECT %d /* ", n)
	return head + strings.Repeat("x", size-len(head)-3) + " */"
}

// HeldConn is one client connection as CheckHeldBytesBound drives it: Prepare keeps a
// statement on the server under key, Run runs a kept one and returns its first value, Close
// forgets one, End closes the connection.
type HeldConn interface {
	Prepare(key, sql string) error
	Run(key string) (string, error)
	Close(key string) error
	End()
}

// HeldCodes say a frontend's refusals: Code is the server's code in a client's error ("" for
// none), Connection the code of a connection past its budget, Daemon of the daemon past its
// pool.
type HeldCodes struct {
	Code               func(error) string
	Connection, Daemon string
}

// HeldBytesConnectionMax and HeldBytesDaemonMax are the bounds CheckHeldBytesBound expects
// the server under test to have: room for three statements of HeldStatementBytes in a
// connection, and for four in the daemon.
const (
	HeldBytesConnectionMax = 1 << 20
	HeldBytesDaemonMax     = 5 << 18
	HeldStatementBytes     = 300 << 10
)

// CheckHeldBytesBound runs the held-bytes scenario on connections open makes, against a server
// with HeldBytesConnectionMax per connection and HeldBytesDaemonMax in all: a prepares
// statements of HeldStatementBytes, the fourth is refused with codes.Connection saying what the
// connection holds, the connection goes on, the statements it holds still run, and a closed
// one makes room. A second connection b is refused with codes.Daemon where the two together
// would pass the daemon's pool, and gets its room once a has ended.
func CheckHeldBytesBound(t *testing.T, open func() HeldConn, codes HeldCodes) {
	t.Helper()
	const size = HeldStatementBytes
	a := open()
	defer a.End()
	for i := range 3 {
		if err := a.Prepare(fmt.Sprint("s", i), PaddedSelect(i, size)); err != nil {
			t.Fatalf("statement %d of 3: %v", i, err)
		}
	}
	err := a.Prepare("s3", PaddedSelect(3, size))
	if codes.Code(err) != codes.Connection || !strings.Contains(err.Error(), "this connection holds") {
		t.Fatalf("fourth statement of %d bytes: %v, want %s naming the connection's limit", size, err, codes.Connection)
	}
	for i := range 3 {
		if got, err := a.Run(fmt.Sprint("s", i)); err != nil || got != fmt.Sprint(i) {
			t.Fatalf("statement s%d after the refusal: %q, %v", i, got, err)
		}
	}
	if err := a.Close("s0"); err != nil {
		t.Fatal(err)
	}
	if err := a.Prepare("s3", PaddedSelect(3, size)); err != nil {
		t.Fatalf("after a close: %v", err)
	}

	// The daemon's pool: a holds about 900 KB of its 1.25 MiB.
	b := open()
	defer b.End()
	if err := b.Prepare("t0", PaddedSelect(10, size)); err != nil {
		t.Fatalf("b's first statement: %v", err)
	}
	err = b.Prepare("t1", PaddedSelect(11, size))
	if codes.Code(err) != codes.Daemon || !strings.Contains(err.Error(), "the server holds") {
		t.Fatalf("b's second statement past the daemon's pool: %v, want %s", err, codes.Daemon)
	}
	if _, err := b.Run("t0"); err != nil {
		t.Fatalf("b's first statement after the refusal: %v", err)
	}
	a.End()
	deadline := time.Now().Add(time.Minute)
	for {
		err := b.Prepare("t1", PaddedSelect(11, size))
		if err == nil {
			break
		}
		if codes.Code(err) != codes.Daemon || time.Now().After(deadline) {
			t.Fatalf("b's second statement after a ended: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // a's end is seen by its own goroutine
	}
}
