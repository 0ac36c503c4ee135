package pgwire_test

import (
	"context"
	"testing"
)

// TestWithoutDescriber: a backend that cannot describe statements still serves pgx's default
// (prepared, cached) mode, with and without parameters.
func TestWithoutDescriber(t *testing.T) {
	e, _ := pgEngine(t)
	addr := startServer(t, &oneEngine{e: e}, pgwireTrustAll())
	c := connect(t, proxyURL(addr, "alice"))
	ctx := context.Background()
	var n int64
	var s string
	if err := c.QueryRow(ctx, "select 41 + 1, 'x'").Scan(&n, &s); err != nil || n != 42 || s != "x" {
		t.Fatalf("no params: n=%d s=%q err=%v", n, s, err)
	}
	if err := c.QueryRow(ctx, "select $1::int8 + 1, $2::text", 41, "y").Scan(&n, &s); err != nil || n != 42 || s != "y" {
		t.Fatalf("params: n=%d s=%q err=%v", n, s, err)
	}
	if err := c.QueryRow(ctx, "select 41 + 1, 'x'").Scan(&n, &s); err != nil || n != 42 {
		t.Fatalf("cached statement: n=%d err=%v", n, err)
	}
}
