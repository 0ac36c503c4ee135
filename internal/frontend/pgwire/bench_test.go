package pgwire_test

import (
	"context"
	"testing"

	"github.com/queryflux/queryflux/internal/demo"
)

// Single-client SELECT 1 round trips with pgx (extended protocol, cached statement):
// straight to PostgreSQL, through the frontend to PostgreSQL, and through the frontend to the
// embedded DuckDB.
func BenchmarkSelect1Direct(b *testing.B) {
	_, url := pgEngine(b)
	benchSelect1(b, url)
}

func BenchmarkSelect1ViaFrontend(b *testing.B) {
	e, _ := pgEngine(b)
	addr := startServer(b, describingEngine{&oneEngine{e: e}}, pgwireTrustAll())
	benchSelect1(b, proxyURL(addr, "bench"))
}

func BenchmarkSelect1ViaFrontendDuckDB(b *testing.B) {
	e, err := demo.Open()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	addr := startServer(b, describingEngine{&oneEngine{e: e}}, pgwireTrustAll())
	benchSelect1(b, proxyURL(addr, "bench"))
}

func benchSelect1(b *testing.B, url string) {
	c := connect(b, url)
	ctx := context.Background()
	var one int
	if err := c.QueryRow(ctx, "select 1").Scan(&one); err != nil || one != 1 {
		b.Fatalf("select 1: %v", err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := c.QueryRow(ctx, "select 1").Scan(&one); err != nil {
			b.Fatal(err)
		}
	}
}
