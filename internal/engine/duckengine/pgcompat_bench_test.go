package duckengine

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// BenchmarkPGCompatDivision: what the division guard costs a PostgreSQL client's statement:
// nothing for one that divides nothing (a LIKE's % is in a string), a rewrite for one that
// divides; and a Trino client's, whose dividend is read back too (qf_trino_divide).
func BenchmarkPGCompatDivision(b *testing.B) {
	for name, sqlText := range map[string]string{
		"plain":   "SELECT id, name FROM users WHERE id = $1",
		"like":    "SELECT id, name FROM users WHERE name LIKE 'a%' AND id = $1",
		"divides": "SELECT id, total / qty FROM orders WHERE id = $1",
	} {
		for _, protocol := range []string{query.ProtocolPostgres, query.ProtocolTrino} {
			b.Run(protocol+"-"+name, func(b *testing.B) {
				q := &query.Request{SQL: sqlText, Protocol: protocol}
				q.Analysis()
				b.ReportAllocs()
				for b.Loop() {
					_ = pgCompat(q)
				}
			})
		}
	}
}
