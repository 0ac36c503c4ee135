package history

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Store keeps records. Insert is idempotent by QueryID: a record whose QueryID the store already
// holds under the same worker is skipped, so a retried batch stores nothing twice. A QueryID
// belongs to the worker that stored it first: a record for it from another worker is refused
// (a worker that learns another's query id cannot shadow or replace its record).
type Store interface {
	// Insert stores the records it does not have yet and returns how many were new. Records
	// whose QueryID it holds under another worker are refused: err is then a *ForeignError
	// naming them, and the other records are stored all the same.
	Insert(ctx context.Context, recs []Record) (inserted int, err error)
	// Query returns the records matching f, newest first (StartedAt, then QueryID, descending).
	Query(ctx context.Context, f Filter) (Page, error)
}

// ErrForeignRecord is why Insert refuses a record: its QueryID is held under another worker.
var ErrForeignRecord = errors.New("history: query id already recorded by another worker")

// ForeignError is Insert's error for the records it refused (ErrForeignRecord), by QueryID in
// the order given; it stored the rest of the batch.
type ForeignError struct{ IDs []string }

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%v: %d records refused (first %q)", ErrForeignRecord, len(e.IDs), e.IDs[0])
}

func (e *ForeignError) Unwrap() error { return ErrForeignRecord }

// foreignErr is the error of an Insert that refused ids (nil for none).
func foreignErr(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return &ForeignError{IDs: ids}
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
	mu  sync.Mutex
	max int
	// The records in slots 0..n-1, insertion order, a ring once full (n == max). A slot lives
	// in a chunk of memChunk records, made when the first record reaches it: a store that grew
	// one slice by doubling copied its whole contents at every step (a standalone daemon's
	// 100,000 records, 29 MB, half the bytes it allocated while it filled).
	chunks [][]held
	n      int
	head   int     // slot of the oldest record once n == max
	ids    idIndex // QueryIDs held, to their slots (whose Worker owns the id)
	// stage holds the records insertOne took and has not stored yet, in order (at most
	// stageMax), in their slots' form already, and stageKeys their ids' keys: stored together,
	// their index probes miss the cache side by side (warm) where one record's probes wait for
	// their misses alone. Every reader stores them first.
	stage     []held
	stageKeys [stageMax]idKey
	sink      uint64 // what warm loaded, so that its loads are not dropped
	// recent are the last names namesOf made, which records with the same ones share: the
	// next one replaced is recent[nextRecent].
	recent     [recentNames]*names
	nextRecent int
}

// stageMax is how many records insertOne stages before it stores them.
const stageMax = 32

// idIndex maps query ids to slots. An id of 16 lower-case hex digits (every id the proxy makes)
// is kept as the 64-bit number it spells, in an idTable: a full standalone store adds one id
// and deletes one per query, and a string key's hashing and comparing were ~580 instructions of
// it (callgrind), a number's in a Go map about a third, in the table a few dozen. Any other id
// is kept as a string.
type idIndex struct {
	hex   *idTable
	other map[string]int32
}

func newIDIndex() idIndex { t := newIDTable(); return idIndex{hex: &t, other: map[string]int32{}} }

// idKey is an id as idIndex keeps it: its number when it is hex (hexID), else the string.
type idKey struct {
	id  string
	h   uint64
	hex bool
}

func keyOf(id string) idKey {
	h, hex := hexID(id)
	return idKey{id: id, h: h, hex: hex}
}

func (x idIndex) get(k idKey) (int32, bool) {
	if k.hex {
		return x.hex.get(k.h)
	}
	slot, held := x.other[k.id]
	return slot, held
}

func (x idIndex) set(k idKey, slot int32) {
	if k.hex {
		x.hex.set(k.h, slot)
	} else {
		x.other[k.id] = slot
	}
}

// del forgets k and returns the hex table's entry it left empty (-1: none).
func (x idIndex) del(k idKey) int {
	if k.hex {
		return x.hex.del(k.h)
	}
	delete(x.other, k.id)
	return -1
}

func (x idIndex) len() int { return x.hex.len() + len(x.other) }

// hexID is the number id spells when it is 16 lower-case hex digits, the one string that spells
// it in that form: eight digits at a time, both halves in one function (a digit at a time was
// ~160 instructions, called three times a record; a call a half, 141 a record, now 101).
func hexID(id string) (uint64, bool) {
	if len(id) != 16 {
		return 0, false
	}
	_ = id[15] // one bounds check: the compiler then reads each half as one word
	hi := uint64(id[0]) | uint64(id[1])<<8 | uint64(id[2])<<16 | uint64(id[3])<<24 |
		uint64(id[4])<<32 | uint64(id[5])<<40 | uint64(id[6])<<48 | uint64(id[7])<<56
	lo := uint64(id[8]) | uint64(id[9])<<8 | uint64(id[10])<<16 | uint64(id[11])<<24 |
		uint64(id[12])<<32 | uint64(id[13])<<40 | uint64(id[14])<<48 | uint64(id[15])<<56
	hiLetters, hiOK := hexLetters(hi)
	loLetters, loOK := hexLetters(lo)
	if !hiOK || !loOK {
		return 0, false
	}
	return hexValue(hi, hiLetters)<<32 | hexValue(lo, loLetters), true
}

// hexLetters says which of x's eight bytes are the letters a-f (their top bit set in
// letters), and whether every byte is a lower-case hex digit. With the top bits cleared no
// byte's sum carries into the next: b+0x50 reaches 0x80 from '0' on and b+0x46 from '9'+1 on,
// b+0x1f from 'a' on and b+0x19 from 'f'+1 on; a byte with its top bit set is no digit.
func hexLetters(x uint64) (letters uint64, ok bool) {
	const low7, tops = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	y := x & low7
	digits := (y + 0x5050505050505050) &^ (y + 0x4646464646464646) &^ x & tops
	letters = (y + 0x1f1f1f1f1f1f1f1f) &^ (y + 0x1919191919191919) &^ x & tops
	return letters, digits|letters == tops
}

// hexValue is the number x's eight hex digits spell, the first (lowest) byte's the most
// significant; letters as hexLetters says.
func hexValue(x, letters uint64) uint64 {
	v := x&0x0f0f0f0f0f0f0f0f + letters>>7*9 // each byte its digit's value
	// Pairs of digits into bytes, bytes into 16-bit halves, those into 32 bits.
	v = v&0x0f000f000f000f00>>8 | v&0x000f000f000f000f<<4
	v = v&0x00ff000000ff0000>>16 | v&0x000000ff000000ff<<8
	return v>>32&0xffff | v&0xffff<<16
}

// memChunk is how many records one chunk of a Memory holds.
const memChunk = 1024

var _ Store = (*Memory)(nil)

// NewMemory returns a Memory holding at most maxRecords records.
func NewMemory(maxRecords int) *Memory {
	if maxRecords <= 0 || maxRecords > math.MaxInt32 {
		panic(fmt.Sprintf("history: NewMemory(%d): maxRecords must be in [1, %d]", maxRecords, math.MaxInt32))
	}
	return &Memory{max: maxRecords, ids: newIDIndex()}
}

// held is a slot: a record as the store keeps it, in 136 bytes where a Record takes 312. The
// fields most records share with others (names) are held once for them all, the times as
// microseconds (the canonical precision), an id of 16 hex digits (every id the proxy makes) as
// its number alone, which the index keys it by too: a record that gives way to the next (a
// full store's every insert) is forgotten without its id's digits read again. A standalone
// daemon's 100,000 records took 33 MB, faulted in page by page on the query path as it filled,
// and each record written was five cache lines.
type held struct {
	id                           string // the QueryID, "" when hex (h spells it)
	names                        *names
	sql, digest, err             string
	queueMs, execMs, rows, bytes int64
	started, ended               int64 // Unix microseconds
	h                            uint64
	hex                          bool
}

// names are the fields of a record that most records share with others: the node, user,
// protocol, group, cluster, outcome and routing of a workload's statements.
type names struct {
	worker, user, protocol, group, cluster string
	status                                 Status
	errorCode                              string
	trace                                  []string // nil when empty (canonical)
	cacheHit                               bool
}

// recentNames is how many names a Memory remembers to share (namesOf).
const recentNames = 4

// namesOf is r's names: one of the recent ones when r's are those, else new ones (m.mu held).
// Only records with equal names share them, so the texts a record held are the ones it keeps.
func (m *Memory) namesOf(r *Record) *names {
	for _, n := range m.recent {
		if n != nil && sameText(n.worker, r.Worker) && sameText(n.user, r.User) && sameText(n.protocol, r.Protocol) &&
			sameText(n.group, r.Group) && sameText(n.cluster, r.Cluster) && n.status == r.Status &&
			sameText(n.errorCode, r.ErrorCode) && n.cacheHit == r.CacheHit && sameTrace(n.trace, r.RoutingTrace) {
			return n
		}
	}
	n := &names{worker: r.Worker, user: r.User, protocol: r.Protocol, group: r.Group, cluster: r.Cluster,
		status: r.Status, errorCode: r.ErrorCode, trace: r.RoutingTrace, cacheHit: r.CacheHit}
	if len(n.trace) == 0 {
		n.trace = nil
	}
	m.recent[m.nextRecent] = n
	m.nextRecent = (m.nextRecent + 1) % recentNames
	return n
}

// sameText is a == b, at once when both are one text: a node's records mostly carry the very
// strings of the records before (the cluster's, the group's, the session's user), and the
// comparison then costs no call.
func sameText(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// sameTrace reports whether a and b hold the same steps: at once when they are one slice (the
// uplink's memoized traces), else step by step.
func sameTrace(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// heldAt is slot i (< n, or n when append makes room for it).
func (m *Memory) heldAt(i int) *held { return &m.chunks[i/memChunk][i%memChunk] }

// slot is the record in slot i.
func (m *Memory) slot(i int) Record { return m.heldAt(i).record() }

// record is the Record s holds, in its canonical form.
func (s *held) record() Record {
	n := s.names
	id := s.id
	if s.hex {
		id = hexString(s.h)
	}
	return Record{
		QueryID: id, Worker: n.worker, User: n.user, Protocol: n.protocol, Group: n.group, Cluster: n.cluster,
		SQL: s.sql, SQLDigest: s.digest, Status: n.status, ErrorCode: n.errorCode, Error: s.err,
		QueueMs: s.queueMs, ExecMs: s.execMs, Rows: s.rows, Bytes: s.bytes, CacheHit: n.cacheHit,
		RoutingTrace: n.trace, StartedAt: fromMicros(s.started), EndedAt: fromMicros(s.ended),
	}
}

// fromMicros is the canonical time (utcMicros) of Unix microseconds us.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// hexString spells h as hexID reads it: 16 lower-case hex digits.
func hexString(h uint64) string {
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = "0123456789abcdef"[h&15]
		h >>= 4
	}
	return string(b[:])
}

// keyAt is the index's key of the record in slot i.
func (m *Memory) keyAt(i int) idKey {
	s := m.heldAt(i)
	return idKey{id: s.id, h: s.h, hex: s.hex}
}

// setHeld makes *s r's canonical form, under key k, as a slot holds it (m.mu held: its names
// may be the recent ones).
func (m *Memory) setHeld(s *held, r *Record, k idKey) {
	id := r.QueryID
	if k.hex {
		id = ""
	}
	*s = held{
		id: id, names: m.namesOf(r), sql: r.SQL, digest: r.SQLDigest, err: r.Error,
		queueMs: r.QueueMs, execMs: r.ExecMs, rows: r.Rows, bytes: r.Bytes,
		started: r.StartedAt.UnixMicro(), ended: r.EndedAt.UnixMicro(), h: k.h, hex: k.hex,
	}
}

// append puts s in the next free slot (n < max), making its chunk when it is the first.
func (m *Memory) append(s *held) {
	m.grow()
	*m.heldAt(m.n) = *s
	m.n++
}

// grow makes slot n's chunk when n is the first of one.
func (m *Memory) grow() {
	if m.n%memChunk == 0 {
		m.chunks = append(m.chunks, make([]held, min(memChunk, m.max-m.n)))
	}
}

// Insert implements Store.
func (m *Memory) Insert(_ context.Context, recs []Record) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.storeStaged()
	inserted := 0
	var foreign []string
	var keys [stageMax]idKey
	var slots [stageMax]held
	for len(recs) > 0 {
		part := recs[:min(len(recs), stageMax)]
		for i := range part {
			keys[i] = keyOf(part[i].QueryID)
			m.setHeld(&slots[i], &part[i], keys[i])
		}
		m.warm(keys[:len(part)])
		for i := range part {
			switch m.insertLocked(&slots[i], keys[i]) {
			case stored:
				inserted++
			case foreignID:
				foreign = append(foreign, part[i].QueryID)
			}
		}
		recs = recs[len(part):]
	}
	m.checkIDs()
	return inserted, foreignErr(foreign)
}

// insertOne is Insert of the one record r, from a writer that does not care whether it was
// new (Uplink's direct writes: a record held already, under this worker or another, is
// settled as NewLocalSender settles it). It stages r in its slot's form (r itself is not
// kept), and stores the stage when that is full; the index's count is checked by Insert, per
// batch.
func (m *Memory) insertOne(r *Record) {
	m.mu.Lock()
	if m.stage == nil {
		m.stage = make([]held, 0, stageMax)
	}
	n := len(m.stage)
	k := keyOf(r.QueryID)
	m.stageKeys[n] = k
	m.stage = m.stage[:n+1]
	m.setHeld(&m.stage[n], r, k)
	if len(m.stage) == stageMax {
		m.storeStaged()
	}
	m.mu.Unlock()
}

// storeStaged stores the staged records, in the order insertOne took them (m.mu held).
func (m *Memory) storeStaged() {
	if len(m.stage) == 0 {
		return
	}
	keys := m.stageKeys[:len(m.stage)]
	m.warm(keys)
	for i := range m.stage {
		m.insertLocked(&m.stage[i], keys[i])
	}
	clear(m.stage) // holds no record's texts once stored
	clear(keys)
	m.stage = m.stage[:0]
}

// warm loads the hex table's entries where the probes of the ids keyed keys start, and those
// of the ids the next len(keys) inserts evict from a full store:
// loads that depend on nothing, which the CPU runs side by side, so that the inserts then find
// those entries cached (each probe of a table of 100,000 ids misses the cache otherwise, two
// misses a record: ~2 % of a passthrough daemon's CPU, perf). m.mu held.
func (m *Memory) warm(keys []idKey) {
	t := m.ids.hex
	var at [2 * stageMax]int // the entries to load: computed first, so the loads' loop is short
	n := 0
	for _, k := range keys {
		if k.hex {
			at[n] = t.home(k.h)
			n++
		}
	}
	if m.n == m.max {
		for i := range keys {
			if s := m.heldAt((m.head + i) % m.max); s.hex {
				at[n] = t.home(s.h)
				n++
			}
		}
	}
	// Each entry's line and the next: a probe or a del's shift goes on past an entry ending
	// its line (four to a line) a quarter of the time.
	var sink uint64
	mask := len(t.entries) - 1
	for _, i := range at[:n] {
		sink += t.entries[i].key + t.entries[(i+4)&mask].key
	}
	m.sink = sink
}

// insertion is what insertLocked did with a record.
type insertion uint8

const (
	stored    insertion = iota
	heldID              // held already under its worker: skipped
	foreignID           // held under another worker: refused
)

// insertLocked stores *s, whose id the index keeps as k, in the next slot unless its id is
// held (m.mu held).
func (m *Memory) insertLocked(s *held, k idKey) insertion {
	// The index's calls made here, not through idIndex's: a call each way is ~40 instructions
	// of the ~250 a record's id costs (callgrind, BenchmarkMemoryInsertOneHexFull).
	var slot int32
	var held bool
	var at idSpot // where k goes in the hex table: one probe finds it and whether k is held
	if k.hex {
		slot, held, at = m.ids.hex.where(k.h)
	} else {
		slot, held = m.ids.other[k.id]
	}
	if held {
		if m.heldAt(int(slot)).names.worker != s.names.worker {
			return foreignID
		}
		return heldID
	}
	i, hole := m.n, -1
	if m.n < m.max {
		m.append(s)
	} else {
		i = m.head
		if old := m.keyAt(i); old.hex {
			hole = m.ids.hex.del(old.h)
		} else {
			delete(m.ids.other, old.id)
		}
		*m.heldAt(i) = *s
		m.head = (m.head + 1) % m.max
	}
	if k.hex {
		m.ids.hex.addAt(at, hole, k.h, int32(i))
	} else {
		m.ids.other[k.id] = int32(i)
	}
	return stored
}

// checkIDs panics when the index and the records disagree in number (m.mu held).
func (m *Memory) checkIDs() {
	if m.ids.len() != m.n {
		panic(fmt.Sprintf("history: memory store holds %d ids for %d records", m.ids.len(), m.n))
	}
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
	m.storeStaged()
	var hits []Record
	for i := range m.n {
		r := m.slot(i)
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
	m.storeStaged()
	return m.n
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
