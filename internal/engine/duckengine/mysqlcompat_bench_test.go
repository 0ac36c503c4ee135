package duckengine

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// BenchmarkMySQLCompat: what mysqlCompat costs a MySQL client's statement on DuckDB that needs
// nothing rewritten (the scan only), and one that does (PyMySQL's interpolated parameter).
func BenchmarkMySQLCompat(b *testing.B) {
	for name, sql := range map[string]string{
		"plain":     "SELECT id, name, price FROM orders WHERE customer_id = 42 AND status = 'open' ORDER BY id LIMIT 100",
		"rewritten": "SELECT id, name, price FROM orders WHERE customer = 'O\\'Brien' AND status = 'open' ORDER BY id LIMIT 100",
		"insert":    "INSERT INTO orders (id, name, price, placed_day, status) VALUES (?, ?, ?, ?, ?)",
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				_ = mysqlCompat(sql)
			}
		})
	}
}

// BenchmarkMySQLCompatRequest: compatRequest of a MySQL client's plain statement (the SHOW check
// by its first word, then mysqlCompat's scan), and of SHOW COLUMNS (its SELECT written).
func BenchmarkMySQLCompatRequest(b *testing.B) {
	for name, sql := range map[string]string{
		"plain":        "SELECT id, name, price FROM orders WHERE customer_id = 42 AND status = 'open' ORDER BY id LIMIT 100",
		"show-columns": "SHOW FULL COLUMNS FROM orders LIKE 'c%'",
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			q := &query.Request{SQL: sql, Protocol: query.ProtocolMySQL}
			for range b.N {
				_, _ = compatRequest(q, "demo")
			}
		})
	}
}
