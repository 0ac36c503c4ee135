package engine

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Holdable is a result that can be read to its end into memory part-way through (Hold), after
// which its source is closed and Next hands out what was read. A DuckDB connection streams one
// result at a time, so a result left open while its connection runs something else is held
// first; a WITH HOLD cursor outlives the transaction (and connection) it was declared in.
type Holdable struct {
	query.Rows
	holding bool                // the rest of the rows are in held (or err)
	held    []arrow.RecordBatch // each retained; handed out in order
	bytes   int64               // of held
	err     error               // what ended the read ahead, given after the held rows
	cur     arrow.RecordBatch   // the batch Next returned last: the source's until held, then ours
	closed  bool
}

// NewHoldable wraps rows; nothing is read until Next or Hold.
func NewHoldable(rows query.Rows) *Holdable { return &Holdable{Rows: rows} }

// HeldBytes is what Hold read into memory.
func (r *Holdable) HeldBytes() int64 { return r.bytes }

// Held reports whether the rows have been read into memory.
func (r *Holdable) Held() bool { return r.holding }

// Hold reads the rows not yet read into memory and closes the source. bytesMax bounds what
// is held (0: no bound); past it Hold stops, closes the source and returns an error, which
// Next also returns after the rows that were held. Holding twice does nothing.
func (r *Holdable) Hold(ctx context.Context, bytesMax int64) error {
	if r.holding || r.closed {
		return nil
	}
	r.holding = true
	if r.cur != nil {
		r.cur.Retain() // the reader may still be using it; the source releases it at its next Next
	}
	for {
		b, err := r.Rows.Next(ctx)
		if err != nil {
			if err != io.EOF {
				r.err = err
			}
			break
		}
		b.Retain() // the source releases b at its next Next
		r.held = append(r.held, b)
		r.bytes += BatchBytes(b)
		if bytesMax > 0 && r.bytes > bytesMax {
			r.err = &query.Error{Code: sqlstate.ProgramLimitExceeded, Message: fmt.Sprintf("the rest of the result is more than %d bytes, the most queryflux holds in memory for it", bytesMax)}
			break
		}
	}
	_ = r.Rows.Close()
	return r.err
}

func (r *Holdable) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if !r.holding {
		b, err := r.Rows.Next(ctx)
		r.cur = b
		return b, err
	}
	r.release()
	if r.closed {
		return nil, io.EOF
	}
	if len(r.held) == 0 {
		if err := r.err; err != nil {
			r.err = nil
			return nil, err
		}
		return nil, io.EOF
	}
	r.cur, r.held = r.held[0], r.held[1:]
	return r.cur, nil
}

func (r *Holdable) release() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *Holdable) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if !r.holding {
		r.cur = nil
		return r.Rows.Close()
	}
	r.release()
	for _, b := range r.held {
		b.Release()
	}
	r.held = nil
	return nil // the source was closed when the rows were held
}
