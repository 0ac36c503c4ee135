package pgwire_test

import (
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
)

// TestSQLAlchemyConnectsOnDuckDB: SQLAlchemy (psycopg2) connects to the embedded DuckDB and
// reads the server as it reads PostgreSQL: the version out of version() (before: "Could not
// determine version from string 'v1.1.3'", no connection at all), SHOW of settings and
// current_setting (before: DuckDB's "Table with name ... does not exist"), with PostgreSQL's
// column names.
func TestSQLAlchemyConnectsOnDuckDB(t *testing.T) {
	d := duckProxy(t, "transaction")
	out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "settings.py", d.Host, d.PortString(), d.User, d.Database)
	if err != nil {
		t.Fatalf("settings.py: %v\n%s", err, out)
	}
	pgclienttest.Expect(t, "SQLAlchemy on DuckDB", out, map[string]string{
		"server_version_info": "(15, 0)",
		"version":             "['version', True]",
		"isolation":           "repeatable read",
		"show":                `['on', 'UTF8', '"$user", public']`,
		"current_setting":     "[True, '63']",
		"has_table":           "True",
	})
}
