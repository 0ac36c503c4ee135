package pgcopy_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/pgcopy"
	"github.com/queryflux/queryflux/internal/query"
)

// repeated is n copies of b, then end: a client's COPY data streamed without being held here.
func repeated(b byte, n int, end string) io.Reader {
	return io.MultiReader(io.LimitReader(byteSource(b), int64(n)), strings.NewReader(end))
}

type byteSource byte

func (s byteSource) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(s)
	}
	return len(p), nil
}

// wantCode fails t unless err is a query.Error of code whose message says saying.
func wantCode(t *testing.T, what string, err error, code, saying string) {
	t.Helper()
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != code || !strings.Contains(qe.Message, saying) {
		t.Fatalf("%s: %v, want %s saying %q", what, err, code, saying)
	}
}

// A client's COPY data is streamed, but a row is held whole while it is read: a line that
// never ends, a quoted CSV value over many lines and a line of delimiters are refused past
// RowBytesMax and RowFieldsMax instead of growing the daemon's memory for as long as the
// client sends.
func TestRowsBoundedInBytesAndFields(t *testing.T) {
	text := pgcopy.Format{Delim: '\t', Null: `\N`}
	csv := pgcopy.Format{CSV: true, Delim: ',', Quote: '"', Escape: '"'}
	t.Run("a line that does not end", func(t *testing.T) {
		_, err := pgcopy.NewReader(text, repeated('x', pgcopy.RowBytesMax+1<<20, "\n")).Next()
		wantCode(t, "a line past RowBytesMax", err, "54000", "larger than the limit")
	})
	t.Run("a quoted CSV value over many lines", func(t *testing.T) {
		lines := strings.Repeat(strings.Repeat("y", 1023)+"\n", (pgcopy.RowBytesMax>>10)+1024)
		_, err := pgcopy.NewReader(csv, strings.NewReader(`"`+lines+"\"\n")).Next()
		wantCode(t, "a quoted value past RowBytesMax", err, "54000", "larger than the limit")
	})
	for name, f := range map[string]pgcopy.Format{"text": text, "csv": csv} {
		t.Run("delimiters, "+name, func(t *testing.T) {
			_, err := pgcopy.NewReader(f, repeated(f.Delim, pgcopy.RowFieldsMax, "\n")).Next()
			wantCode(t, "a line of more than RowFieldsMax values", err, "22P04", "extra data")
			row, err := pgcopy.NewReader(f, repeated(f.Delim, pgcopy.RowFieldsMax-1, "\n")).Next()
			if err != nil || len(row) != pgcopy.RowFieldsMax {
				t.Fatalf("a line of RowFieldsMax values: %d values, %v", len(row), err)
			}
		})
	}
}

// binaryData is binary COPY data: the header, then tuples as given (raw).
func binaryData(tuples ...[]byte) io.Reader {
	head := append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)
	return io.MultiReader(append([]io.Reader{bytes.NewReader(head)}, func() []io.Reader {
		var rs []io.Reader
		for _, t := range tuples {
			rs = append(rs, bytes.NewReader(t))
		}
		return rs
	}()...)...)
}

func tupleHead(count int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(count)) }
func valueHead(size int32) []byte  { return binary.BigEndian.AppendUint32(nil, uint32(size)) }

// A binary tuple is bounded in bytes all together, not only value by value (32,767 values of
// 64 MiB each), and in values; a value's declared size costs only the bytes that arrive.
func TestBinaryTuplesBounded(t *testing.T) {
	t.Run("values within the limit, a tuple past it", func(t *testing.T) {
		value := make([]byte, 40<<20)
		tuple := append(append(tupleHead(2), valueHead(int32(len(value)))...), value...)
		tuple = append(append(tuple, valueHead(int32(len(value)))...), value...)
		_, err := pgcopy.NewBinaryReader(binaryData(tuple)).Next()
		wantCode(t, "a tuple of two 40 MiB values", err, "54000", "larger than the limit")
	})
	t.Run("too many values", func(t *testing.T) {
		_, err := pgcopy.NewBinaryReader(binaryData(tupleHead(pgcopy.RowFieldsMax + 1))).Next()
		wantCode(t, "a tuple of more than RowFieldsMax values", err, "22P04", "extra data")
	})
	t.Run("a declared size, never sent", func(t *testing.T) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		tuple := append(append(tupleHead(1), valueHead(pgcopy.BinaryValueMax)...), "only this"...)
		_, err := pgcopy.NewBinaryReader(binaryData(tuple)).Next()
		runtime.ReadMemStats(&after)
		wantCode(t, "a value cut short", err, "22P04", "unexpected EOF")
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Fatalf("a value declared of %d bytes, 9 sent, allocated %d bytes", pgcopy.BinaryValueMax, grew)
		}
	})
}
