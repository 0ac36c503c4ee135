package mysqlwire

import (
	"context"
	"database/sql"
	"net"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestOneSourceCannotFillTheListener: a source (127.0.0.1) opening idle sockets up to the
// connection limit holds only its share of it before login; another source's client
// (127.0.0.2, go-sql-driver) connects and queries meanwhile (before: 1040 Too many
// connections for the handshake timeout).
func TestOneSourceCannotFillTheListener(t *testing.T) {
	backend, _ := mariaBackend(t)
	addr := startServer(t, backend, Options{Limits: netlimit.Limits{ConnectionsMax: 8}})
	frontendtest.IdleSockets(t, "127.0.0.1", addr, 8)
	mysql.RegisterDialContext("source2", func(ctx context.Context, addr string) (net.Conn, error) {
		return frontendtest.DialerFrom("127.0.0.2").DialContext(ctx, "tcp", addr)
	})
	d, err := sql.Open("mysql", testUser+"@source2("+addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var one int
	if err := d.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("another source's client, with the first source's sockets open: %d, %v", one, err)
	}
}
