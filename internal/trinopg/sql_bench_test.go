package trinopg

import (
	"strconv"
	"testing"
)

// BenchmarkSQL: what every Trino statement on a PostgreSQL engine pays here (pgengine's
// Execute calls SQL on each): a text seen before (the translation cache), and one never seen
// (the translation itself), for SELECT 1 and a query of one table.
func BenchmarkSQL(b *testing.B) {
	s := Session{Catalog: "pg", Schema: "public", Database: "pg"}
	for _, c := range []struct{ name, sql string }{
		{"select1", "SELECT 1"},
		{"table", "SELECT id, name, price FROM orders WHERE customer_id = 42 AND status = 'open' ORDER BY id LIMIT 100"},
	} {
		b.Run(c.name+"/seen", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := SQL(c.sql, s); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/new", func(b *testing.B) {
			texts := make([]string, b.N)
			for i := range texts {
				texts[i] = c.sql + " -- " + strconv.Itoa(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := SQL(texts[i], s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
