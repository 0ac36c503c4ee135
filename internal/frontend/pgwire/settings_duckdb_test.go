package pgwire_test

import (
	"context"
	"fmt"
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

// settingsScript is what the settings tests run, in order: SETs of the time zone that write
// rows as UTC, each read back by SHOW and current_setting, a timestamptz printed under it, and
// the settings PostgreSQL clients read at connect and around statements.
var settingsScript = []string{
	"set timezone = 'UTC'", "show timezone", "select current_setting('TimeZone')",
	"select '2024-01-02 03:04:05+00'::timestamptz::text", "select '2024-07-02 23:30:00-04'::timestamptz::text",
	"set time zone 'Etc/UTC'", "show time zone", "select current_setting('timezone')", "select current_setting('TimeZone', true)",
	"set timezone to 'gmt'", "show timezone", "select current_setting('TIMEZONE')",
	"set timezone = '+00'", "show timezone", "select current_setting('TimeZone')",
	"set time zone 'utc'", "show timezone", "select current_setting('TimeZone')",
	"select current_setting('statement_timeout')", "show statement_timeout",
	"select current_setting('lock_timeout'), current_setting('deadlock_timeout')", "show lock_timeout", "show deadlock_timeout",
	"select current_setting('idle_in_transaction_session_timeout')",
	"select current_setting('standard_conforming_strings'), current_setting('DateStyle'), current_setting('IntervalStyle')",
	"select current_setting('client_encoding'), current_setting('search_path')",
	"select current_setting('application_name'), current_setting('integer_datetimes')",
}

// runSettings runs settingsScript on url in mode, each statement's answer as a line.
func runSettings(t *testing.T, url, options string, mode pgx.QueryExecMode) []string {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if options != "" {
		cfg.RuntimeParams["options"] = options
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var out []string
	for _, sql := range settingsScript {
		rows, err := c.Query(ctx, sql, mode)
		var vals []any
		if err == nil {
			for rows.Next() {
				v, _ := rows.Values()
				vals = append(vals, v...)
			}
			rows.Close()
			err = rows.Err()
		}
		out = append(out, fmt.Sprintf("%s: %v %s", sql, vals, answerOf(err)))
	}
	return out
}

// TestSettingsAsPostgreSQLOnDuckDB: on the embedded DuckDB a PostgreSQL client reads its
// session's settings as PostgreSQL answers them, by SHOW and by current_setting, in the simple
// and the extended protocol (pgx, JDBC prepare every statement), with and without startup
// options: the TimeZone it set, by the name it set (DuckDB said Etc/UTC after SET TIME ZONE
// 'UTC'), statement_timeout and the other timeouts (current_setting('statement_timeout') failed
// 42P01 in both protocols), and the client-protocol settings.
func TestSettingsAsPostgreSQLOnDuckDB(t *testing.T) {
	d := duckProxy(t, "transaction")
	for _, options := range []string{"", "-c statement_timeout=1234 -c lock_timeout=2s -c deadlock_timeout=3min"} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			want := runSettings(t, pgtest.ServerURL(), options, mode)
			got := runSettings(t, d.URL(), options, mode)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("options %q, mode %v:\n got %s\nwant %s", options, mode, got[i], want[i])
				}
			}
		}
	}
}

// TestOtherTimeZonesRefusedOnDuckDB: a time zone other than UTC is refused (0A000: the
// frontend writes timestamps with time zone in UTC), naming it, and the session keeps the
// zone it had, which SHOW, current_setting and the printed timestamps still agree on.
func TestOtherTimeZonesRefusedOnDuckDB(t *testing.T) {
	d := duckProxy(t, "session")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, d.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := execSimple(c, "set time zone 'Etc/UTC'"); err != nil {
		t.Fatal(err)
	}
	for _, zone := range []string{"'+02'", "'America/New_York'", "'Europe/Paris'", "-7", "interval '+05:30' hour to minute"} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			_, err := c.Exec(ctx, "set time zone "+zone, mode)
			if a := answerOf(err); !strings.HasPrefix(a, "0A000 SET TimeZone to") || !strings.Contains(a, strings.Trim(strings.Fields(zone)[len(strings.Fields(zone))-1], "'")) && !strings.Contains(zone, "interval") {
				t.Errorf("set time zone %s (%v): %s", zone, mode, a)
			}
			var shown, current, printed string
			if err := c.QueryRow(ctx, "select current_setting('TimeZone'), '2024-01-02 03:04:05+00'::timestamptz::text", mode).Scan(&current, &printed); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRow(ctx, "show timezone", mode).Scan(&shown); err != nil {
				t.Fatal(err)
			}
			if shown != "Etc/UTC" || current != "Etc/UTC" || printed != "2024-01-02 03:04:05+00" || c.PgConn().ParameterStatus("TimeZone") != "Etc/UTC" {
				t.Errorf("after set time zone %s (%v): SHOW %q, current_setting %q, reported %q, printed %q", zone, mode, shown, current,
					c.PgConn().ParameterStatus("TimeZone"), printed)
			}
		}
	}
}
