package pgengine

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestNumberedParams: a MySQL or Trino client's ? placeholders become PostgreSQL's $n, except
// inside strings and comments; PostgreSQL's own requests pass unchanged.
func TestNumberedParams(t *testing.T) {
	for _, c := range []struct{ protocol, sql, want string }{
		{query.ProtocolMySQL, "select ?, '?' # ?\n, ?", "select $1, '?' # ?\n, $2"},
		{query.ProtocolTrino, "select ? /* ? */ + ?", "select $1 /* ? */ + $2"},
		{query.ProtocolPostgres, "select $1, '?'", "select $1, '?'"},
	} {
		q := &query.Request{SQL: c.sql, Protocol: c.protocol, Args: []any{1, 2}}
		if got := numberedParams(q); got != c.want {
			t.Errorf("numberedParams(%q, %s) = %q, want %q", c.sql, c.protocol, got, c.want)
		}
	}
}
