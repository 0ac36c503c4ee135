package duckengine_test

import (
	"context"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestSetLocalLastsTheTransaction: SET LOCAL changes a setting for the rest of the
// transaction only, as in PostgreSQL: after COMMIT or ROLLBACK the connection (the pool's only
// one, so the next statement runs there) has its value from before; statement_timeout times
// the transaction's statements; outside a transaction SET LOCAL does nothing; a setting DuckDB
// lacks is refused.
func TestSetLocalLastsTheTransaction(t *testing.T) {
	e := openConns(t, 1, map[string]string{"lock_configuration": "false"})
	setting := func(x interface {
		Execute(context.Context, *query.Request) (query.Rows, error)
	}, name string) string {
		rows, err := x.Execute(context.Background(), &query.Request{SQL: "SELECT current_setting('" + name + "')"})
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		b, err := rows.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return b.Column(0).ValueStr(0)
	}
	zone := func(x interface {
		Execute(context.Context, *query.Request) (query.Rows, error)
	}) string {
		return setting(x, "TimeZone")
	}
	before := zone(e)
	// MySQL's SET LOCAL is SET SESSION: not this one, and not silently nothing.
	if _, err := e.Execute(context.Background(), &query.Request{SQL: "SET LOCAL TimeZone = 'Asia/Tokyo'", Protocol: query.ProtocolMySQL}); err == nil {
		t.Error("a MySQL client's SET LOCAL answered as PostgreSQL's SET LOCAL outside a transaction")
	}
	run(t, e, "SET LOCAL TimeZone = 'Asia/Tokyo'")
	if got := zone(e); got != before {
		t.Fatalf("SET LOCAL outside a transaction changed TimeZone to %s", got)
	}
	for _, end := range []string{"COMMIT", "ROLLBACK"} {
		s := session(t, e)
		run(t, s, "BEGIN")
		run(t, s, "SET LOCAL TimeZone = 'Asia/Tokyo'")
		run(t, s, "set local time zone 'America/Lima'")
		if got := zone(s); got != "America/Lima" {
			t.Fatalf("in the transaction TimeZone = %s, want America/Lima", got)
		}
		run(t, s, end)
		if got := zone(s); got != before {
			t.Fatalf("after %s TimeZone = %s, want %s", end, got, before)
		}
		_ = s.Close()
		if got := zone(e); got != before {
			t.Fatalf("after %s the pooled connection's TimeZone = %s, want %s", end, got, before)
		}
	}
	s := session(t, e)
	run(t, s, "BEGIN")
	run(t, s, "SET LOCAL statement_timeout = '50ms'")
	if c := code(s, "SELECT count(*) FROM range(10000000000) a"); c != "57014" {
		t.Errorf("a long statement after SET LOCAL statement_timeout: %q, want 57014", c)
	}
	run(t, s, "ROLLBACK")
	run(t, s, "BEGIN")
	if c := code(s, "SET LOCAL work_mem = '64MB'"); c != "0A000" {
		t.Errorf("SET LOCAL of a setting DuckDB lacks: %q, want 0A000", c)
	}
	run(t, s, "ROLLBACK")
	// A locked cluster's clients change only where names resolve.
	locked := openConns(t, 1, nil)
	s = session(t, locked)
	run(t, s, "BEGIN")
	if c := code(s, "SET LOCAL TimeZone = 'Asia/Tokyo'"); c != "42501" {
		t.Errorf("SET LOCAL TimeZone on a locked cluster: %q, want 42501", c)
	}
	run(t, s, "ROLLBACK")
	run(t, s, "BEGIN")
	path := setting(s, "search_path")
	run(t, s, "SET LOCAL search_path = 'memory.main'")
	if got := setting(s, "search_path"); got != "memory.main" {
		t.Errorf("SET LOCAL search_path: %q", got)
	}
	run(t, s, "COMMIT")
	_ = s.Close()
	if got := setting(locked, "search_path"); got != path {
		t.Errorf("after the transaction search_path = %q, want %q", got, path)
	}
}
