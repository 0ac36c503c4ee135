package workerapi

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

// chunkReader returns its data in reads of the sizes it is given (cycled), then err (io.EOF for a
// clean end), optionally with the last bytes: the shapes a body's reads take.
type chunkReader struct {
	data      []byte
	sizes     []int
	i         int
	err       error
	errWithN  bool // the last read returns its bytes and err together
	readsDone int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	r.readsDone++
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := min(len(p), len(r.data), max(r.sizes[r.i%len(r.sizes)], 1))
	r.i++
	copy(p, r.data[:n])
	r.data = r.data[n:]
	if len(r.data) == 0 && r.errWithN {
		return n, r.err
	}
	return n, nil
}

// ReadAtMost reads what ReadAllHint reads through an io.LimitReader of the same limit: the same
// bytes and the same error, whatever the hint (absent, short, long, wrong), the limit and the
// shape of the body's reads.
func TestReadAtMostIsReadAllHintOfALimitReader(t *testing.T) {
	boom := errors.New("boom")
	rapid.Check(t, func(t *rapid.T) {
		data := rapid.SliceOfN(rapid.Byte(), 0, 3000).Draw(t, "data")
		sizes := rapid.SliceOfN(rapid.IntRange(1, 700), 1, 5).Draw(t, "sizes")
		limit := rapid.Int64Range(0, 3200).Draw(t, "limit")
		hint := rapid.Int64Range(-1, 3200).Draw(t, "hint")
		err := rapid.SampledFrom([]error{io.EOF, boom}).Draw(t, "err")
		withN := rapid.Bool().Draw(t, "errWithN")
		mk := func() *chunkReader {
			return &chunkReader{data: bytes.Clone(data), sizes: sizes, err: err, errWithN: withN}
		}
		want, wantErr := ReadAllHint(io.LimitReader(mk(), limit), hint, limit)
		got, gotErr := ReadAtMost(mk(), hint, limit)
		if !bytes.Equal(got, want) || !errors.Is(gotErr, wantErr) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("ReadAtMost = %d bytes, %v; ReadAllHint(LimitReader) = %d bytes, %v", len(got), gotErr, len(want), wantErr)
		}
	})
}

// A body longer than the limit is cut at the limit, and the body is not read past it.
func TestReadAtMostStopsAtTheLimit(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100)
	for _, hint := range []int64{-1, 0, 10, 40, 100, 1000} {
		r := &chunkReader{data: bytes.Clone(body), sizes: []int{7}, err: io.EOF}
		got, err := ReadAtMost(r, hint, 41)
		if err != nil || len(got) != 41 {
			t.Fatalf("hint %d: %d bytes, %v; want 41", hint, len(got), err)
		}
		if left := len(r.data); left != 100-41 {
			t.Fatalf("hint %d: %d bytes read from the body, want 41", hint, 100-left)
		}
	}
	got, err := ReadAtMost(iotest.OneByteReader(bytes.NewReader(body)), 100, 1000)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("one byte at a time: %d bytes, %v", len(got), err)
	}
}
