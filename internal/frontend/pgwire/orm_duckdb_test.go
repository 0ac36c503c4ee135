package pgwire_test

import (
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
)

// SQLAlchemy's ORM makes its tables and rows on the embedded default as on PostgreSQL: serial
// and identity primary keys give the ids, which the ORM reads back from INSERT ... RETURNING;
// a JSONB column and an indexed one are made, and JSON comes back from RETURNING as JSON.
func TestSQLAlchemyORMOnDuckDB(t *testing.T) {
	d := duckProxy(t, "transaction")
	out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "orm.py", d.Host, d.PortString(), d.User, d.Database)
	if err != nil {
		t.Fatalf("orm.py: %v\n%s", err, out)
	}
	pgclienttest.Expect(t, "SQLAlchemy ORM on DuckDB", out, map[string]string{
		"create_all": "None",
		"ids":        "[1, 2, 100, 110]",
		"query":      "[(110, 'two')]",
		"returning":  "(3, {'k': [1, 'x']})",
		"drop_all":   "None",
	})
}
