package mysqlwire

import "testing"

// BenchmarkSessionValuesScan: what every statement of a MySQL client pays to find that it names
// no session value (mayHoldSessionValue's scans), for a typical statement.
func BenchmarkSessionValuesScan(b *testing.B) {
	const sql = "SELECT id, name, price FROM orders WHERE customer_id = 42 AND status = 'open' ORDER BY id LIMIT 100"
	b.ReportAllocs()
	for range b.N {
		if mayHoldSessionValue(sql) {
			b.Fatal("a plain statement may hold a session value")
		}
	}
}
