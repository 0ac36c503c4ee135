package duckengine

import (
	"context"
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

// BenchmarkCompatRequestPlain: what the compatibility rewrites and the look for a setval cost a
// PostgreSQL client's statement that needs none (pgbench's), on the DuckDB path's every
// statement.
func BenchmarkCompatRequestPlain(b *testing.B) {
	for name, sqlText := range map[string]string{
		"select": "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
		"update": "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
	} {
		b.Run(name, func(b *testing.B) {
			q := &query.Request{SQL: sqlText, Protocol: query.ProtocolPostgres}
			q.Analysis()
			var e Engine
			b.ReportAllocs()
			for b.Loop() {
				c, err := compatRequest(q, "db")
				if err != nil {
					b.Fatal(err)
				}
				if err := e.pgSetval(context.Background(), nil, false, q, c, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteIntent: what reading a PostgreSQL client's statement for the write lock costs
// (every statement pays it): a read, pgbench's UPDATE, a plain INSERT and a FOR UPDATE.
func BenchmarkWriteIntent(b *testing.B) {
	for name, sqlText := range map[string]string{
		"select":     "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
		"update":     "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
		"insert":     "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
		"for-update": "SELECT id, state FROM jobs WHERE state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE",
	} {
		b.Run(name, func(b *testing.B) {
			q := &query.Request{SQL: sqlText, Protocol: query.ProtocolPostgres}
			q.Analysis()
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = writeIntent(q)
			}
		})
	}
}
