package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
)

var poolSchema = arrow.NewSchema([]arrow.Field{
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// pooledRun is one result of a pool's shape: its rows, and where it stops early.
type pooledRun struct {
	rows     int
	failAt   int // the row whose second column fails (its first was appended); -1: none
	closeAt  int // close after this many batches were read; -1: read to the end
	batchMax int
}

// run reads r through a stream of pool and returns the values of every batch it was handed,
// as text, and the error that ended it.
func (r pooledRun) run(pool *engine.BuilderPool, id int) ([]string, error) {
	next := 0
	fill := func(_ context.Context, b *engine.BatchBuilder) (bool, error) {
		for b.Rows() < r.batchMax {
			if next == r.rows {
				return false, nil
			}
			b.Field(0).(*array.Int32Builder).Append(int32(id*1000 + next))
			if next == r.failAt {
				return false, errors.New("a column failed")
			}
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint(id, "/", next))
			b.EndRow()
			next++
		}
		return true, nil
	}
	s := engine.NewSourceStream(pool, funcSource(fill))
	defer s.Close()
	var got []string
	for batches := 0; r.closeAt < 0 || batches < r.closeAt; batches++ {
		rec, err := s.Next(context.Background())
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		n, txt := rec.Column(0).(*array.Int32), rec.Column(1).(*array.String)
		if n.Len() != int(rec.NumRows()) || txt.Len() != int(rec.NumRows()) {
			return got, fmt.Errorf("a batch of %d rows has columns of %d and %d", rec.NumRows(), n.Len(), txt.Len())
		}
		for i := range n.Len() {
			got = append(got, fmt.Sprint(n.Value(i), " ", txt.Value(i)))
		}
	}
	return got, nil
}

// Results of one shape take their builders from its pool, one after another: each hands out
// exactly its own rows, whatever the results before it did with theirs (ended, closed between
// batches, or failed in the middle of a row, leaving part of it in its builder).
func TestPooledStreamsHandOutOnlyTheirOwnRows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := engine.NewBuilderPool(poolSchema)
		for id := range rapid.IntRange(1, 12).Draw(t, "results") {
			r := pooledRun{rows: rapid.IntRange(0, 9).Draw(t, "rows"), failAt: -1, closeAt: -1,
				batchMax: rapid.IntRange(1, 4).Draw(t, "batchMax")}
			if r.rows > 0 && rapid.Bool().Draw(t, "fails") {
				r.failAt = rapid.IntRange(0, r.rows-1).Draw(t, "failAt")
			}
			if rapid.Bool().Draw(t, "closedEarly") {
				r.closeAt = rapid.IntRange(0, 3).Draw(t, "closeAt")
			}
			got, err := r.run(pool, id)
			var want []string
			for i := range r.rows {
				if r.failAt >= 0 && i/r.batchMax >= r.failAt/r.batchMax { // the failing row's batch is never handed out
					break
				}
				if r.closeAt >= 0 && i/r.batchMax >= r.closeAt {
					break
				}
				want = append(want, fmt.Sprint(id*1000+i, " ", id, "/", i))
			}
			if (err != nil) != (r.failAt >= 0 && (r.closeAt < 0 || r.failAt/r.batchMax < r.closeAt)) {
				t.Fatalf("result %d (%+v): error %v", id, r, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("result %d (%+v): rows %v, want %v", id, r, got, want)
			}
		}
	})
}

// A result that ended gives its builder back: the next result of its shape makes none (a
// record builder and its columns' builders, six allocations a statement).
func TestPooledStreamReusesItsBuilder(t *testing.T) {
	pool := engine.NewBuilderPool(poolSchema)
	oneRow := pooledRun{rows: 1, failAt: -1, closeAt: -1, batchMax: 4}
	run := func(p *engine.BuilderPool) func() {
		return func() {
			if got, err := oneRow.run(p, 1); err != nil || len(got) != 1 {
				t.Fatalf("got %v, %v", got, err)
			}
		}
	}
	pooled := testing.AllocsPerRun(50, run(pool))
	fresh := testing.AllocsPerRun(50, func() { run(engine.NewBuilderPool(poolSchema))() })
	if pooled > fresh-4 {
		t.Fatalf("a result of a pooled shape allocates %.0f times, one of a new shape %.0f: want at least 4 fewer", pooled, fresh)
	}
}

// funcSource is a StreamSource of a fill function.
type funcSource func(context.Context, *engine.BatchBuilder) (bool, error)

func (f funcSource) Fill(ctx context.Context, b *engine.BatchBuilder) (bool, error) { return f(ctx, b) }
func (f funcSource) Tag() string                                                    { return "SELECT" }
func (f funcSource) Close() error                                                   { return nil }
