// Package boundedcache is a map of at most a set number of entries, safe for concurrent use, for
// what is dear to build and cheap to keep: a result shape's Arrow schema and decoders, a
// statement's column names. A workload of ever-new keys must not grow it without end.
//
// When a new key finds the cache full, the cache starts again empty. Evicting the least recently
// used entry instead would make every hit a write (a list to reorder) for what the callers do not
// need: keys in use come back after one build each, and a workload of ever-new keys costs what it
// would without a cache.
//
// It touches nothing but its own memory.
package boundedcache

import "sync"

// Cache maps K to V, keeping at most its bound of entries. Its values are shared with every
// caller that gets them: store only values nobody changes.
type Cache[K comparable, V any] struct {
	max int
	mu  sync.Mutex
	m   map[K]V
}

// New returns an empty cache that keeps at most max entries (max is at least 1).
func New[K comparable, V any](max int) *Cache[K, V] {
	if max < 1 {
		panic("boundedcache: a bound below 1")
	}
	return &Cache[K, V]{max: max, m: make(map[K]V)}
}

// Get returns the value kept for k, and whether there is one.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	return v, ok
}

// Put keeps v for k. A new key that finds the cache full empties it first.
func (c *Cache[K, V]) Put(k K, v V) {
	c.mu.Lock()
	if _, kept := c.m[k]; !kept && len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = v
	c.mu.Unlock()
}

// Len is how many entries the cache keeps now.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
