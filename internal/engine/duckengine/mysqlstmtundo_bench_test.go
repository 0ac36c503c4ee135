package duckengine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
)

// benchSession is a MySQL client's session on a new in-memory DuckDB, with a table t (an
// AUTO_INCREMENT id, a unique code) and exec running one statement to its end.
func benchSession(b *testing.B) (exec func(sql string) error) {
	b.Helper()
	ctx := context.Background()
	e, err := duckengine.Open(engine.Spec{Name: "duck", Kind: duckengine.Kind, Endpoint: ":memory:"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	s, err := e.(engine.SessionOpener).OpenSession(ctx, &query.Request{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	exec = func(sql string) error {
		rows, err := s.Execute(ctx, &query.Request{SQL: sql, Protocol: query.ProtocolMySQL})
		if err != nil {
			return err
		}
		rows.Close()
		return nil
	}
	if err := exec("create table t (id int auto_increment primary key, code varchar(20) unique, n int)"); err != nil {
		b.Fatal(err)
	}
	return exec
}

// BenchmarkMySQLInsertInTransaction: a MySQL client's INSERT (its id generated) inside a
// transaction, where each is kept to be run again (mysqlstmtundo.go) and its id reserved
// before it runs; autocommit: the same INSERT outside one.
func BenchmarkMySQLInsertInTransaction(b *testing.B) {
	for _, inTx := range []bool{true, false} {
		b.Run(map[bool]string{true: "transaction", false: "autocommit"}[inTx], func(b *testing.B) {
			exec := benchSession(b)
			if inTx {
				if err := exec("begin"); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if err := exec(fmt.Sprintf("insert into t (code, n) values ('c%d', %d)", i, i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMySQLRefusedWriteUndo: a duplicate key refused inside a transaction that has kept
// writes before it: the refusal's cost is DuckDB's ROLLBACK and BEGIN and the kept writes run again.
func BenchmarkMySQLRefusedWriteUndo(b *testing.B) {
	for _, kept := range []int{0, 10, 100, 1000} {
		b.Run(fmt.Sprintf("kept=%d", kept), func(b *testing.B) {
			exec := benchSession(b)
			if err := exec("begin"); err != nil {
				b.Fatal(err)
			}
			if err := exec("insert into t (code, n) values ('dup', 0)"); err != nil {
				b.Fatal(err)
			}
			for i := range kept - 1 {
				if err := exec(fmt.Sprintf("insert into t (code, n) values ('k%d', %d)", i, i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if err := exec("insert into t (code, n) values ('dup', 1)"); err == nil {
					b.Fatal("the duplicate was taken")
				}
			}
			b.StopTimer()
			if err := exec("insert into t (code, n) values ('after', 1)"); err != nil {
				b.Fatalf("the transaction did not go on: %v", err)
			}
		})
	}
}
