package engine

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/big"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BatchRowsMax is how many rows an engine puts in one record batch, so a large result streams
// in bounded pieces and is never held whole.
const BatchRowsMax = 1024

// BatchBuilder accumulates rows for one schema and cuts them into record batches.
type BatchBuilder struct {
	rb   *array.RecordBuilder
	rows int
}

// NewBatchBuilder returns a builder for schema.
func NewBatchBuilder(schema *arrow.Schema) *BatchBuilder {
	return &BatchBuilder{rb: array.NewRecordBuilder(memory.DefaultAllocator, schema)}
}

// Field returns column i's builder, for engines that append typed values directly.
func (b *BatchBuilder) Field(i int) array.Builder { return b.rb.Field(i) }

// EndRow counts one complete row (every column appended once).
func (b *BatchBuilder) EndRow() { b.rows++ }

// Rows is the number of rows since the last batch.
func (b *BatchBuilder) Rows() int { return b.rows }

// Full says the pending batch reached BatchRowsMax rows.
func (b *BatchBuilder) Full() bool { return b.rows >= BatchRowsMax }

// NewBatch returns the pending rows as a batch (the caller releases it) and starts a new one.
func (b *BatchBuilder) NewBatch() arrow.RecordBatch {
	rec := b.rb.NewRecordBatch()
	if rec.NumRows() != int64(b.rows) {
		panic(fmt.Sprintf("engine: batch has %d rows, builder counted %d", rec.NumRows(), b.rows))
	}
	b.rows = 0
	return rec
}

// Release frees the builder.
func (b *BatchBuilder) Release() { b.rb.Release() }

// Append appends the Go value v (nil for NULL) to column col, converting it to the column's
// Arrow type. It accepts the values database/sql drivers and pgx produce.
func (b *BatchBuilder) Append(col int, v any) error {
	return AppendValue(b.rb.Field(col), v)
}

// AppendValue appends v to bld, converting it to bld's type; nil appends NULL.
func AppendValue(bld array.Builder, v any) error {
	if v == nil {
		bld.AppendNull()
		return nil
	}
	switch bb := bld.(type) {
	case *array.NullBuilder:
		bb.AppendNull()
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return typeErr(bld, v)
		}
		bb.Append(x)
	case *array.Int8Builder:
		x, ok := toInt64(v)
		if !ok || x < math.MinInt8 || x > math.MaxInt8 {
			return typeErr(bld, v)
		}
		bb.Append(int8(x))
	case *array.Int16Builder:
		x, ok := toInt64(v)
		if !ok || x < math.MinInt16 || x > math.MaxInt16 {
			return typeErr(bld, v)
		}
		bb.Append(int16(x))
	case *array.Int32Builder:
		x, ok := toInt64(v)
		if !ok || x < math.MinInt32 || x > math.MaxInt32 {
			return typeErr(bld, v)
		}
		bb.Append(int32(x))
	case *array.Int64Builder:
		x, ok := toInt64(v)
		if !ok {
			return typeErr(bld, v)
		}
		bb.Append(x)
	case *array.Uint8Builder:
		x, ok := toInt64(v)
		if !ok || x < 0 || x > math.MaxUint8 {
			return typeErr(bld, v)
		}
		bb.Append(uint8(x))
	case *array.Uint16Builder:
		x, ok := toInt64(v)
		if !ok || x < 0 || x > math.MaxUint16 {
			return typeErr(bld, v)
		}
		bb.Append(uint16(x))
	case *array.Uint32Builder:
		x, ok := toInt64(v)
		if !ok || x < 0 || x > math.MaxUint32 {
			return typeErr(bld, v)
		}
		bb.Append(uint32(x))
	case *array.Uint64Builder:
		if u, ok := v.(uint64); ok {
			bb.Append(u)
			return nil
		}
		x, ok := toInt64(v)
		if !ok || x < 0 {
			return typeErr(bld, v)
		}
		bb.Append(uint64(x))
	case *array.Float32Builder:
		x, ok := toFloat64(v)
		if !ok {
			return typeErr(bld, v)
		}
		bb.Append(float32(x))
	case *array.Float64Builder:
		x, ok := toFloat64(v)
		if !ok {
			return typeErr(bld, v)
		}
		bb.Append(x)
	case *array.StringBuilder:
		bb.Append(toText(v))
	case *array.LargeStringBuilder:
		bb.Append(toText(v))
	case *array.BinaryBuilder:
		switch x := v.(type) {
		case []byte:
			bb.Append(x)
		case string:
			bb.AppendString(x)
		default:
			return typeErr(bld, v)
		}
	case *array.FixedSizeBinaryBuilder:
		switch x := v.(type) {
		case []byte:
			bb.Append(x)
		case [16]byte:
			bb.Append(x[:])
		default:
			return typeErr(bld, v)
		}
	case *array.Date32Builder:
		t, ok := v.(time.Time)
		if !ok {
			return typeErr(bld, v)
		}
		bb.Append(arrow.Date32FromTime(t))
	case *array.Time64Builder:
		switch x := v.(type) {
		case time.Time:
			h, m, s := x.Clock()
			d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(x.Nanosecond())
			bb.Append(arrow.Time64(d / time.Microsecond))
		case time.Duration:
			bb.Append(arrow.Time64(x / time.Microsecond))
		default:
			return typeErr(bld, v)
		}
	case *array.TimestampBuilder:
		t, ok := v.(time.Time)
		if !ok {
			return typeErr(bld, v)
		}
		bb.Append(arrow.Timestamp(t.UnixMicro()))
	case *array.Decimal128Builder:
		dt := bb.Type().(*arrow.Decimal128Type)
		if b, ok := v.(*big.Int); ok && dt.Scale == 0 && b.BitLen() < 128 {
			bb.Append(decimal128.FromBigInt(b)) // a HUGEINT: every value fits in 128 bits
			return nil
		}
		n, err := decimal128.FromString(toText(v), dt.Precision, dt.Scale)
		if err != nil {
			return fmt.Errorf("engine: decimal(%d,%d) value %q: %w", dt.Precision, dt.Scale, toText(v), err)
		}
		bb.Append(n)
	default:
		return fmt.Errorf("engine: no conversion to Arrow %s", bld.Type())
	}
	return nil
}

func typeErr(bld array.Builder, v any) error {
	return fmt.Errorf("engine: cannot store %T value in an Arrow %s column", v, bld.Type())
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func toFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := toInt64(v); ok {
		return float64(i), true
	}
	return 0, false
}

func toText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// Stream adapts a row source to query.Rows: each Next asks fill for up to BatchRowsMax rows and
// hands them out as one batch. Only one batch is alive at a time.
type Stream struct {
	schema  *arrow.Schema
	builder *BatchBuilder
	pool    *BuilderPool // where builder goes back on Close, if any
	src     StreamSource // NewSourceStream's, in place of fill, tag and close
	fill    func(ctx context.Context, b *BatchBuilder) (more bool, err error)
	tag     func() string
	close   func() error
	cur     arrow.RecordBatch
	done    bool
	failed  bool // fill failed: the builder may hold part of a row
	closed  bool
}

// NewStream returns rows over schema. fill appends rows to b until b.Full() or the source ends
// (then it returns more=false). tag gives the command tag once drained; close frees the source.
func NewStream(schema *arrow.Schema, fill func(ctx context.Context, b *BatchBuilder) (bool, error), tag func() string, close func() error) *Stream {
	return &Stream{schema: schema, builder: NewBatchBuilder(schema), fill: fill, tag: tag, close: close}
}

// StreamSource is what a stream of NewSourceStream reads: NewStream's fill, tag and close as
// the methods of one value (one allocation of its engine's per result, not three closures).
type StreamSource interface {
	Fill(ctx context.Context, b *BatchBuilder) (more bool, err error)
	Tag() string
	Close() error
}

// NewSourceStream is NewStream of src over pool's schema, with a builder of pool, which goes
// back to it on Close unless a fill failed (it may then hold part of a row).
func NewSourceStream(pool *BuilderPool, src StreamSource) *Stream {
	return &Stream{schema: pool.schema, builder: pool.get(), pool: pool, src: src}
}

// BuilderPool keeps the batch builders of one schema between the results of that shape: a
// record builder and its columns' builders were six allocations of every statement (a SELECT
// 1's through pgengine: RESULTS.md, "Trino HTTP ... (#22, session 31, trino)"). A builder is
// empty between batches (NewBatch hands its buffers to the batch), so a result that ended,
// or was closed between batches, leaves nothing in it for the next.
type BuilderPool struct {
	schema *arrow.Schema
	mu     sync.Mutex
	kept   []*BatchBuilder // at most builderPoolMax
}

// builderPoolMax bounds the builders a pool keeps: as many as results of its shape were open
// at once, up to this; an empty builder is a few hundred bytes.
const builderPoolMax = 16

// NewBuilderPool returns a pool of builders for schema.
func NewBuilderPool(schema *arrow.Schema) *BuilderPool { return &BuilderPool{schema: schema} }

// Schema is the pool's schema.
func (p *BuilderPool) Schema() *arrow.Schema { return p.schema }

func (p *BuilderPool) get() *BatchBuilder {
	p.mu.Lock()
	if n := len(p.kept); n > 0 {
		b := p.kept[n-1]
		p.kept[n-1] = nil
		p.kept = p.kept[:n-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return NewBatchBuilder(p.schema)
}

// put keeps b, an empty builder of the pool's schema, unless the pool is full.
func (p *BuilderPool) put(b *BatchBuilder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.kept) < builderPoolMax {
		p.kept = append(p.kept, b)
		return
	}
	b.Release()
}

func (s *Stream) Schema() *arrow.Schema { return s.schema }

func (s *Stream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	s.releaseCurrent()
	if s.done || s.closed {
		return nil, io.EOF
	}
	var more bool
	var err error
	if s.src != nil {
		more, err = s.src.Fill(ctx, s.builder)
	} else {
		more, err = s.fill(ctx, s.builder)
	}
	if err != nil {
		s.done, s.failed = true, true
		return nil, err
	}
	if !more {
		s.done = true
		if s.builder.Rows() == 0 {
			return nil, io.EOF
		}
	}
	s.cur = s.builder.NewBatch()
	return s.cur, nil
}

func (s *Stream) Tag() string {
	if s.src != nil {
		return s.src.Tag()
	}
	return s.tag()
}

func (s *Stream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.releaseCurrent()
	if s.pool != nil && !s.failed && s.builder.Rows() == 0 {
		s.pool.put(s.builder) // a builder keeps no buffers between batches: nothing to free
	} else {
		s.builder.Release()
	}
	s.builder = nil
	if s.src != nil {
		return s.src.Close()
	}
	return s.close()
}

func (s *Stream) releaseCurrent() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
}

// TagRows is the result of a statement without a result set: no schema, only a command tag.
type TagRows string

func (t TagRows) Schema() *arrow.Schema                           { return nil }
func (t TagRows) Next(context.Context) (arrow.RecordBatch, error) { return nil, io.EOF }
func (t TagRows) Tag() string                                     { return string(t) }
func (t TagRows) Close() error                                    { return nil }

// DecimalText is row i of a decimal column as text with all its scale digits ("12.50", not
// Arrow's "12.5"); ok is false for other types.
func DecimalText(a arrow.Array, i int) (string, bool) {
	t, ok := a.DataType().(arrow.DecimalType)
	if !ok {
		return "", false
	}
	scale := t.GetScale()
	switch a := a.(type) {
	case *array.Decimal32:
		return a.Value(i).ToString(scale), true
	case *array.Decimal64:
		return a.Value(i).ToString(scale), true
	case *array.Decimal128:
		return a.Value(i).ToString(scale), true
	case *array.Decimal256:
		return a.Value(i).ToString(scale), true
	}
	return "", false
}

// BatchBytes is the size of a batch's Arrow buffers, its columns' children and dictionaries
// included: what a result holds in memory (a held result's bound, a query's history bytes).
// arrow/util has the same, but pulls in protobuf reflection.
func BatchBytes(b arrow.RecordBatch) int64 {
	var n int64
	for _, col := range b.Columns() {
		n += dataBytes(col.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, buf := range d.Buffers() {
		if buf != nil {
			n += int64(buf.Len())
		}
	}
	for _, child := range d.Children() {
		n += dataBytes(child)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		n += dataBytes(d.Dictionary())
	}
	return n
}
