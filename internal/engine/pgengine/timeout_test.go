package pgengine

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/query"
)

// PostgreSQL answers a statement_timeout and a cancel both 57014; only the first is a time limit.
func TestStatementTimeoutIsTimedOut(t *testing.T) {
	for msg, want := range map[string]bool{
		"canceling statement due to statement timeout": true,
		"canceling statement due to user request":      false,
	} {
		var qe *query.Error
		if err := wrapErr(&pgconn.PgError{Code: "57014", Message: msg}); !errors.As(err, &qe) || qe.TimedOut != want {
			t.Errorf("%q: %+v", msg, qe)
		}
	}
}
