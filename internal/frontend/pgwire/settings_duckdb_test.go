package pgwire_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
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

// TestLoginSettingsAgreeWithShowOnDuckDB: what the frontend announces at login (ParameterStatus)
// is what SHOW and current_setting answer on the embedded DuckDB, setting by setting: both read
// engine.PostgresLoginSettings (and the server version).
func TestLoginSettingsAgreeWithShowOnDuckDB(t *testing.T) {
	d := duckProxy(t, "transaction")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, d.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	names := []string{"server_version"}
	for _, s := range engine.PostgresLoginSettings {
		names = append(names, s[0])
	}
	for _, name := range names {
		announced := c.PgConn().ParameterStatus(name)
		if announced == "" {
			t.Errorf("%s: not announced at login", name)
		}
		var shown, current string
		if err := c.QueryRow(ctx, "show "+name).Scan(&shown); err != nil {
			t.Errorf("show %s: %v", name, err)
		}
		if err := c.QueryRow(ctx, "select current_setting('"+name+"')").Scan(&current); err != nil {
			t.Errorf("current_setting(%s): %v", name, err)
		}
		if shown != announced || current != announced {
			t.Errorf("%s: announced %q at login, SHOW %q, current_setting %q", name, announced, shown, current)
		}
	}
}

// TestSQLAlchemyReflectsOnDuckDBAsPostgreSQL: SQLAlchemy's inspector (psycopg2) reflects tables
// on DuckDB as on PostgreSQL 15 for the same statements (testdata/clients/reflect.py): columns,
// primary key in key order, indexes, foreign keys, unique constraints, a whole Table. Before,
// get_columns failed (json_build_object; then unqualified pg_index and pg_attribute, DuckDB's
// own), get_pk_constraint named no columns and get_indexes failed (an ANY in an outer join);
// varchar(20) reflected as TEXT until the declared types were kept (pgdeclared.go).
func TestSQLAlchemyReflectsOnDuckDBAsPostgreSQL(t *testing.T) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	d := duckProxy(t, "transaction")
	reflect := func(host, port, user, db string) string {
		out, err := pgclienttest.Command(t, time.Minute, nil, "/usr/bin/python3", "reflect.py", host, port, user, db)
		if err != nil {
			t.Fatalf("reflect.py on %s:%s: %v\n%s", host, port, err, out)
		}
		return out
	}
	want := reflect(u.Hostname(), u.Port(), u.User.Username(), strings.TrimPrefix(u.Path, "/"))
	if got := reflect(d.Host, d.PortString(), d.User, d.Database); got != want {
		t.Errorf("SQLAlchemy's reflection differs.\nPostgreSQL:\n%s\nDuckDB:\n%s", want, got)
	}
}
