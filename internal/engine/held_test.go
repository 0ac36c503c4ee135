package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// TestBatchBytesCountsDictionaries: a dictionary-encoded column's values live in its
// dictionary, not in its buffers (the indices): BatchBytes counts them, so a held result's
// bound sees them. (held.go counted the indices only: 8 rows of a 4,000-byte value were 36
// bytes to it (the indices and validity), and Hold kept them under a 1,000-byte bound.)
func TestBatchBytesCountsDictionaries(t *testing.T) {
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: dictType}}, nil)
	long := strings.Repeat("x", 4000)
	rows := func() query.Rows {
		filled := false
		return engine.NewStream(schema, func(_ context.Context, b *engine.BatchBuilder) (bool, error) {
			if filled {
				return false, nil
			}
			filled = true
			for range 8 {
				if err := b.Field(0).(*array.BinaryDictionaryBuilder).AppendString(long); err != nil {
					return false, err
				}
				b.EndRow()
			}
			return false, nil
		}, func() string { return "SELECT 8" }, func() error { return nil })
	}

	r := rows()
	b, err := r.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := engine.BatchBytes(b); n < int64(len(long)) {
		t.Errorf("BatchBytes of 8 rows of one %d-byte value = %d, want the dictionary's value counted", len(long), n)
	}
	r.Close()

	h := engine.NewHoldable(rows())
	defer h.Close()
	err = h.Hold(context.Background(), 1000)
	if qe := (*query.Error)(nil); !errors.As(err, &qe) || qe.Code != sqlstate.ProgramLimitExceeded {
		t.Errorf("Hold of a %d-byte dictionary under a 1,000-byte bound: %v, want %s", len(long), err, sqlstate.ProgramLimitExceeded)
	}
}
