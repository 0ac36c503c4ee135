package query

import (
	"sync"
	"sync/atomic"
)

// SessionSequences is what a PostgreSQL client's session knows of sequences: the value nextval
// gave it last for each sequence (currval) and which sequence that was last (lastval). A
// PostgreSQL server keeps these per session; an engine whose own are the database's (DuckDB's
// currval answers whatever any connection took last) keeps them here, in the client's
// connection, which outlives the engine connections a pooled client's statements borrow.
// Names are the engine's ("schema.name"). It also keeps whether the client set its search_path
// empty (pg_dump's set_config of it, to an empty string): PostgreSQL then writes every name it
// prints qualified (pg_get_expr's nextval('public.t_id_seq'::regclass)). Safe for concurrent use.
type SessionSequences struct {
	id        atomic.Uint64
	emptyPath atomic.Bool
	mu        sync.Mutex
	values    map[string]int64
	last      string // lastval's sequence ("": none yet)
}

var sessionSequencesIDs atomic.Uint64

// ID is a number no other SessionSequences of this process has, for an engine that must name
// the session in the SQL it runs.
func (s *SessionSequences) ID() uint64 {
	if id := s.id.Load(); id != 0 {
		return id
	}
	s.id.CompareAndSwap(0, sessionSequencesIDs.Add(1))
	return s.id.Load()
}

// Took notes that nextval of name gave the session v: its currval, and lastval's sequence.
func (s *SessionSequences) Took(name string, v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set(name, v)
	s.last = name
}

// Set notes a setval(name, v) (is_called true): currval answers v; lastval is left as it was,
// as PostgreSQL leaves it.
func (s *SessionSequences) Set(name string, v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set(name, v)
}

func (s *SessionSequences) set(name string, v int64) {
	if s.values == nil {
		s.values = map[string]int64{}
	}
	s.values[name] = v
}

// Currval is the value nextval (or setval) gave the session last for name, if any.
func (s *SessionSequences) Currval(name string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[name]
	return v, ok
}

// Lastval is the value nextval gave the session last, of any sequence, if any.
func (s *SessionSequences) Lastval() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == "" {
		return 0, false
	}
	v, ok := s.values[s.last]
	return v, ok
}

// SetEmptySearchPath notes whether the session's search_path is now empty.
func (s *SessionSequences) SetEmptySearchPath(empty bool) { s.emptyPath.Store(empty) }

// EmptySearchPath reports whether the session's search_path is empty (nil: not).
func (s *SessionSequences) EmptySearchPath() bool { return s != nil && s.emptyPath.Load() }
