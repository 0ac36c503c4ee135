package pgengine

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cespare/xxhash/v2"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/boundedcache"
	"github.com/queryflux/queryflux/internal/engine"
)

// shapes keeps the Arrow schema and decoders of the result shapes an engine has seen, keyed by
// their columns (name, type, modifier, format): a statement run again, as most are, reuses them
// instead of building both per query (schemaFor was a third of the engine's allocations for a
// SELECT 1). Both are read-only once built: the schema is never changed, the decoders keep no
// state, so queries share them.
type shapes struct {
	*boundedcache.Cache[uint64, *shape] // by the hash of shapeKey
}

type shape struct {
	key      string // shapeKey, to tell a hash's collision
	schema   *arrow.Schema
	decoders []decoder
	plain    []plainDecoder      // nil unless every column has plain values
	builders *engine.BuilderPool // the batch builders of the shape's results, between them
}

// shapesMax bounds the shapes kept; past it the cache starts again empty (ad-hoc queries of
// ever-new shapes cost what they did without it).
const shapesMax = 512

func newShapes() shapes { return shapes{boundedcache.New[uint64, *shape](shapesMax)} }

// of returns the shape of fields (schema, decoders, builders), from the cache or built
// (schemaFor), its fields carrying keys (columnkeys.go) where they are not nil.
func (c shapes) of(fields []pgconn.FieldDescription, keys []string) (*shape, error) {
	var buf [256]byte
	key := shapeKey(buf[:0], fields)
	for _, k := range keys {
		key = binary.AppendUvarint(key, uint64(len(k)))
		key = append(key, k...)
	}
	h := xxhash.Sum64(key)
	if s, ok := c.Get(h); ok && s.key == string(key) {
		return s, nil
	}
	schema, decoders, err := schemaFor(fields)
	if err != nil {
		return nil, err
	}
	if keys != nil {
		schema = withColumnKeys(schema, keys)
	}
	// Replaces a colliding shape: a rebuild when both come back, never a wrong shape.
	s := &shape{key: string(key), schema: schema, decoders: decoders, plain: plainDecoders(fields, schema),
		builders: engine.NewBuilderPool(schema)}
	c.Put(h, s)
	return s, nil
}

// shapeKey appends to b what schemaFor reads of fields, unambiguously (each name is preceded by
// its length).
func shapeKey(b []byte, fields []pgconn.FieldDescription) []byte {
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f.Name)))
		b = append(b, f.Name...)
		b = binary.BigEndian.AppendUint32(b, f.DataTypeOID)
		b = binary.BigEndian.AppendUint32(b, uint32(f.TypeModifier))
		b = binary.BigEndian.AppendUint16(b, uint16(f.Format))
	}
	return b
}
