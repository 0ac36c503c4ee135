package proxy

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// BenchmarkStatementAnalysis is what the core reads of one query's SQL before it runs it: the
// group's statement checks (read-only, blocked statements) and the result cache's key
// (single statement, its kind, non-determinism). It reports tokenize calls per query beside
// the allocations: each call is a full pass over the SQL.
func BenchmarkStatementAnalysis(b *testing.B) {
	g := &group{name: "g", readOnly: true, blocked: []string{"drop"}, cache: CacheSpec{TTL: 1}}
	sql := "SELECT o.id, c.name, sum(l.amount) FROM orders o JOIN customers c ON c.id = o.customer_id " +
		"WHERE o.created_at >= '2026-01-01' AND c.country IN ('DE', 'FR') GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 50"
	b.ReportAllocs()
	var passes int64
	defer sqltok.CountTokenize(&passes)()
	for b.Loop() {
		req := &query.Request{SQL: sql, Protocol: "postgres"}
		if err := checkStatements(g, req); err != nil {
			b.Fatal(err)
		}
		if _, ok := cacheKey(req, g.name, 1); !ok {
			b.Fatal("not cacheable")
		}
	}
	b.ReportMetric(float64(passes)/float64(b.N), "tokenize/op")
}
