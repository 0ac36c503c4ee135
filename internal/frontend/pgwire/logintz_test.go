package pgwire_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestLoginTimeZoneAsPostgreSQL: a client whose statements are relayed to PostgreSQL is told
// at login (ParameterStatus TimeZone) the zone PostgreSQL tells it directly, the one its
// timestamptz values are then written in: the database's own (ALTER DATABASE ... SET
// timezone), or the client's startup TimeZone; in session and transaction pool mode.
func TestLoginTimeZoneAsPostgreSQL(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	admin := connect(t, url)
	var name string
	if err := admin.QueryRow(ctx, "select current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" SET timezone = 'Asia/Kolkata'"); err != nil {
		t.Fatal(err)
	}
	login := func(url, zone string) (reported, setting, text string) {
		t.Helper()
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		if zone != "" {
			cfg.RuntimeParams["TimeZone"] = zone
		}
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if err := c.QueryRow(ctx, "select current_setting('TimeZone'), '2026-01-01 00:00:00+00'::timestamptz::text").Scan(&setting, &text); err != nil {
			t.Fatal(err)
		}
		return c.PgConn().ParameterStatus("TimeZone"), setting, text
	}
	for _, mode := range []string{proxy.PoolModeSession, proxy.PoolModeTransaction} {
		t.Run(mode, func(t *testing.T) {
			e, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: url})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			if err := e.(*pgengine.Engine).Ping(ctx); err != nil { // as the first health check: the server's zone is known
				t.Fatal(err)
			}
			d := pgclienttest.Start(t, pgclienttest.Setup{Engine: e, PoolMode: mode, Database: "demo"})
			for _, zone := range []string{"", "America/New_York"} {
				dr, ds, dt := login(url, zone)
				if dr != "Asia/Kolkata" && zone == "" {
					t.Fatalf("PostgreSQL itself reports TimeZone %q for the database set to Asia/Kolkata", dr)
				}
				pr, ps, pt := login(d.URL(), zone)
				if pr != dr || ps != ds || pt != dt {
					t.Errorf("startup TimeZone %q: the proxy reports %q, current_setting %q, %s; PostgreSQL %q, %q, %s", zone, pr, ps, pt, dr, ds, dt)
				}
			}
		})
	}
}
