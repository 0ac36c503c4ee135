package engine

import (
	"context"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/query"
)

// PlainSource is a StreamSource whose rows can also be read as plain values
// (query.PlainRows), without Arrow batches.
type PlainSource interface {
	StreamSource
	// Plain reports whether every column of the result has plain values.
	Plain() bool
	// FillPlain returns up to max of the next rows as plain values, and whether more may
	// come after them.
	FillPlain(ctx context.Context, max int) (rows [][]any, more bool, err error)
}

var _ query.PlainRows = (*Stream)(nil)

// Plain reports whether the stream's source hands its rows as plain values (PlainSource).
func (s *Stream) Plain() bool {
	p, ok := s.src.(PlainSource)
	return ok && p.Plain()
}

// NextPlain is Next as plain values: up to BatchRowsMax rows, or io.EOF at the end. Only for a
// stream whose Plain is true, read by NextPlain alone.
func (s *Stream) NextPlain(ctx context.Context) ([][]any, error) {
	if s.done || s.closed {
		return nil, io.EOF
	}
	rows, more, err := s.src.(PlainSource).FillPlain(ctx, BatchRowsMax)
	if err != nil {
		s.done, s.failed = true, true
		return nil, err
	}
	if !more {
		s.done = true
		if len(rows) == 0 {
			return nil, io.EOF
		}
	}
	return rows, nil
}

// PlainField reports whether a column of field f has plain values (query.PlainRows): a
// boolean, a 16-, 32- or 64-bit integer, or a string.
func PlainField(f arrow.Field) bool {
	switch f.Type.ID() {
	case arrow.BOOL, arrow.INT16, arrow.INT32, arrow.INT64, arrow.STRING:
		return true
	}
	return false
}

// PlainBytes is what rows of plain values count as in a query's bytes (its guardrail, its
// history record): their values' sizes as an Arrow batch holds them, without its buffers'
// padding and validity bitmaps.
func PlainBytes(rows [][]any) int64 {
	var n int64
	for _, row := range rows {
		for _, v := range row {
			switch v := v.(type) {
			case bool:
				n++
			case int16:
				n += 2
			case int32:
				n += 4
			case int64:
				n += 8
			case string:
				n += int64(len(v)) + 4 // and its offset
			}
		}
	}
	return n
}
