package duckengine_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
)

// TestAHolderStreamingAResultIsAtWork: the write lock's holder reading a long result of its
// transaction is at work while it reads: each read is a move of the holder, so its waiters do
// not give up on it as idle (and run without the lock, failing 40001 on its rows) while it
// still streams. A result left unread is no work: the holder is idle idleAfter after its last
// read, not held at work until its session's next statement.
func TestAHolderStreamingAResultIsAtWork(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	s, err := e.(engine.SessionOpener).OpenSession(ctx, &query.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(sql string) query.Rows {
		t.Helper()
		rows, err := s.Execute(ctx, &query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return rows
	}
	drain := func(rows query.Rows) {
		t.Helper()
		for rows.Schema() != nil {
			if _, err := rows.Next(ctx); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		_ = rows.Close()
	}
	work := func(want int, when string) {
		t.Helper()
		holder, running := duckengine.WriteLockWork(e.(*duckengine.Engine))
		if holder == 0 || running != want {
			t.Fatalf("%s: holder %d with %d under way; want the session holding with %d", when, holder, running, want)
		}
	}
	drain(run("create table big (id int primary key, n int)"))
	drain(run("insert into big select i, 0 from range(200000) t(i)"))
	drain(run("begin"))
	drain(run("update big set n = 1 where id = 1"))
	work(0, "after its update")
	rows := run("select * from big")
	if _, err := rows.Next(ctx); err != nil {
		t.Fatal(err)
	}
	work(0, "between reads of a long result")
	for read := 0; read < 3; read++ {
		before := duckengine.WriteLockMoved(e.(*duckengine.Engine))
		time.Sleep(5 * time.Millisecond)
		if _, err := rows.Next(ctx); err != nil {
			t.Fatal(err)
		}
		if after := duckengine.WriteLockMoved(e.(*duckengine.Engine)); after <= before {
			t.Fatalf("read %d of a long result: the holder last moved at %v, as before it (%v); want the read a move", read, after, before)
		}
	}
	before := duckengine.WriteLockMoved(e.(*duckengine.Engine))
	time.Sleep(5 * time.Millisecond)
	work(0, "its result left unread")
	if after := duckengine.WriteLockMoved(e.(*duckengine.Engine)); after != before {
		t.Fatalf("a result left unread: the holder moved at %v; want no move since its last read (%v)", after, before)
	}
	drain(rows)
	work(0, "its result read")
	_ = run("select * from big") // left unread: held in memory when the next statement runs
	drain(run("select 1"))
	work(0, "its unread result held for the next statement")
	rows = run("select * from big")
	_ = rows.Close()
	work(0, "its result closed")
	drain(run("commit"))
}
