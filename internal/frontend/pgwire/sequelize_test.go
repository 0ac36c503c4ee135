package pgwire_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestSequelizeInTransactionPoolMode: Sequelize connects (its SET TIME ZONE INTERVAL '+00:00'
// HOUR TO MINUTE, refused before), syncs a model, creates a row and finds it, through the
// proxy in transaction pool mode, on a PostgreSQL engine and on the embedded DuckDB.
func TestSequelizeInTransactionPoolMode(t *testing.T) {
	if _, err := os.Stat(filepath.Join(pgclienttest.Dir(), "node_modules", "sequelize")); err != nil {
		t.Fatalf("sequelize is not installed in %s (make test-deps runs npm ci there): %v", pgclienttest.Dir(), err)
	}
	for _, engineName := range []string{"postgres", "duckdb"} {
		t.Run(engineName, func(t *testing.T) {
			want := map[string]string{
				"authenticate": "ok", "sync": "ok", "create": "1",
				"findAll":  "1|hello|2026-01-02T03:04:05.000Z|true",
				"timezone": "<+00>-00", // the engine's, as the client set it
			}
			var d pgclienttest.DSN
			if engineName == "duckdb" {
				d = duckProxy(t, proxy.PoolModeTransaction)
				// Not compared: current_setting is DuckDB's own zone.
				delete(want, "timezone")
			} else {
				d = pgProxy(t, proxy.PoolModeTransaction)
			}
			out, err := pgclienttest.Command(t, time.Minute, nil, "node", "sequelize.js", d.URL(), "t_sequelize")
			if err != nil {
				t.Fatalf("node sequelize.js: %v\n%s", err, out)
			}
			pgclienttest.Expect(t, "Sequelize", out, want)
		})
	}
}
