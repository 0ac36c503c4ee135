package duckengine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
)

// TestActionsInTransactionAfterReopen: a database file whose keys were declared with actions
// before the engine opened it performs them in a client's transaction (the declared catalog is
// read at open), and the transaction's rollback takes them back.
func TestActionsInTransactionAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "actions.duckdb")
	pg := func(x interface {
		Execute(context.Context, *query.Request) (query.Rows, error)
	}, sql string) string {
		t.Helper()
		rows, err := x.Execute(context.Background(), &query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		for {
			if _, err := rows.Next(context.Background()); err != nil {
				break
			}
		}
		tag := rows.Tag()
		_ = rows.Close()
		return tag
	}
	open := func() query.Engine {
		e, err := duckengine.Open(engine.Spec{Name: "duck", Kind: duckengine.Kind, Endpoint: path, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open()
	pg(e, "create table ap (id int primary key)")
	pg(e, "create table ac (id int primary key, pid int references ap on delete cascade)")
	pg(e, "insert into ap values (1), (2)")
	pg(e, "insert into ac values (10, 1), (11, 2)")
	_ = e.Close()
	e = open()
	t.Cleanup(func() { _ = e.Close() })
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		s, err := e.(engine.SessionOpener).OpenSession(context.Background(), &query.Request{SQL: "BEGIN", Protocol: query.ProtocolPostgres})
		if err != nil {
			t.Fatal(err)
		}
		pg(s, "begin")
		if tag := pg(s, "delete from ap where id = 1"); tag != "DELETE 1" {
			t.Errorf("delete in a transaction: %q", tag)
		}
		pg(s, end)
		_ = s.Close()
	}
	if got := pg(e, "select * from ac where pid = 1"); got != "SELECT 0" {
		t.Errorf("the cascade after COMMIT: %s", got)
	}
	if got := pg(e, "select * from ac"); got != "SELECT 1" {
		t.Errorf("ac after COMMIT: %s", got)
	}
}
