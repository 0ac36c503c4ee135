package pgengine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// A statement PostgreSQL refuses reaches the caller as its SQLSTATE, not as a cancellation: at
// once (a syntax error), and for a statement without rows (a DDL error), on a context nobody
// cancelled.
func TestServerErrorsKeepTheirCode(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	for _, c := range []struct{ sql, code string }{
		{"selec 1", "42601"},
		{"select * from no_such_table", "42P01"},
		{"drop table no_such_table", "42P01"},
	} {
		_, err := e.Execute(ctx, &query.Request{SQL: c.sql})
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != c.code || errors.Is(err, context.Canceled) {
			t.Errorf("%s: error %v, want SQLSTATE %s", c.sql, err, c.code)
		}
	}
}
