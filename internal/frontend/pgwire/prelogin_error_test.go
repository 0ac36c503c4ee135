package pgwire_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/frontend/pgwire"
)

// TestMalformedStartupIsAnsweredAsPostgreSQLDoes: a startup packet of a length out of bounds
// (a hostile 2 GB header, one too short) or of an unknown protocol is answered with FATAL 08P01
// naming the problem, as PostgreSQL does, and the connection ends; nothing is allocated for
// the length declared.
func TestMalformedStartupIsAnsweredAsPostgreSQLDoes(t *testing.T) {
	auth := pgwire.NewStaticUsers(map[string]string{"alice": "pw"}, false)
	addr := startServer(t, &oneEngine{}, pgwire.Options{Authenticator: auth})
	for name, packet := range map[string][]byte{
		"2 GB length":      binary.BigEndian.AppendUint32([]byte{0x7f, 0xff, 0xff, 0xff}, 0x00030000),
		"length too short": {0, 0, 0, 2, 0, 3, 0, 0},
		"protocol 9.9":     {0, 0, 0, 8, 0, 9, 0, 9},
	} {
		t.Run(name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
			if _, err := nc.Write(packet); err != nil {
				t.Fatal(err)
			}
			fe := pgproto3.NewFrontend(nc, nc)
			msg, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			e, ok := msg.(*pgproto3.ErrorResponse)
			if !ok || e.Severity != "FATAL" || e.Code != "08P01" || e.Message == "" {
				t.Fatalf("got %#v, want FATAL 08P01", msg)
			}
			if _, err := io.ReadAll(nc); err != nil {
				t.Fatalf("the connection stayed open: %v", err)
			}
		})
	}
}
