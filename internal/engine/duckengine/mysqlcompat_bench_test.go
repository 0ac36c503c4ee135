package duckengine

import "testing"

// BenchmarkMySQLCompat: what mysqlCompat costs a MySQL client's statement on DuckDB that needs
// nothing rewritten (the scan only), and one that does (PyMySQL's interpolated parameter).
func BenchmarkMySQLCompat(b *testing.B) {
	for name, sql := range map[string]string{
		"plain":     "SELECT id, name, price FROM orders WHERE customer_id = 42 AND status = 'open' ORDER BY id LIMIT 100",
		"rewritten": "SELECT id, name, price FROM orders WHERE customer = 'O\\'Brien' AND status = 'open' ORDER BY id LIMIT 100",
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				_ = mysqlCompat(sql)
			}
		})
	}
}
