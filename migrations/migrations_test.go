package migrations

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/queryflux/queryflux/internal/pgtest"
)

func TestUpIsIdempotent(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := Up(ctx, url); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM queryflux_meta").Scan(&n); err != nil {
		t.Fatalf("queryflux_meta missing after Up: %v", err)
	}
}
