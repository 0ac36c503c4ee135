package mysqlwire

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestOversizedPacketBeforeLoginIsMySQLsOwnError: the refusal of an oversized packet before
// login is one clean MySQL error packet (ER_NET_PACKET_TOO_LARGE 1153, SQLSTATE 08S01) in the
// client's packet sequence, naming the size and the limit, and nothing follows it.
func TestOversizedPacketBeforeLoginIsMySQLsOwnError(t *testing.T) {
	addr := startServer(t, frontendtest.NewBackend(nil), Options{})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	readPacket(t, nc) // greeting
	if _, err := nc.Write(hostileHeader(1)); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(nc, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
	if _, err := io.ReadFull(nc, body); err != nil {
		t.Fatal(err)
	}
	if hdr[3] != 2 {
		t.Errorf("sequence %d, want 2 (after the client's 1)", hdr[3])
	}
	msg := string(body[9:])
	if body[0] != 0xff || binary.LittleEndian.Uint16(body[1:]) != 1153 || string(body[3:9]) != "#08S01" ||
		!strings.HasPrefix(msg, "a packet of 16777214 bytes before login is larger than the limit of 65536 bytes") || strings.Contains(msg, "ReadFull") {
		t.Fatalf("refusal %q", body)
	}
	if n, err := io.ReadFull(nc, make([]byte, 1)); err == nil {
		t.Fatalf("%d more bytes after the refusal", n)
	}
}
