package pgcopy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/queryflux/queryflux/internal/sqlstate"
)

// BinaryValueMax bounds one value of binary COPY data, which a client declares before sending it.
const BinaryValueMax = 64 << 20

// BinaryReader reads the tuples of binary COPY data.
type BinaryReader struct {
	in     *bufio.Reader
	header bool
	tuple  int
	values [][]byte
	buf    []byte
}

// NewBinaryReader reads binary COPY data from in.
func NewBinaryReader(in io.Reader) *BinaryReader {
	return &BinaryReader{in: bufio.NewReaderSize(in, 64<<10)}
}

// Tuple is the number of the tuple last read, for errors.
func (r *BinaryReader) Tuple() int { return r.tuple }

// Next returns the next tuple's values (nil for NULL; valid until the next call), or io.EOF
// after the trailer.
func (r *BinaryReader) Next() ([][]byte, error) {
	if !r.header {
		if err := r.readHeader(); err != nil {
			return nil, err
		}
		r.header = true
	}
	var n [2]byte
	if _, err := io.ReadFull(r.in, n[:]); err == io.EOF {
		return nil, io.EOF // the data may end without its trailer, as PostgreSQL reads it
	} else if err != nil {
		return nil, r.short(err)
	}
	count := int16(binary.BigEndian.Uint16(n[:]))
	if count == -1 {
		return nil, io.EOF
	}
	r.tuple++
	if count > RowFieldsMax {
		return nil, tooManyFields(fmt.Sprintf("tuple %d", r.tuple))
	}
	r.values, r.buf = r.values[:0], r.buf[:0]
	var ends []int
	for range int(count) {
		var l [4]byte
		if _, err := io.ReadFull(r.in, l[:]); err != nil {
			return nil, r.short(err)
		}
		size := int32(binary.BigEndian.Uint32(l[:]))
		if size < 0 {
			ends = append(ends, -1)
			continue
		}
		if size > BinaryValueMax {
			return nil, copyError(sqlstate.ProgramLimitExceeded, fmt.Sprintf("COPY tuple %d: a value of %d bytes is larger than the limit of %d", r.tuple, size, BinaryValueMax))
		}
		if len(r.buf)+int(size) > RowBytesMax {
			return nil, rowTooLarge(fmt.Sprintf("tuple %d", r.tuple))
		}
		if err := r.readValue(int(size)); err != nil {
			return nil, err
		}
		ends = append(ends, len(r.buf))
	}
	start := 0
	for _, end := range ends {
		if end < 0 {
			r.values = append(r.values, nil)
			continue
		}
		r.values = append(r.values, r.buf[start:end:end])
		start = end
	}
	return r.values, nil
}

// valueChunkBytes is the most a value's buffer grows ahead of its bytes: a client declares a
// value's size before sending it, and 4 bytes must not cost BinaryValueMax.
const valueChunkBytes = 64 << 10

// readValue appends a value of size bytes to buf, growing it with what arrives.
func (r *BinaryReader) readValue(size int) error {
	for size > 0 {
		n := min(size, valueChunkBytes)
		start := len(r.buf)
		r.buf = slices.Grow(r.buf, n)[:start+n]
		if _, err := io.ReadFull(r.in, r.buf[start:]); err != nil {
			return r.short(err)
		}
		size -= n
	}
	return nil
}

func (r *BinaryReader) readHeader() error {
	head := make([]byte, len(binarySignature)+8)
	if _, err := io.ReadFull(r.in, head); err != nil {
		return r.short(err)
	}
	if !bytes.Equal(head[:len(binarySignature)], binarySignature) {
		return copyError(sqlstate.BadCopyFileFormat, "COPY file signature not recognized")
	}
	if flags := binary.BigEndian.Uint32(head[len(binarySignature):]); flags&0xffff0000 != 0 {
		return copyError(sqlstate.BadCopyFileFormat, "unrecognized critical flags in COPY file header")
	}
	ext := binary.BigEndian.Uint32(head[len(binarySignature)+4:])
	_, err := io.CopyN(io.Discard, r.in, int64(ext))
	return r.short(err)
}

// short names data that ended inside a header or tuple; other errors (the client's) pass on.
func (r *BinaryReader) short(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return copyError(sqlstate.BadCopyFileFormat, fmt.Sprintf("unexpected EOF in COPY data (tuple %d)", r.tuple+1))
	}
	return err
}
