package pgwire_test

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/netlimit"
)

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// startupAndAwaitPassword connects as alice and reads up to the server's password request.
func startupAndAwaitPassword(t *testing.T, addr string) (net.Conn, *pgproto3.Frontend) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "alice"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	if msg, err := fe.Receive(); err != nil {
		t.Fatal(err)
	} else if _, ok := msg.(*pgproto3.AuthenticationCleartextPassword); !ok {
		t.Fatalf("got %T, want a password request", msg)
	}
	return nc, fe
}

// TestHostilePasswordMessage: a password message header declaring 16 MiB ends the
// connection at once; the server does not allocate what it declared.
func TestHostilePasswordMessage(t *testing.T) {
	auth := pgwire.NewStaticUsers(map[string]string{"alice": "pw"}, false)
	addr := startServer(t, &oneEngine{}, pgwire.Options{Authenticator: auth})
	const conns = 20
	before := heapInUse()
	for range conns {
		nc, _ := startupAndAwaitPassword(t, addr)
		defer nc.Close()
		if _, err := nc.Write(append([]byte{'p', 1, 0, 0, 0}, make([]byte, 100)...)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(nc); err != nil { // the server closes: EOF, not our deadline
			t.Fatalf("the server kept the connection: %v", err)
		}
	}
	if grew := int64(heapInUse()) - int64(before); grew > conns<<20 {
		t.Fatalf("heap grew %d bytes for %d hostile password messages", grew, conns)
	}
}

// TestHandshakeDeadline: a client that sends a startup message and then nothing is
// disconnected at the handshake deadline.
func TestHandshakeDeadline(t *testing.T) {
	auth := pgwire.NewStaticUsers(map[string]string{"alice": "pw"}, false)
	addr := startServer(t, &oneEngine{}, pgwire.Options{Authenticator: auth, Limits: netlimit.Limits{HandshakeTimeout: 100 * time.Millisecond}})
	nc, _ := startupAndAwaitPassword(t, addr)
	defer nc.Close()
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("the server kept a silent handshake open: %v", err)
	}
}

// TestConnectionsMax: with ConnectionsMax clients connected, pgx gets PostgreSQL's own
// 53300 "too many clients"; once one leaves, a client gets in again.
func TestConnectionsMax(t *testing.T) {
	addr := startServer(t, &oneEngine{}, pgwire.Options{TrustUsers: []string{"*"}, Limits: netlimit.Limits{ConnectionsMax: 2}})
	url := "postgres://u@" + addr + "/db?sslmode=disable"
	ctx := context.Background()
	var open []*pgx.Conn
	for range 2 {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	_, err := pgx.Connect(ctx, url)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("third connection: %v, want SQLSTATE 53300", err)
	}
	_ = open[0].Close(ctx)
	for { // the server sees the Terminate, then frees the slot
		c, err := pgx.Connect(ctx, url)
		if err == nil {
			_ = c.Close(ctx)
			break
		}
		if !errors.As(err, &pe) || pe.Code != "53300" {
			t.Fatal(err)
		}
	}
	_ = open[1].Close(ctx)
}
