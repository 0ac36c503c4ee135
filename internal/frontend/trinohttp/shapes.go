package trinohttp

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/frontend/structured"
)

// shape is what the pages of a result of one schema need: the converter of its batches, its
// Trino columns and their JSON. None of them changes once built, so queries share them.
type shape struct {
	conv        *structured.Converter
	columns     []Column
	columnsJSON []byte
}

func newShape(schema *arrow.Schema) *shape {
	conv := structured.NewConverter(schema)
	cols := columnsFor(conv.Schema())
	return &shape{conv: conv, columns: cols, columnsJSON: encodeColumns(cols)}
}

// shapes keeps the shapes of the schemas seen, by schema: an engine that hands the same schema
// to every run of a statement (pgengine does) has its queries' shapes built once, not per query.
type shapes struct {
	mu sync.Mutex
	m  map[*arrow.Schema]*shape
}

// shapesMax bounds the shapes kept; past it the cache starts again empty.
const shapesMax = 512

func (c *shapes) of(schema *arrow.Schema) *shape {
	c.mu.Lock()
	s := c.m[schema]
	c.mu.Unlock()
	if s != nil {
		return s
	}
	s = newShape(schema)
	c.mu.Lock()
	if len(c.m) >= shapesMax || c.m == nil {
		c.m = make(map[*arrow.Schema]*shape)
	}
	c.m[schema] = s
	c.mu.Unlock()
	return s
}
