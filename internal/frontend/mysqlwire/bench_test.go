package mysqlwire

import (
	"database/sql"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
)

// The added latency of the proxy: SELECT 1 through go-sql-driver straight to MariaDB, and
// through the MySQL wire frontend (→ backend → MySQL engine → MariaDB).
//
//	go test -run '^$' -bench Select1 ./internal/frontend/mysqlwire/

func benchSelect1(b *testing.B, d *sql.DB) {
	d.SetMaxIdleConns(1)
	var n int
	if err := d.QueryRow("SELECT 1").Scan(&n); err != nil { // warm the connection
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.QueryRow("SELECT 1").Scan(&n); err != nil || n != 1 {
			b.Fatal(err)
		}
	}
}

func BenchmarkSelect1DirectMariaDB(b *testing.B) {
	dsn, _ := mytest.NewDatabase(b)
	d, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	benchSelect1(b, d)
}

func BenchmarkSelect1ThroughMySQLWire(b *testing.B) {
	eng, _, name := frontendtest.MariaDB(b)
	addr := startServer(b, frontendtest.NewBackend(eng), Options{})
	d := openDB(b, addr, testUser, "", name, "")
	benchSelect1(b, d)
}

// Single-client SELECT 1 through a real proxy core: passthrough, and the Arrow path forced
// (settings.passthrough: false). Compare with BenchmarkSelect1DirectMariaDB.
func BenchmarkSelect1ViaCorePassthrough(b *testing.B) {
	f := coreServer(b, coreSetup{})
	benchSelect1(b, openDB(b, f.addr, testUser, "", f.dbName, ""))
}

func BenchmarkSelect1ViaCoreArrow(b *testing.B) {
	f := coreServer(b, coreSetup{noPassthrough: true})
	benchSelect1(b, openDB(b, f.addr, testUser, "", f.dbName, ""))
}

// 1,000 rows of two columns per query through a real proxy core: where skipping the Arrow
// decode and encode shows.
//
//	go test -run '^$' -bench Rows1000 ./internal/frontend/mysqlwire/
func benchRows1000(b *testing.B, d *sql.DB) {
	d.SetMaxIdleConns(1)
	q := "SELECT seq, CONCAT('row-', seq) FROM seq_1_to_1000"
	for i := 0; i < b.N; i++ {
		rows, err := d.Query(q)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		var id int
		var s string
		for rows.Next() {
			if err := rows.Scan(&id, &s); err != nil {
				b.Fatal(err)
			}
			n++
		}
		rows.Close()
		if n != 1000 {
			b.Fatalf("%d rows", n)
		}
	}
}

func BenchmarkRows1000DirectMariaDB(b *testing.B) {
	dsn, _ := mytest.NewDatabase(b)
	d, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	benchRows1000(b, d)
}

func BenchmarkRows1000ViaCorePassthrough(b *testing.B) {
	f := coreServer(b, coreSetup{})
	benchRows1000(b, openDB(b, f.addr, testUser, "", f.dbName, ""))
}

func BenchmarkRows1000ViaCoreArrow(b *testing.B) {
	f := coreServer(b, coreSetup{noPassthrough: true})
	benchRows1000(b, openDB(b, f.addr, testUser, "", f.dbName, ""))
}
