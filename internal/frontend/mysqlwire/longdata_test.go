package mysqlwire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/netlimit"
)

// A client streams parameters with COM_STMT_SEND_LONG_DATA (go-sql-driver does for any value
// past max_allowed_packet/(params+1)). What a session holds is bounded by max_allowed_packet,
// refused as MySQL refuses it, and given back after each execute.
func TestLongDataIsBoundedAndFreed(t *testing.T) {
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{})
	// maxAllowedPacket=1 MiB: the driver sends every value of 512 KiB or more as long data.
	d := openDB(t, addr, "alice", testPassword, dbName, "maxAllowedPacket=1048576")
	d.SetMaxOpenConns(1)
	length := func(v []byte) (string, error) {
		var n string
		err := d.QueryRow("select length(?)", v).Scan(&n)
		return n, err
	}
	// Eight values of 10 MiB in turn (under MariaDB's own 16 MiB max_allowed_packet): together
	// past the 64 MiB budget, so the later ones fit only if the ones before were freed.
	for i := range 8 {
		n, err := length(bytes.Repeat([]byte{'x'}, 10<<20))
		if err != nil || n != "10485760" {
			t.Fatalf("10 MiB long data, round %d: %q, %v", i, n, err)
		}
	}
	_, err := length(bytes.Repeat([]byte{'y'}, netlimit.MessageBytesMaxDefault+1))
	if err == nil || !strings.Contains(err.Error(), "mysql_send_long_data") {
		t.Fatalf("long data past max_allowed_packet: %v, want the max_allowed_packet error", err)
	}
	if n, err := length(bytes.Repeat([]byte{'z'}, 1<<20)); err != nil || n != "1048576" {
		t.Fatalf("after the refusal the session goes on: %q, %v", n, err)
	}
}
