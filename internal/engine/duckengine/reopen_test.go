package duckengine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/query"
)

// invalidate makes DuckDB hit a fatal error: a checkpoint of the engine's file database told to
// abort (DuckDB's own debug setting), after which DuckDB refuses every statement on the whole
// database instance ("database has been invalidated") until it is reopened.
func invalidate(t *testing.T, ctx context.Context, e query.Engine) {
	t.Helper()
	s, err := e.(engine.SessionOpener).OpenSession(ctx, &query.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		"PRAGMA debug_checkpoint_abort='before_header'",
		"CREATE TABLE doomed AS SELECT 1 AS a",
	} {
		mustRun(t, ctx, s, q)
	}
	_, err = s.Execute(ctx, &query.Request{SQL: "CHECKPOINT"})
	if err == nil || !strings.Contains(err.Error(), "FATAL") {
		t.Fatalf("CHECKPOINT with checkpoint_abort: want DuckDB's fatal error, got %v", err)
	}
}

func mustRun(t *testing.T, ctx context.Context, ex interface {
	Execute(context.Context, *query.Request) (query.Rows, error)
}, sqlText string) {
	t.Helper()
	rows, err := ex.Execute(ctx, &query.Request{SQL: sqlText})
	if err != nil {
		t.Fatalf("%s: %v", sqlText, err)
	}
	if err := rows.Close(); err != nil {
		t.Fatalf("%s: %v", sqlText, err)
	}
}

// An in-memory database invalidated by a fatal error comes back, with what OnOpen loads (the
// embedded default's demo dataset): the next statement works, not every later one fails.
func TestInMemoryDatabaseReopensAfterAFatalError(t *testing.T) {
	ctx := context.Background()
	e, err := duckengine.Open(engine.Spec{Name: "reopen", Kind: duckengine.Kind, Endpoint: ":memory:",
		Options: map[string]string{"enable_external_access": "true", "lock_configuration": "false"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	loads := 0
	err = e.(*duckengine.Engine).OnOpen(ctx, func(ctx context.Context, e query.Engine) error {
		loads++
		rows, err := e.Execute(ctx, &query.Request{SQL: "CREATE TABLE seeded AS SELECT range AS i FROM range(3)"})
		if err == nil {
			err = rows.Close()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// DuckDB has no debug setting that fails an in-memory database fatally (a checkpoint of
	// one writes nothing): the engine is told of a fatal error as a statement would tell it.
	duckengine.NoteFatal(e.(*duckengine.Engine))
	if n := count(t, e, "SELECT count(*) FROM seeded"); n != "3" || loads != 2 {
		t.Fatalf("after the fatal error: %s rows in the reloaded table, %d loads; want 3 rows, 2 loads", n, loads)
	}
	if n := count(t, e, "SELECT count(*) FROM seeded"); n != "3" || loads != 2 {
		t.Fatalf("second statement: %s rows, %d loads; want 3 rows and no further reload", n, loads)
	}
}

// A file database invalidated by a fatal error is opened again from its file: what was
// committed before is there.
func TestFileDatabaseReopensAfterAFatalError(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := duckengine.Open(engine.Spec{Name: "reopen", Kind: duckengine.Kind, Endpoint: filepath.Join(dir, "main.db"),
		Options: map[string]string{"enable_external_access": "true", "lock_configuration": "false"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	mustRun(t, ctx, e, "CREATE TABLE kept AS SELECT range AS i FROM range(5)")
	invalidate(t, ctx, e)
	if n := count(t, e, "SELECT count(*) FROM kept"); n != "5" {
		t.Fatalf("after the fatal error: %s rows, want the 5 committed before it", n)
	}
}
