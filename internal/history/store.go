package history

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Store keeps records. Insert is idempotent by QueryID: a record whose QueryID the store already
// holds is skipped, so a retried batch stores nothing twice.
type Store interface {
	// Insert stores the records it does not have yet and returns how many were new.
	Insert(ctx context.Context, recs []Record) (inserted int, err error)
	// Query returns the records matching f, newest first (StartedAt, then QueryID, descending).
	Query(ctx context.Context, f Filter) (Page, error)
}

// Paging limits of Query.
const (
	QueryLimitDefault = 100
	QueryLimitMax     = 1000
)

// Filter selects records. Empty fields match everything; Since is inclusive, Until exclusive,
// both on StartedAt. Before is the Next cursor of a previous page.
type Filter struct {
	Worker  string
	User    string
	Group   string
	Cluster string
	Status  Status
	Since   time.Time
	Until   time.Time
	Limit   int // 0 means QueryLimitDefault; more than QueryLimitMax is capped
	Before  string
}

// EffectiveLimit is Limit with the default and the cap applied.
func (f Filter) EffectiveLimit() int {
	switch {
	case f.Limit <= 0:
		return QueryLimitDefault
	case f.Limit > QueryLimitMax:
		return QueryLimitMax
	}
	return f.Limit
}

// Page is one page of a Query. Next is the cursor for the following (older) page; "" at the end.
type Page struct {
	Records []Record `json:"records"`
	Next    string   `json:"next,omitempty"`
}

// Cursor is a position in the newest-first order: records strictly older than it come next.
type Cursor struct {
	StartedAt time.Time
	QueryID   string
}

// Encode makes the opaque text form of c.
func (c Cursor) Encode() string {
	raw := strconv.FormatInt(c.StartedAt.UnixMicro(), 10) + ":" + c.QueryID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseCursor reads a cursor made by Encode.
func ParseCursor(s string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, fmt.Errorf("history: bad cursor: %v", err)
	}
	micros, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || id == "" {
		return Cursor{}, fmt.Errorf("history: bad cursor %q", s)
	}
	return Cursor{StartedAt: time.UnixMicro(n).UTC(), QueryID: id}, nil
}

// CursorOf is the cursor just after r.
func CursorOf(r Record) Cursor { return Cursor{StartedAt: r.StartedAt, QueryID: r.QueryID} }

// newer orders records newest first.
func newer(a, b Record) bool {
	if !a.StartedAt.Equal(b.StartedAt) {
		return a.StartedAt.After(b.StartedAt)
	}
	return a.QueryID > b.QueryID
}

// Matches reports whether r passes f's field and time filters (not the cursor).
func (f Filter) Matches(r Record) bool {
	return (f.Worker == "" || r.Worker == f.Worker) &&
		(f.User == "" || r.User == f.User) &&
		(f.Group == "" || r.Group == f.Group) &&
		(f.Cluster == "" || r.Cluster == f.Cluster) &&
		(f.Status == "" || r.Status == f.Status) &&
		(f.Since.IsZero() || !r.StartedAt.Before(f.Since)) &&
		(f.Until.IsZero() || r.StartedAt.Before(f.Until))
}

// Memory is a bounded in-memory Store for the standalone role, tests and the simulator. When
// full it forgets the oldest-inserted records (after which their ids may be stored again).
type Memory struct {
	mu      sync.Mutex
	max     int
	records []Record        // insertion order; a ring once full
	head    int             // index of the oldest record once len(records) == max
	ids     map[string]bool // QueryIDs held
}

var _ Store = (*Memory)(nil)

// NewMemory returns a Memory holding at most maxRecords records.
func NewMemory(maxRecords int) *Memory {
	if maxRecords <= 0 {
		panic(fmt.Sprintf("history: NewMemory(%d): maxRecords must be > 0", maxRecords))
	}
	return &Memory{max: maxRecords, ids: make(map[string]bool)}
}

// Insert implements Store.
func (m *Memory) Insert(_ context.Context, recs []Record) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	inserted := 0
	for _, r := range recs {
		if m.ids[r.QueryID] {
			continue
		}
		m.ids[r.QueryID] = true
		inserted++
		if len(m.records) < m.max {
			m.records = append(m.records, r.Canonical())
			continue
		}
		delete(m.ids, m.records[m.head].QueryID)
		m.records[m.head] = r.Canonical()
		m.head = (m.head + 1) % m.max
	}
	if len(m.ids) != len(m.records) {
		panic(fmt.Sprintf("history: memory store holds %d ids for %d records", len(m.ids), len(m.records)))
	}
	return inserted, nil
}

// Query implements Store.
func (m *Memory) Query(_ context.Context, f Filter) (Page, error) {
	var cur *Cursor
	if f.Before != "" {
		c, err := ParseCursor(f.Before)
		if err != nil {
			return Page{}, err
		}
		cur = &c
	}
	// Postgres holds microseconds: compare at that precision so both stores answer alike.
	f.Since, f.Until = f.Since.Truncate(time.Microsecond), f.Until.Truncate(time.Microsecond)
	m.mu.Lock()
	var hits []Record
	for _, r := range m.records {
		if f.Matches(r) && (cur == nil || newer(Record{StartedAt: cur.StartedAt, QueryID: cur.QueryID}, r)) {
			hits = append(hits, r)
		}
	}
	m.mu.Unlock()
	sort.Slice(hits, func(i, j int) bool { return newer(hits[i], hits[j]) })
	return pageOf(hits, f.EffectiveLimit()), nil
}

// Len is the number of records held.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.records)
}

// pageOf cuts a newest-first list to limit records and sets the cursor when more remain.
func pageOf(sorted []Record, limit int) Page {
	p := Page{Records: sorted}
	if len(sorted) > limit {
		p.Records = sorted[:limit]
		p.Next = CursorOf(p.Records[limit-1]).Encode()
	}
	if p.Records == nil {
		p.Records = []Record{}
	}
	for i := range p.Records {
		p.Records[i].RoutingTrace = append([]string(nil), p.Records[i].RoutingTrace...)
	}
	return p
}
