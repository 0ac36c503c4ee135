// Package migratedtest gives a test a fresh PostgreSQL database (pgtest) with every migration
// applied, and a pool on it. It lives apart from pgtest because the migrations' own tests use
// pgtest; it lives apart from migrations so production code does not import testing.
//
// Test-only; it touches the network and the real clock, through pgtest.
package migratedtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/migrations"
)

// NewDatabase is a fresh database with every migration applied; it is dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	url := pgtest.NewDatabase(t)
	if err := migrations.Up(context.Background(), url); err != nil {
		t.Fatalf("migrating the test database: %v", err)
	}
	return url
}

// NewPool is a pool on a fresh migrated database (NewDatabase), closed when t ends, and the
// database's URL.
func NewPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("opening a pool on the test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, url
}
