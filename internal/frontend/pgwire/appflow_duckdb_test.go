package pgwire_test

import (
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// An application's first day on the embedded default reads as on PostgreSQL: appflow.js (node-
// postgres's Pool) prints the same lines against a real PostgreSQL database and through
// QueryFlux on DuckDB.
func TestNodePostgresAppFlowOnDuckDB(t *testing.T) {
	want, err := pgclienttest.Command(t, time.Minute, nil, "node", "appflow.js", pgtest.NewDatabase(t))
	if err != nil {
		t.Fatalf("appflow.js on PostgreSQL: %v\n%s", err, want)
	}
	got, err := pgclienttest.Command(t, time.Minute, nil, "node", "appflow.js", duckProxy(t, "transaction").URL())
	if err != nil {
		t.Fatalf("appflow.js on DuckDB: %v\n%s", err, got)
	}
	if got != want {
		t.Errorf("appflow.js on DuckDB:\n%s\non PostgreSQL:\n%s", got, want)
	}
}
