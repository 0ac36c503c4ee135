package controlplane

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

// rereadBody reads as io.MultiReader(bytes.NewReader(read), rest) does, read by read: the
// bytes read ahead, then the rest of the body, then EOF for good; and an error of the rest
// comes through.
func TestRereadBodyIsAMultiReader(t *testing.T) {
	boom := errors.New("boom")
	rapid.Check(t, func(t *rapid.T) {
		read := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "read")
		rest := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "rest")
		restErr := rapid.SampledFrom([]error{nil, boom}).Draw(t, "restErr")
		noRest := rapid.Bool().Draw(t, "noRest")
		bufs := rapid.SliceOfN(rapid.IntRange(0, 64), 1, 40).Draw(t, "bufs")
		mkRest := func() io.Reader {
			var r io.Reader = bytes.NewReader(rest)
			if restErr != nil {
				r = io.MultiReader(r, iotest.ErrReader(restErr))
			}
			return iotest.HalfReader(r)
		}
		var want, got io.Reader
		if noRest {
			want = io.MultiReader(bytes.NewReader(read))
			rb := &rereadBody{}
			rb.read.Reset(read)
			got = rb
		} else {
			want = io.MultiReader(bytes.NewReader(read), mkRest())
			rb := &rereadBody{rest: mkRest()}
			rb.read.Reset(read)
			got = rb
		}
		for i, n := range append(bufs, 512, 512) {
			wp, gp := make([]byte, n), make([]byte, n)
			wn, werr := want.Read(wp)
			gn, gerr := got.Read(gp)
			if wn != gn || !bytes.Equal(wp[:wn], gp[:gn]) || !errors.Is(gerr, werr) || (gerr == nil) != (werr == nil) {
				t.Fatalf("read %d of %d bytes: got %d, %v; MultiReader %d, %v", i, n, gn, gerr, wn, werr)
			}
		}
	})
}
