package querytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestControlPlaneRoleOnPostgres is the production shape: `queryflux migrate`, then a
// controlPlane role on its own database (registry, capacity leases and history in Postgres)
// serving a worker whose queries run on another PostgreSQL database.
func TestControlPlaneRoleOnPostgres(t *testing.T) {
	stateURL := pgtest.NewDatabase(t) // the control plane's own database
	dataURL := pgtest.NewDatabase(t)  // the cluster the worker queries
	run(t, 60*time.Second, daemontest.Binary(t), "migrate", "--database-url", stateURL)

	cpAdmin := daemontest.FreeAddr(t)
	cpCfg := daemontest.WriteFile(t, "cp.yaml", fmt.Sprintf(`queryflux:
  role: controlPlane
  adminApi: {listen: "%s", token: "%s"}
  workerApi: {enabled: true, secret: "%s"}
  persistence: {databaseUrl: "%s"}
`, cpAdmin, adminToken, workerSecret, stateURL)+pgCluster(t, dataURL, 4))
	startDaemon(t, nil, []string{cpAdmin}, "--config", cpCfg)
	wPG, _, _ := startWorker(t, cpAdmin, "w-pg", 1)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var db string
	daemontest.EventuallyNil(t, 20*time.Second, func() error {
		c, err := pgx.Connect(ctx, "postgres://queryflux@"+wPG+"/main?sslmode=disable")
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		return c.QueryRow(ctx, "select current_database() as querytest_cp_marker").Scan(&db)
	})
	if want := strings.TrimPrefix(mustURL(t, dataURL).Path, "/"); db != want {
		t.Fatalf("the worker's query ran on %q, want %q", db, want)
	}
	// With a database configured, /admin/queries reads the history from Postgres (pghistory),
	// and the worker's lease came from the capacity table (failClosed: no lease, no query).
	daemontest.EventuallyNil(t, 20*time.Second, func() error {
		body := daemontest.Get(t, "http://"+cpAdmin+"/admin/queries?worker=w-pg", adminToken)
		if !strings.Contains(body, "querytest_cp_marker") {
			return fmt.Errorf("/admin/queries has no query of w-pg yet: %.300s", body)
		}
		return nil
	})
}
