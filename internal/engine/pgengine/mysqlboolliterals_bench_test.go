package pgengine

import (
	"fmt"
	"testing"
)

// BenchmarkMySQLBoolLiterals: a statement naming no boolean column (a lookup by key on a
// database with one, and on a database of 500 boolean columns' names) and one comparing a
// boolean column with 1.
func BenchmarkMySQLBoolLiterals(b *testing.B) {
	bools, names := map[string]bool{"active": true}, newColumnNames([]string{"active"})
	lookup := notNullLookup{booleans: func(string) map[string]bool { return bools },
		boolNames: func() *columnNames { return names }}
	var many []string
	for i := range 500 {
		many = append(many, fmt.Sprintf("is_flag_%03d", i))
	}
	manyNames := newColumnNames(many)
	hundreds := lookup
	hundreds.boolNames = func() *columnNames { return manyNames }
	for _, c := range []struct {
		name, sql string
		lookup    notNullLookup
	}{
		{"unrelated", "SELECT id, name, email FROM users WHERE id = 1", lookup},
		{"boolean", "SELECT id, name, email FROM users WHERE active = 1", lookup},
		{"unrelated_500_names", "SELECT id, name, email, is_flagged FROM users WHERE id = 1 AND name = 'is_flag'", hundreds},
	} {
		lookup := c.lookup
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				mysqlBoolLiterals(c.sql, lookup)
			}
		})
	}
}
