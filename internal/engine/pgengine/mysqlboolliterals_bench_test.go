package pgengine

import "testing"

// BenchmarkMySQLBoolLiterals: a statement naming no boolean column (a lookup by key on a
// database with one) and one comparing a boolean column with 1.
func BenchmarkMySQLBoolLiterals(b *testing.B) {
	bools, names := map[string]bool{"active": true}, []string{"active"}
	lookup := notNullLookup{booleans: func(string) map[string]bool { return bools },
		boolNames: func() []string { return names }}
	for _, c := range []struct{ name, sql string }{
		{"unrelated", "SELECT id, name, email FROM users WHERE id = 1"},
		{"boolean", "SELECT id, name, email FROM users WHERE active = 1"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				mysqlBoolLiterals(c.sql, lookup)
			}
		})
	}
}
