package duckengine_test

import (
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// TestAWriterWaitsForAHolderAtWork: a PostgreSQL client's UPDATE of a row another client's
// open transaction wrote waits until that transaction ends, however long it keeps running
// statements, then updates the committed row, as on PostgreSQL. The write lock's give-up
// (a waiter runs without it) is for a holder that sat idle: bounding the wait itself made
// writers on a busy machine run early and fail 40001 on the row the holder still held.
func TestAWriterWaitsForAHolderAtWork(t *testing.T) {
	e := open(t)
	session := func() func(string) (string, error) {
		run := sessionOn(t, e, ",")
		return func(sql string) (string, error) {
			return run(&query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
		}
	}
	a, b := session(), session()
	must := func(run func(string) (string, error), sql string) {
		t.Helper()
		if _, err := run(sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	must(a, "create table acct (id int primary key, n int)")
	must(a, "insert into acct values (1, 0)")
	must(a, "begin")
	must(a, "update acct set n = n + 1 where id = 1")
	waited := make(chan error, 1)
	go func() {
		_, err := b("update acct set n = n + 10 where id = 1")
		waited <- err
	}()
	// The holder keeps working past the idle bound (2 s) before it commits.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		must(a, "select n from acct where id = 1")
		select {
		case err := <-waited:
			t.Fatalf("the writer did not wait for the transaction at work: %v", err)
		default:
		}
	}
	must(a, "commit")
	if err := <-waited; err != nil {
		t.Fatalf("the writer that waited: %v; want its update of the committed row", err)
	}
	if got, err := a("select n from acct where id = 1"); err != nil || got != "11" {
		t.Fatalf("n = %q (%v); want 11: both updates", got, err)
	}
}
