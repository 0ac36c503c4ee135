// Package frontendtest holds helpers the frontend tests share: a query.Backend over one engine
// (with a readiness switch, a gate that holds queries as a capacity lease would, and a record
// of the requests it saw), an engine on a fresh MariaDB database, and in-memory Arrow results.
//
// Test-only.
//
// determinism: outside the simulator (test helpers over real engines and clocks)
package frontendtest

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
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

// OpenSession forwards to the engine when it can pin a connection (engine.SessionOpener), as
// the proxy core does; the session's statements are recorded too.
func (b *Backend) OpenSession(ctx context.Context, q *query.Request) (engine.Session, error) {
	if !b.Ready() {
		return nil, query.ErrNotConfigured
	}
	opener, ok := b.Engine.(engine.SessionOpener)
	if !ok {
		return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: "engine cannot pin a connection"}
	}
	s, err := opener.OpenSession(ctx, q)
	if err != nil {
		return nil, err
	}
	return &recordedSession{Session: s, b: b}, nil
}

type recordedSession struct {
	engine.Session
	b *Backend
}

func (s *recordedSession) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	s.b.mu.Lock()
	s.b.requests = append(s.b.requests, cloneRequest(q))
	s.b.mu.Unlock()
	return s.Session.Execute(ctx, q)
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

// AllTypes returns a two-row result with one column of each Arrow type the frontends map:
// row 0 holds values, row 1 NULLs. AllTypesText is row 0 as each column's expected text.
func AllTypes() (*arrow.Schema, arrow.RecordBatch) {
	fields := []arrow.Field{
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "tstz", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}, Nullable: true},
		{Name: "t", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
		{Name: "n", Type: arrow.Null, Nullable: true},
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	ts := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	b.Field(0).(*array.BooleanBuilder).Append(true)
	b.Field(1).(*array.Int8Builder).Append(-8)
	b.Field(2).(*array.Int16Builder).Append(-1600)
	b.Field(3).(*array.Int32Builder).Append(-320000)
	b.Field(4).(*array.Int64Builder).Append(-6400000000)
	b.Field(5).(*array.Uint8Builder).Append(250)
	b.Field(6).(*array.Uint16Builder).Append(65000)
	b.Field(7).(*array.Uint32Builder).Append(4000000000)
	b.Field(8).(*array.Uint64Builder).Append(18000000000000000000)
	b.Field(9).(*array.Float32Builder).Append(1.5)
	b.Field(10).(*array.Float64Builder).Append(-2.25)
	b.Field(11).(*array.Decimal128Builder).Append(decimal128.FromI64(1234567))
	b.Field(12).(*array.StringBuilder).Append("héllo")
	b.Field(13).(*array.BinaryBuilder).Append([]byte{0, 0xff, 0x10})
	b.Field(14).(*array.Date32Builder).Append(arrow.Date32FromTime(ts))
	b.Field(15).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
	b.Field(16).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.Unix()))
	b.Field(17).(*array.Time64Builder).Append(arrow.Time64((13*3600 + 14*60 + 15) * 1_000_000))
	b.Field(18).(*array.NullBuilder).AppendNull()
	for _, f := range b.Fields() {
		f.AppendNull()
	}
	return schema, b.NewRecordBatch()
}

// AllTypesText is row 0 of AllTypes as text, the form the MySQL text protocol and most
// clients' string scans give.
var AllTypesText = []string{"1", "-8", "-1600", "-320000", "-6400000000", "250", "65000", "4000000000",
	"18000000000000000000", "1.5", "-2.25", "12345.67", "héllo", "\x00\xff\x10", "2024-02-29",
	"2024-02-29 13:14:15.123456", "2024-02-29 13:14:15", "13:14:15.000000", "NULL"}

// AllTypesEngine answers every query with AllTypes.
func AllTypesEngine() FuncEngine {
	return func(ctx context.Context, q *query.Request) (query.Rows, error) {
		schema, batch := AllTypes()
		defer batch.Release()
		return NewRecordRows(schema, "", batch), nil
	}
}
