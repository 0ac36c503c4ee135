package duckengine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestDuckDBStartupOptions: statement_timeout from a PostgreSQL client's startup options stops
// a long statement with PostgreSQL's 57014, in and outside a transaction; other settings are
// refused by name, never ignored.
func TestDuckDBStartupOptions(t *testing.T) {
	e := openConns(t, 2, nil)
	req := func(sql, options string) *query.Request {
		return &query.Request{SQL: sql, Protocol: query.ProtocolPostgres, Headers: map[string]string{"options": options}}
	}
	long := "select count(*) from range(1000000000) a, range(1000) b"
	check := func(err error, code, what string) {
		t.Helper()
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != code {
			t.Fatalf("%s: got %v, want SQLSTATE %s", what, err, code)
		}
	}
	for _, opts := range []string{"-c statement_timeout=200", "--statement-timeout=200ms", "-cstatement_timeout=0.2s"} {
		_, err := e.Execute(context.Background(), req(long, opts))
		check(err, "57014", opts)
	}
	if rows, err := e.Execute(context.Background(), req("select 1", "-c statement_timeout=5s -c application_name=x")); err != nil {
		t.Fatalf("a short statement under a timeout: %v", err)
	} else {
		rows.Close()
	}
	s := session(t, e)
	run(t, s, "begin")
	_, err := s.Execute(context.Background(), req(long, "-c statement_timeout=200"))
	check(err, "57014", "in a transaction")
	if s.TxStatus() != 'E' {
		t.Fatalf("a timed-out statement left the transaction in %c", s.TxStatus())
	}
	run(t, s, "rollback")
	_, err = e.Execute(context.Background(), req("select 1", "-c search_path=other"))
	check(err, "0A000", "search_path")
	_, err = e.Execute(context.Background(), req("select 1", "-c statement_timeout=soon"))
	check(err, "22023", "a bad timeout")
	_, err = e.Execute(context.Background(), req("select 1", "-X"))
	check(err, "22023", "a bad option")
}
