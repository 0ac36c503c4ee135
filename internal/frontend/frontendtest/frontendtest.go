// Package frontendtest holds helpers the frontend tests share: a query.Backend over one engine
// (with a readiness switch, a gate that holds queries as a capacity lease would, and a record
// of the requests it saw), an engine on a fresh MariaDB database, and in-memory Arrow results.
//
// Test-only. determinism: outside the simulator (test helpers over real engines and clocks)
package frontendtest

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// Backend adapts one engine to query.Backend.
type Backend struct {
	Engine query.Engine

	notReady atomic.Bool

	mu       sync.Mutex
	requests []query.Request
	gate     chan struct{} // when non-nil, Execute waits for it to close
	started  chan struct{} // receives one value when a query reaches the gate
}

// NewBackend returns a ready backend over e.
func NewBackend(e query.Engine) *Backend { return &Backend{Engine: e} }

// SetReady switches Ready; a backend that is not ready answers query.ErrNotConfigured.
func (b *Backend) SetReady(ready bool) { b.notReady.Store(!ready) }

// Ready reports whether queries are accepted.
func (b *Backend) Ready() bool { return !b.notReady.Load() }

// Hold makes later queries wait (as if for a capacity lease) until the returned release runs.
// Each held query sends on the returned channel when it starts waiting.
func (b *Backend) Hold() (waiting <-chan struct{}, release func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	gate := make(chan struct{})
	started := make(chan struct{}, 64)
	b.gate, b.started = gate, started
	var once sync.Once
	return started, func() {
		once.Do(func() {
			b.mu.Lock()
			b.gate = nil
			b.mu.Unlock()
			close(gate)
		})
	}
}

// Execute records q, waits at the gate if one is set, and runs q on the engine.
func (b *Backend) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	if !b.Ready() {
		return nil, query.ErrNotConfigured
	}
	b.mu.Lock()
	b.requests = append(b.requests, cloneRequest(q))
	gate, started := b.gate, b.started
	b.mu.Unlock()
	if gate != nil {
		started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return b.Engine.Execute(ctx, q)
}

func cloneRequest(q *query.Request) query.Request {
	c := *q
	c.Args = append([]any(nil), q.Args...)
	c.Tags = append([]string(nil), q.Tags...)
	if q.Headers != nil {
		c.Headers = make(map[string]string, len(q.Headers))
		for k, v := range q.Headers {
			c.Headers[k] = v
		}
	}
	return c
}

// Requests returns the requests seen so far.
func (b *Backend) Requests() []query.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]query.Request(nil), b.requests...)
}

// LastRequest returns the most recent request; it fails t when there is none.
func (b *Backend) LastRequest(t testing.TB) query.Request {
	t.Helper()
	rs := b.Requests()
	if len(rs) == 0 {
		t.Fatal("frontendtest: backend saw no request")
	}
	return rs[len(rs)-1]
}

// MariaDB opens a MySQL engine on a fresh database of the local MariaDB (mytest), closed when
// t ends. It returns the engine, the go-sql-driver DSN of the database, and its name.
func MariaDB(t testing.TB) (eng *mysqlengine.Engine, dsn, name string) {
	t.Helper()
	dsn, name = mytest.NewDatabase(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	eng, err = mysqlengine.Open(mysqlengine.Config{Name: "mariadb", Addr: cfg.Addr, User: cfg.User, Password: cfg.Passwd, Database: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng, dsn, name
}

// Exec runs sql on e and drains it; it fails t on error.
func Exec(t testing.TB, e query.Engine, sql string) {
	t.Helper()
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	for {
		if _, err := rows.Next(context.Background()); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// RecordRows is a query.Rows over batches held in memory.
type RecordRows struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	tag     string
	next    int
}

// NewRecordRows returns rows over batches (retained; released on Close). A nil schema makes
// a statement without rows whose tag is tag.
func NewRecordRows(schema *arrow.Schema, tag string, batches ...arrow.RecordBatch) *RecordRows {
	for _, b := range batches {
		b.Retain()
	}
	return &RecordRows{schema: schema, batches: batches, tag: tag}
}

func (r *RecordRows) Schema() *arrow.Schema { return r.schema }

func (r *RecordRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.next >= len(r.batches) {
		if r.tag == "" && r.schema != nil {
			n := int64(0)
			for _, b := range r.batches {
				n += b.NumRows()
			}
			r.tag = fmt.Sprintf("SELECT %d", n)
		}
		return nil, io.EOF
	}
	r.next++
	return r.batches[r.next-1], nil
}

func (r *RecordRows) Tag() string { return r.tag }

func (r *RecordRows) Close() error {
	for _, b := range r.batches {
		b.Release()
	}
	r.batches = nil
	return nil
}

// FuncEngine is an engine whose answers come from a function: for fixed results (every Arrow
// type, say) that no real engine returns in one query.
type FuncEngine func(ctx context.Context, q *query.Request) (query.Rows, error)

func (f FuncEngine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	return f(ctx, q)
}
func (f FuncEngine) Ping(context.Context) error { return nil }
func (f FuncEngine) Close() error               { return nil }
