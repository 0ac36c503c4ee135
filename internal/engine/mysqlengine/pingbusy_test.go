package mysqlengine

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// TestPingOfABusyEngineAnswers: an engine whose every connection is in use (here a SLEEP on its
// one connection; through the proxy, clients that never read their results) still answers a
// health ping, on a connection dialed for it and closed after, and its slots stay as they were.
// Before: the ping waited for a slot until the health check's timeout, the cluster was marked
// unhealthy and every other client of its group was refused ("no enabled, healthy cluster").
func TestPingOfABusyEngineAnswers(t *testing.T) {
	cfg, name := testDatabase(t)
	e, err := Open(Config{Name: "busy", Addr: cfg.Addr, User: cfg.User, Password: cfg.Passwd, Database: name, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	done := make(chan error, 1)
	go func() {
		rows, err := e.Execute(context.Background(), &query.Request{SQL: "SELECT SLEEP(3)"})
		if err == nil {
			_, err = rows.Next(context.Background())
			rows.Close()
		}
		done <- err
	}()
	for e.slots.inUse() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := e.Ping(ctx); err != nil {
		t.Fatalf("ping while the one connection runs a statement: %v", err)
	}
	if n := e.slots.inUse(); n != 1 {
		t.Errorf("slots in use after the ping: %d, want the statement's 1", n)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := e.Ping(context.Background()); err != nil || e.slots.inUse() != 0 {
		t.Fatalf("ping of an idle engine: %v, %d slots in use", err, e.slots.inUse())
	}
}
