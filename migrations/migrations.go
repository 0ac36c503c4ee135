// Package migrations holds the numbered SQL migrations of the control plane's database,
// embedded in the binary, and applies them with goose.
//
// Numbering: 0001 init, 0002 worker registry, 0003 capacity leases, 0004 query history, 0005 config tables,
// 0006 config revisions, 0007 capacity authority
// (revocation, one clock, holders), 0008 refused configuration edits, 0009 worker endpoints
// (where peers forward requests), 0010 capacity waiters (retry-mode fairness, shared by replicas),
// 0011 a cluster's workerSelector, 0012 the fleet's id (in every lease's engine tag), 0013 the
// revisions published last (what the history gate reads of them, across restarts), 0014 named
// acquires (a lease keeps the worker's request id of the acquire that was granted it), 0015 one lease per
// named acquire (a retry racing its first sending is answered the first's lease).
// It touches the database it is given; it is outside the simulator.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
)

//go:embed *.sql
var files embed.FS

// Up applies every pending migration to the database at url (a postgres:// URL).
func Up(ctx context.Context, url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return fmt.Errorf("migrations: open: %w", err)
	}
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, files)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("migrations: up: %w", err)
	}
	return nil
}
