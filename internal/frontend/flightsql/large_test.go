package flightsql

import (
	"strconv"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestLargeRowsReachAClientWithGRPCDefaults: rows of 10 KB and of 200 KB, 2,000 of them (20 MB
// and more in all), and a result of small rows, reach arrow-go's client with gRPC's default
// 4 MiB bound on a received message, on PostgreSQL and on DuckDB, every row whole and in order.
// An engine's batch of 1,024 such rows is 10 MB and more in one message: the client refused
// it ("received message larger than max").
func TestLargeRowsReachAClientWithGRPCDefaults(t *testing.T) {
	for _, spec := range []engine.Spec{
		{Name: "pg", Kind: "postgres", Endpoint: pgtest.NewDatabase(t)},
		{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"},
	} {
		t.Run(spec.Kind, func(t *testing.T) {
			c := startServer(t, engineCore(t, spec), Options{Auth: passwords{"alice": "pw"}})
			ctx := login(t, c, "alice", "pw")
			for _, q := range []struct {
				sql       string
				rows, len int
			}{
				{"SELECT g, repeat('x', 10000) AS s FROM generate_series(1, 2000) AS t(g) ORDER BY g", 2000, 10000},
				{"SELECT g, repeat('y', 200000) AS s FROM generate_series(1, 60) AS t(g) ORDER BY g", 60, 200000},
				{"SELECT g, 'z' AS s FROM generate_series(1, 100000) AS t(g) ORDER BY g", 100000, 1},
			} {
				rows := query1(t, ctx, c, q.sql)
				if len(rows) != q.rows {
					t.Fatalf("%.60s: %d rows, want %d", q.sql, len(rows), q.rows)
				}
				for i, r := range rows {
					if r[0] != strconv.Itoa(i+1) || len(r[1]) != q.len {
						t.Fatalf("%.60s: row %d is %.20s / %d characters", q.sql, i, r[0], len(r[1]))
					}
				}
			}
		})
	}
}
