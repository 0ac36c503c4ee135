package proxy

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// The result cache keeps finished results as Arrow IPC streams. An entry's key holds the
// normalized SQL, the group, the database and schema, the bound arguments, and the group's
// fingerprint (its config and its members' configs), so editing a group or one of its clusters
// stops serving its earlier results while other groups keep theirs.

type cacheEntry struct {
	key     string
	group   string
	data    []byte // Arrow IPC stream
	tag     string
	expires time.Time
}

type resultCache struct {
	maxBytes int64 // the core's bound over every group; 0 means none

	mu         sync.Mutex
	entries    map[string]*list.Element // of *cacheEntry
	lru        *list.List               // front is most recently used
	bytes      int64
	groupBytes map[string]int64
}

func newResultCache(maxBytes int64) *resultCache {
	return &resultCache{maxBytes: maxBytes, entries: map[string]*list.Element{}, lru: list.New(), groupBytes: map[string]int64{}}
}

func (c *resultCache) get(key string, now time.Time) (*cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		c.remove(el)
		return nil, false
	}
	c.lru.MoveToFront(el)
	return e, true
}

// put stores e, then evicts least recently used entries of e's group past groupMax and of any
// group past the core's bound.
func (c *resultCache) put(e *cacheEntry, groupMax int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[e.key]; ok {
		c.remove(el)
	}
	c.entries[e.key] = c.lru.PushFront(e)
	c.bytes += int64(len(e.data))
	c.groupBytes[e.group] += int64(len(e.data))
	for groupMax > 0 && c.groupBytes[e.group] > groupMax {
		el := c.lru.Back()
		for el.Value.(*cacheEntry).group != e.group {
			el = el.Prev()
		}
		c.remove(el)
	}
	for c.maxBytes > 0 && c.bytes > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

func (c *resultCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.entries, e.key)
	c.bytes -= int64(len(e.data))
	c.groupBytes[e.group] -= int64(len(e.data))
	if c.groupBytes[e.group] == 0 {
		delete(c.groupBytes, e.group)
	}
	if c.bytes < 0 || c.groupBytes[e.group] < 0 {
		panic(fmt.Sprintf("proxy: cache size went negative (%d total, %d in group %s) removing an entry",
			c.bytes, c.groupBytes[e.group], e.group))
	}
}

// size returns the entry count and total bytes.
func (c *resultCache) size() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}

// cacheKey returns the key for req in group, or ok=false if its result must not be cached.
func cacheKey(req *query.Request, group string, fingerprint uint64) (string, bool) {
	sql := NormalizeSQL(req.SQL)
	if !cacheableRequest(req) {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%016x\x00%s\x00%s\x00", group, fingerprint, req.Database, req.Schema)
	for _, a := range req.Args {
		fmt.Fprintf(&b, "%T:%v\x00", a, a)
	}
	if len(req.ArgOIDs) > 0 { // the types declared for the values: the result's may follow them
		fmt.Fprintf(&b, "%v\x00", req.ArgOIDs)
	}
	if req.Collation != 0 { // a MySQL client's collation: its results' bytes are in its set
		fmt.Fprintf(&b, "collation %d\x00", req.Collation)
	}
	b.WriteString(sql)
	return b.String(), true
}

// NormalizeSQL collapses whitespace outside quotes and drops a trailing semicolon, so trivially
// reformatted statements share a cache entry. Text inside '...', "..." and `...` is kept as is,
// byte for byte: a latin1 client's text is no UTF-8, and two of its literals must not both read
// as U+FFFD.
func NormalizeSQL(sql string) string {
	var b strings.Builder
	b.Grow(len(sql))
	var quote byte
	space := false
	trimmed := strings.TrimRight(strings.TrimSpace(sql), "; \t\n\r\f")
	for i := 0; i < len(trimmed); i++ {
		r := trimmed[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"' || r == '`':
			quote = r
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f':
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(r)
	}
	return b.String()
}

var (
	// What sqltok's non-deterministic list leaves out: values that depend on the session's user
	// (the cache key has no user), and words that mean the statement writes or locks.
	// Conservative: a match anywhere (even inside a literal) skips the cache.
	uncacheableWord = regexp.MustCompile(`(?i)\b(current_user|session_user|current_role|user|row_count|found_rows|insert|update|delete|merge|into|for\s+update|for\s+share|for\s+no\s+key\s+update|for\s+key\s+share|lock)\b`)
)

// cacheableRequest reports whether req is a single read whose result depends only on the
// data: one SELECT / WITH ... SELECT / VALUES / TABLE statement (a leading
// comment allowed), calling no non-deterministic function (sqltok's list), and none of the
// words above. The word check is deliberately blunt: a false "no" costs a cache miss, a false
// "yes" serves a wrong answer.
func cacheableRequest(req *query.Request) bool {
	stmts := req.Analysis().Statements
	if len(stmts) != 1 || stmts[0].Kind != sqltok.KindSelect || stmts[0].NonDeterministic {
		return false
	}
	return !uncacheableWord.MatchString(NormalizeSQL(stmts[0].Text))
}

// cacheFill tees a streamed result into an IPC buffer, giving up once it passes the entry limit.
type cacheFill struct {
	buf    bytes.Buffer
	w      *ipc.Writer
	limit  int64
	failed bool
}

func newCacheFill(schema *arrow.Schema, limit int64) *cacheFill {
	f := &cacheFill{limit: limit}
	f.w = ipc.NewWriter(&f.buf, ipc.WithSchema(schema))
	return f
}

func (f *cacheFill) write(rec arrow.RecordBatch) {
	if f.failed {
		return
	}
	if err := f.w.Write(rec); err != nil || (f.limit > 0 && int64(f.buf.Len()) > f.limit) {
		f.abandon()
	}
}

func (f *cacheFill) abandon() {
	if !f.failed {
		f.failed = true
		_ = f.w.Close()
		f.buf = bytes.Buffer{}
	}
}

// finish closes the stream and returns its bytes, or nil if the fill was abandoned.
func (f *cacheFill) finish() []byte {
	if f.failed {
		return nil
	}
	f.failed = true
	if err := f.w.Close(); err != nil || (f.limit > 0 && int64(f.buf.Len()) > f.limit) {
		return nil
	}
	return f.buf.Bytes()
}

// cachedRows reads a cache entry back as Rows (a stream counts and reports it). It holds no
// engine and no capacity slot.
type cachedRows struct {
	rdr  *ipc.Reader
	tag  string
	done bool
}

func openCached(e *cacheEntry) (*cachedRows, error) {
	rdr, err := ipc.NewReader(bytes.NewReader(e.data))
	if err != nil {
		return nil, fmt.Errorf("proxy: reading cached result: %w", err)
	}
	return &cachedRows{rdr: rdr, tag: e.tag}, nil
}

func (r *cachedRows) Schema() *arrow.Schema { return r.rdr.Schema() }

func (r *cachedRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.rdr.Next() {
		return r.rdr.RecordBatch(), nil
	}
	if err := r.rdr.Err(); err != nil && err != io.EOF {
		return nil, err
	}
	r.done = true
	return nil, io.EOF
}

func (r *cachedRows) Tag() string {
	if r.done {
		return r.tag
	}
	return ""
}

func (r *cachedRows) Close() error {
	r.rdr.Release()
	return nil
}
