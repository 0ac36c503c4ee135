package pgengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// TestPingOfABusyEngineAnswers: with every connection of the engine's budget running a long
// statement, Ping (the cluster's health check) still answers, on a connection of its own that
// it closes, and the statement runs on. Before, the ping waited for the pool's one connection
// until the check's timeout: a PostgreSQL cluster at its cap with long statements was marked
// unhealthy and its group's other clients refused instead of queued (a real daemon:
// maxRunningQueries 1, pg_sleep(40), the next client "no enabled, healthy cluster" after 8 s).
func TestPingOfABusyEngineAnswers(t *testing.T) {
	c := openCancelled(t)
	pinger, ok := c.e.(interface{ Ping(context.Context) error })
	if !ok {
		t.Fatal("the engine has no Ping")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		rows, err := c.e.Execute(ctx, &query.Request{SQL: "select pg_sleep(60) /* qf_ping_busy */", Protocol: query.ProtocolPostgres})
		if err == nil {
			for {
				if _, err = rows.Next(ctx); err != nil {
					break
				}
			}
			rows.Close()
		}
		done <- err
	}()
	c.whenRunning(t, "qf_ping_busy", func() {
		pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer pcancel()
		if err := pinger.Ping(pctx); err != nil {
			t.Errorf("ping while the one connection runs a statement: %v", err)
		}
	})
	if n := c.active(t, "qf_ping_busy"); n != 1 {
		t.Errorf("after the ping, %d backends run the statement; want it still running", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.backends(t) > 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := c.backends(t); n != 1 {
		t.Errorf("the engine holds %d connections after the ping; want its one (the ping's own closed)", n)
	}
	cancel()
	<-done
}

// backends counts the server processes connected to the engine's database but the admin's.
func (c *cancelled) backends(t *testing.T) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int
	err := c.admin.QueryRow(context.Background(), `select count(*) from pg_stat_activity
		where datname = current_database() and pid <> pg_backend_pid()`).Scan(&n)
	if err != nil {
		t.Error(err)
		return -1
	}
	return n
}
