// Package pgtest gives each test a fresh PostgreSQL database on the server named by
// QUERYFLUX_TEST_PG (default: the local server, user postgres) and drops it afterwards.
// Under CI=true an unreachable server fails the test; elsewhere it skips with the reason.
//
// Test-only; it touches the network and the real clock.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ServerURL is the admin URL of the test server.
func ServerURL() string {
	if u := os.Getenv("QUERYFLUX_TEST_PG"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// NewDatabase creates a fresh database and returns its URL; it is dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		unreachable(t, err)
		return ""
	}
	defer admin.Close(context.Background())
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "qf_test_" + strings.ToLower(hex.EncodeToString(b[:]))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() { drop(name) })
	u, err := url.Parse(ServerURL())
	if err != nil {
		t.Fatalf("pgtest: QUERYFLUX_TEST_PG: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func drop(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return
	}
	defer admin.Close(context.Background())
	_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

func unreachable(t testing.TB, err error) {
	t.Helper()
	msg := fmt.Sprintf("pgtest: PostgreSQL at %s unreachable: %v", redact(ServerURL()), err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
