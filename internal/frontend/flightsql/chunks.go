package flightsql

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// chunkBytesMax bounds the data of one DoGet message. gRPC clients refuse a received message
// over 4 MiB unless told otherwise (arrow-go's, and Java's and Python's Flight clients), and an
// engine's batch of engine.BatchRowsMax rows of 10 KB each is 10 MB: such a batch goes out as
// slices of whole rows (the IPC writer sends only a slice's own bytes).
const chunkBytesMax = 1 << 20

// fixedRowBytes is what a value counts besides its variable-length bytes (fixed-width values,
// offsets, validity), for the estimate of a row's size.
const fixedRowBytes = 16

// splitBatch returns rec as slices of whole rows, each under chunkBytesMax (a row larger than
// that alone), or rec itself when it is under the bound; the slices take over rec's reference.
// Only a batch whose strings and binaries hold more than the bound costs more than a pass over
// its columns.
func splitBatch(rec arrow.RecordBatch) []arrow.RecordBatch {
	n := int(rec.NumRows())
	cols := rec.Columns()
	size := n * len(cols) * fixedRowBytes
	var wide []array.BinaryLike
	for _, c := range cols {
		if b, ok := c.(array.BinaryLike); ok {
			size += len(b.ValueBytes())
			wide = append(wide, b)
		}
	}
	if size <= chunkBytesMax || n <= 1 {
		return []arrow.RecordBatch{rec}
	}
	var out []arrow.RecordBatch
	start, bytes := 0, 0
	for r := range n {
		row := len(cols) * fixedRowBytes
		for _, b := range wide {
			row += b.ValueLen(r)
		}
		if r > start && bytes+row > chunkBytesMax {
			out = append(out, rec.NewSlice(int64(start), int64(r)))
			start, bytes = r, 0
		}
		bytes += row
	}
	out = append(out, rec.NewSlice(int64(start), int64(n)))
	rec.Release()
	return out
}
