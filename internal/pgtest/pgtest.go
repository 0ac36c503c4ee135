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
	name := NewName("qf_test_")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := Drop(name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	u, err := url.Parse(ServerURL())
	if err != nil {
		t.Fatalf("pgtest: QUERYFLUX_TEST_PG: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// RunTagEnv names the variable that tags every database a test run creates (make test sets it),
// so the run can check at its end that it left none behind.
const RunTagEnv = "QUERYFLUX_TEST_RUN"

// NewName is a fresh database name: prefix, the run's tag (if any), random hex.
func NewName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + RunTag() + strings.ToLower(hex.EncodeToString(b[:]))
}

// RunTag is this run's tag followed by "_", or "" outside a tagged run; only [a-z0-9] is kept.
func RunTag() string {
	tag := strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return -1
	}, strings.ToLower(os.Getenv(RunTagEnv)))
	if tag == "" {
		return ""
	}
	return tag + "_"
}

// Drop drops the database name, ending its sessions; a drop that fails (even after retries) is
// an error, so a test that leaves its database behind fails.
func Drop(name string) error {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * time.Second)
		}
		if err = dropOnce(name); err == nil {
			return nil
		}
	}
	return fmt.Errorf("drop database %s: %w", name, err)
}

func dropOnce(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
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
