package duckengine

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// codeFatal is the SQLSTATE of a DuckDB fatal error (internal_error): after one DuckDB refuses
// every statement on the database ("database has been invalidated") until it is reopened.
const codeFatal = sqlstate.InternalError

// reopener is how the engine opens its database again after a fatal error, and what it
// loads into a fresh one.
type reopener struct {
	dsn      string
	endpoint string
	database string
	inMemory bool
	conns    int
	// readOnlyFile is the file attached read-only (access_mode READ_ONLY) as database, and
	// late the settings applied once it is attached.
	readOnlyFile string
	late         []string

	mu      sync.Mutex  // one reopen at a time
	invalid atomic.Bool // a fatal error was seen on the current database
	// onOpen fills a fresh database (the demo dataset); run at OnOpen and after each reopen.
	onOpen func(context.Context, query.Engine) error
}

// OnOpen runs load on the database now and again each time the database is reopened after a
// fatal error (an in-memory database comes back empty).
func (e *Engine) OnOpen(ctx context.Context, load func(context.Context, query.Engine) error) error {
	e.reopen.mu.Lock()
	e.reopen.onOpen = load
	e.reopen.mu.Unlock()
	return load(ctx, e)
}

// isFatal reports an error after which DuckDB has invalidated the database.
func isFatal(err error) bool {
	var qe *query.Error
	return errors.As(err, &qe) && qe.Code == codeFatal
}

// isInvalidated reports DuckDB refusing a statement because an earlier fatal error invalidated
// the database: nothing of the statement ran.
func isInvalidated(err error) bool {
	return isFatal(err) && strings.Contains(err.Error(), "database has been invalidated")
}

// noteFatal marks the database for reopening when err is fatal, and says whether it was.
func (e *Engine) noteFatal(err error) bool {
	if err == nil || !isFatal(err) {
		return false
	}
	if !e.reopen.invalid.Swap(true) {
		slog.Error("duckengine: a fatal DuckDB error invalidated the database; it is reopened for the next statement",
			"cluster", e.name, "error", redact.Error(err))
	}
	return true
}

type retryKey struct{}

// loadingKey marks OnOpen's statements during a reopen.
type loadingKey struct{}

// retrying marks ctx as a statement's second try, so a database that fails again is reported.
func retrying(ctx context.Context) context.Context { return context.WithValue(ctx, retryKey{}, true) }

func retried(ctx context.Context) bool { return ctx.Value(retryKey{}) != nil }

// current is the open database, reopened first when a fatal error invalidated it. A file
// database is opened again from its file; an in-memory one comes back empty and gets what
// OnOpen loads. Connections still held on the old database (open transactions) fail until
// their clients end them.
func (e *Engine) current(ctx context.Context) (*sql.DB, error) {
	if !e.reopen.invalid.Load() || ctx.Value(loadingKey{}) != nil {
		return e.db.Load(), nil
	}
	r := &e.reopen
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.invalid.Load() {
		return e.db.Load(), nil // reopened meanwhile
	}
	old := e.db.Load()
	// The old database must let go of its file before DuckDB opens it again in this process.
	_ = old.Close()
	db, err := e.openDB()
	if err != nil {
		return nil, &query.Error{Code: query.CodeEngineUnavailable, Message: "the embedded database could not be reopened after a fatal error: " + err.Error()}
	}
	e.db.Store(db)
	e.keys.changing() // another database: no table's keys read from the last one hold
	r.invalid.Store(false)
	if r.onOpen != nil {
		// Loaded before any client sees the fresh database; the load's own statements do not
		// wait for this reopen (loadingKey).
		if err := r.onOpen(context.WithValue(ctx, loadingKey{}, true), e); err != nil {
			slog.Error("duckengine: loading the reopened database failed", "cluster", e.name, "error", redact.Error(err))
		}
	}
	slog.Warn("duckengine: database reopened after a fatal error", "cluster", e.name, "inMemory", r.inMemory)
	return db, nil
}
