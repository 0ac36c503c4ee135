package forward

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/proxy"
)

// stallingBackend runs each query until released: Execute blocks while rowsFirst is false;
// otherwise its rows give one batch and then block.
type stallingBackend struct {
	rowsFirst bool
	started   chan struct{} // one send per Execute
	release   chan struct{}
	count     atomic.Int64
}

func (*stallingBackend) Ready() bool { return true }

func (b *stallingBackend) Execute(ctx context.Context, _ *query.Request) (query.Rows, error) {
	b.count.Add(1)
	b.started <- struct{}{}
	if !b.rowsFirst {
		select {
		case <-b.release:
		case <-ctx.Done():
		}
		return nil, ctx.Err()
	}
	return &oneThenStall{b: b}, nil
}

type oneThenStall struct {
	b    *stallingBackend
	sent bool
}

var stallSchema = arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)

func (*oneThenStall) Schema() *arrow.Schema { return stallSchema }
func (*oneThenStall) Tag() string           { return "SELECT 1" }
func (*oneThenStall) Close() error          { return nil }
func (r *oneThenStall) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if !r.sent {
		r.sent = true
		bld := array.NewRecordBuilder(memory.DefaultAllocator, stallSchema)
		defer bld.Release()
		bld.Field(0).(*array.Int64Builder).Append(42)
		return bld.NewRecordBatch(), nil
	}
	select {
	case <-r.b.release:
	case <-ctx.Done():
	}
	return nil, io.EOF
}

// TestOwnerThatDiesBeforeItsAnswerLeavesTheQueryHere: a whole query forwarded to the owner of its
// cache key (always a cacheable read) whose owner dies after accepting it, before any of its
// answer came back, runs on the forwarding worker (ErrRunHere): its client loses nothing. Once
// rows have reached the forwarding worker (and maybe its client) the break is the query's
// error, saying the owner stopped answering: it cannot start over.
func TestOwnerThatDiesBeforeItsAnswerLeavesTheQueryHere(t *testing.T) {
	for _, rowsFirst := range []bool{false, true} {
		b := &stallingBackend{rowsFirst: rowsFirst, started: make(chan struct{}, 1), release: make(chan struct{})}
		w2, advertised := testOwner(testEnv, "w2", "s3cret")
		srv := httptest.NewServer(w2.QueryHandler(b))
		advertised.add(srv.URL)
		w1, err := New(Options{Env: testEnv, Name: "w1", Secret: "s3cret", Client: NewClient(nil),
			Directory: peers{{Name: "w2", Healthy: true, Endpoints: map[string]string{Query: srv.URL}}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		type answer struct {
			rows query.Rows
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			rows, err := w1.Locality().Run(ctx, &query.Request{SQL: "select 42", User: "alice", Protocol: query.ProtocolPostgres},
				"key", func(map[string]string) bool { return true }, 5*time.Second)
			got <- answer{rows, err}
		}()
		<-b.started
		if !rowsFirst {
			// Execute runs once the handler flushed its accepting headers: they are on the
			// wire before the connection ends, as when the owner's process dies.
			srv.CloseClientConnections()
			a := <-got
			if !errors.Is(a.err, proxy.ErrRunHere) {
				t.Errorf("the owner died before its answer: rows %v, %v; want the query run here", a.rows != nil, a.err)
			}
		} else {
			a := <-got
			if a.err != nil {
				t.Fatalf("the owner's first rows: %v", a.err)
			}
			if rec, err := a.rows.Next(ctx); err != nil || rec.NumRows() != 1 {
				t.Fatalf("the first batch: %v", err)
			}
			srv.CloseClientConnections()
			_, err := a.rows.Next(ctx)
			if err == nil || errors.Is(err, proxy.ErrRunHere) || !strings.Contains(err.Error(), "stopped answering") {
				t.Errorf("the owner died after its first rows: %v; want the query's error, the owner stopped answering", err)
			}
			a.rows.Close()
		}
		close(b.release)
		cancel()
		srv.Close()
		if n := b.count.Load(); n != 1 {
			t.Errorf("the owner ran the query %d times", n)
		}
	}
}
