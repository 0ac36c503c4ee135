package mysqlwire

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestPacketsOver16MBAsMariaDB: messages longer than a packet's largest payload (16 MiB - 1),
// which travel as several packets, pass as MariaDB takes and answers them: a client's query
// of 17 MB (a literal), a row of 17 MB from the engine (REPEAT), and a prepared statement's
// 17 MB parameter (go-sql-driver sends it by COM_STMT_SEND_LONG_DATA), each read back whole;
// on the relay and the Arrow path. MariaDB's max_allowed_packet is raised to 64 MiB for the
// test (a global: the session's is read-only) and set back after; the proxy's bound alike.
func TestPacketsOver16MBAsMariaDB(t *testing.T) {
	limits := netlimit.Limits{MessageBytesMax: 64 << 20}
	relay := coreServer(t, coreSetup{limits: limits})
	var was int64
	if err := relay.direct.QueryRow("SELECT @@global.max_allowed_packet").Scan(&was); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.direct.Exec("SET GLOBAL max_allowed_packet = 64 * 1024 * 1024"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := relay.direct.Exec(fmt.Sprintf("SET GLOBAL max_allowed_packet = %d", was)); err != nil {
			t.Errorf("max_allowed_packet not set back to %d: %v", was, err)
		}
	})
	relay.direct.SetMaxIdleConns(0) // its next connections see the new bound
	arrow := coreServer(t, coreSetup{noPassthrough: true, limits: limits})
	big := bytes.Repeat([]byte("0123456789abcdef"), 17<<20/16)
	sum := func(b []byte) string { return fmt.Sprintf("%d %x", len(b), sha256.Sum256(b)) }
	probe := func(d *sql.DB, table string) []string {
		var out []string
		if _, err := d.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY, b LONGBLOB)"); err != nil {
			return append(out, "create: "+err.Error())
		}
		var n int64
		err := d.QueryRow("SELECT LENGTH('" + string(big) + "')").Scan(&n)
		out = append(out, fmt.Sprintf("a 17 MB query: %d %v", n, err))
		var row []byte
		err = d.QueryRow("SELECT REPEAT('0123456789abcdef', 17 * 1024 * 1024 / 16)").Scan(&row)
		out = append(out, fmt.Sprintf("a 17 MB row: %s %v", sum(row), err))
		_, err = d.Exec("INSERT INTO "+table+" VALUES (1, ?)", big)
		out = append(out, fmt.Sprintf("a 17 MB parameter: %v", err))
		row = nil
		err = d.QueryRow("SELECT b FROM "+table+" WHERE id = ?", 1).Scan(&row)
		out = append(out, fmt.Sprintf("read back: %s %v", sum(row), err))
		return out
	}
	open := func(addr, user, password, db string) *sql.DB {
		return openDB(t, addr, user, password, db, "maxAllowedPacket=0") // 0: as the server says
	}
	cfg, err := gomysql.ParseDSN(relay.dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := probe(open(cfg.Addr, cfg.User, cfg.Passwd, relay.dbName), "big_direct")
	for i, f := range []*coreFixture{relay, arrow} {
		got := probe(open(f.addr, testUser, "", f.dbName), fmt.Sprintf("big_%d", i))
		for k := range want {
			if k >= len(got) || got[k] != want[k] {
				t.Errorf("passthrough %v: %v\n MariaDB %s", i == 0, got, want[k])
				break
			}
		}
	}
}
