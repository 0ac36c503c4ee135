package trinohttp

import (
	"testing"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// SELECT 1 through trino-go-client and the Trino HTTP frontend (→ MySQL engine → MariaDB):
// one POST and at least one GET per query. Compare with BenchmarkSelect1DirectMariaDB in
// mysqlwire for the same engine without the proxy.
//
//	go test -run '^$' -bench Select1 ./internal/frontend/trinohttp/
func BenchmarkSelect1ThroughTrinoHTTP(b *testing.B) {
	eng, _, _ := frontendtest.MariaDB(b)
	ts := startServer(b, frontendtest.NewBackend(eng), Options{})
	db := openTrino(b, trino.Config{ServerURI: "http://bench@" + ts.addr})
	var n int64
	if err := db.QueryRow("SELECT 1").Scan(&n); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := db.QueryRow("SELECT 1").Scan(&n); err != nil || n != 1 {
			b.Fatal(err)
		}
	}
}
