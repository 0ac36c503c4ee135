package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestTimeZonePerClientOnOneConnection: in transaction pool mode two clients with different
// time zones take turns on ONE engine connection; each sees its own zone (current_setting and
// a timestamptz as text), and a third that never set one sees the server's default. A SET
// rolled back does not stick, an invalid zone fails as in PostgreSQL and changes nothing, and
// RESET gives the default back. As PgBouncer does with the parameters it tracks.
func TestTimeZonePerClientOnOneConnection(t *testing.T) {
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			d, _ := oneConnProxy(t, proxy.PoolModeTransaction, 1)
			a, b, c := connect(t, d.URL()), connect(t, d.URL()), connect(t, d.URL())
			def := show(t, c, "timezone", mode)
			mustExec(t, a, "SET TIME ZONE 'america/new_york'", mode)
			mustExec(t, b, "SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE", mode)
			if v := a.PgConn().ParameterStatus("TimeZone"); v != "America/New_York" {
				t.Fatalf("a was told TimeZone %q, want America/New_York", v)
			}
			if v := b.PgConn().ParameterStatus("TimeZone"); v != "<+05:30>-05:30" {
				t.Fatalf("b was told TimeZone %q, want <+05:30>-05:30", v)
			}
			want := map[*pgx.Conn][2]string{
				a: {"America/New_York", "2025-12-31 19:00:00-05"},
				b: {"<+05:30>-05:30", "2026-01-01 05:30:00+05:30"},
				c: {def, "2026-01-01 00:00:00+00"},
			}
			check := func(when string) {
				t.Helper()
				for round := range 2 {
					for _, cl := range []*pgx.Conn{a, b, c} {
						var zone, text string
						err := cl.QueryRow(context.Background(),
							"select current_setting('TimeZone'), '2026-01-01 00:00:00+00'::timestamptz::text", mode).Scan(&zone, &text)
						if err != nil {
							t.Fatal(err)
						}
						if w := want[cl]; zone != w[0] || text != w[1] {
							t.Fatalf("%s, round %d: got %q %q, want %q %q", when, round, zone, text, w[0], w[1])
						}
					}
				}
			}
			check("after the SETs")

			mustExec(t, a, "begin", mode)
			mustExec(t, a, "set time zone 'Asia/Tokyo'", mode)
			mustExec(t, a, "rollback", mode)
			check("after a rolled back SET")

			mustExec(t, b, "begin", mode)
			mustExec(t, b, "set timezone = 'Europe/Paris'", mode)
			mustExec(t, b, "commit", mode)
			want[b] = [2]string{"Europe/Paris", "2026-01-01 01:00:00+01"}
			check("after a SET committed")

			_, err := a.Exec(context.Background(), "set time zone 'Foo/Bar'", mode)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "22023" {
				t.Fatalf("an invalid zone: %v, want 22023", err)
			}
			check("after an invalid zone")

			mustExec(t, b, "reset timezone", mode)
			want[b] = want[c]
			check("after RESET")
		})
	}
}

// TestStylesOnTheFrontendsOwnPath: where this frontend writes the rows itself (DuckDB, or a
// PostgreSQL group without passthrough), timestamps with time zone are written in UTC, dates
// in ISO form and intervals in postgres style: a SET that keeps to that is answered with what
// PostgreSQL reports; any other fails (0A000, or PostgreSQL's 22023 for a value it would not
// take) rather than being silently ignored.
func TestStylesOnTheFrontendsOwnPath(t *testing.T) {
	for _, engineName := range []string{"duckdb", "postgres"} {
		t.Run(engineName, func(t *testing.T) {
			addr := ""
			if engineName == "duckdb" {
				addr = duckProxy(t, "transaction").URL()
			} else {
				addr = proxyURL(oneConnServer(t, true), "alice")
			}
			c := connect(t, addr)
			for _, s := range []struct{ sql, name, reported string }{
				{"SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE", "TimeZone", "<+00>-00"}, // Sequelize
				{"SET SESSION timezone TO 'utc'", "TimeZone", "UTC"},                       // Rails
				{"set time zone 'Etc/UTC'", "TimeZone", "Etc/UTC"},
				{"set time zone 0", "TimeZone", "<+00>-00"},
				{"reset timezone", "TimeZone", "UTC"},
				{"set datestyle = 'iso'", "DateStyle", "ISO, MDY"},
				{"SET DateStyle TO ISO, US", "DateStyle", "ISO, MDY"},
				{"set intervalstyle to DEFAULT", "IntervalStyle", "postgres"},
			} {
				if _, err := c.Exec(context.Background(), s.sql); err != nil {
					t.Fatalf("%s: %v", s.sql, err)
				}
				if v := c.PgConn().ParameterStatus(s.name); v != s.reported {
					t.Fatalf("%s: %s reported as %q, want %q", s.sql, s.name, v, s.reported)
				}
			}
			for sql, code := range map[string]string{
				"set time zone 'Europe/Paris'": "0A000", "set time zone -7": "0A000", "set timezone = 'Foo/Bar'": "22023",
				"set datestyle = 'German'": "0A000", "set datestyle = 'iso, dmy'": "0A000", "set datestyle = 'foo'": "22023",
				"set intervalstyle = 'iso_8601'": "0A000", "set intervalstyle = 'x'": "22023",
			} {
				_, err := c.Exec(context.Background(), sql)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != code {
					t.Errorf("%s: %v, want %s", sql, err, code)
				}
			}
			if v := c.PgConn().ParameterStatus("TimeZone"); v != "UTC" {
				t.Fatalf("after the refused SETs TimeZone is reported as %q", v)
			}
		})
	}
}

// BenchmarkClientsWithZonesTakingTurns: two clients that set their time zone take turns on ONE
// engine connection (transaction pool mode), one statement each: every statement finds the
// connection last used by the other client, so it is reset and set up for its client first.
func BenchmarkClientsWithZonesTakingTurns(b *testing.B) {
	e, _ := pgEngine(b)
	d := pgclienttest.Start(b, pgclienttest.Setup{Engine: e, PoolMode: proxy.PoolModeTransaction, Database: "demo", MaxRunningQueries: 1})
	ctx := context.Background()
	var cs [2]*pgx.Conn
	for i, zone := range []string{"Asia/Tokyo", "Europe/Paris"} {
		c, err := pgx.Connect(ctx, d.URL())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "set time zone '"+zone+"'"); err != nil {
			b.Fatal(err)
		}
		cs[i] = c
	}
	var n int
	for i := 0; b.Loop(); i++ {
		if err := cs[i%2].QueryRow(ctx, "select 1", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil {
			b.Fatal(err)
		}
	}
}
