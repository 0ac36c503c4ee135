// Package registry is the control plane's durable memory of its worker fleet: one Record per
// worker name (identity, labels, session token hash, lifecycle state and last heartbeat), behind
// a small Store interface. The control plane keeps the live view in memory and writes batches;
// the store is what survives a control-plane restart.
//
// Memory is the in-process Store the simulator and the standalone role use; pgregistry is the
// Postgres one. Both must answer the same (see the model test in pgregistry).
// This package touches nothing but its own memory.
package registry

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// Record is one worker as the registry keeps it.
type Record struct {
	Name         string
	Version      string
	Labels       map[string]string
	Frontends    []string
	Endpoints    map[string]string // where peers forward to its frontends, by protocol
	TokenHash    string            // hex SHA-256 of the session token; "" once revoked
	RegisteredAt time.Time
	State        string    // workerapi.StateHealthy, StateStale or StateEvicted
	StateSince   time.Time // when State was entered
	LastSeen     time.Time // liveness reference: last heartbeat, registration or fresh window
	// LastHeartbeat is when Heartbeat arrived, on the control plane's clock.
	LastHeartbeat time.Time
	Heartbeat     *workerapi.Heartbeat
}

// ErrNotFound is returned by Get for an unknown worker.
var ErrNotFound = errors.New("registry: worker not found")

// Store keeps Records. Implementations must be safe for concurrent use.
type Store interface {
	// Put writes records (insert or replace by name) as one batch: all or nothing.
	Put(ctx context.Context, records []Record) error
	// Get returns one record, or ErrNotFound.
	Get(ctx context.Context, name string) (Record, error)
	// List returns every record, sorted by name.
	List(ctx context.Context) ([]Record, error)
	// Delete removes a record; deleting an unknown name is not an error.
	Delete(ctx context.Context, name string) error
}

// Normalize returns r as a store gives it back: times in UTC at microsecond precision (what
// Postgres keeps), empty collections as nil. Stores apply it on Put, so every store answers alike.
func Normalize(r Record) Record {
	r.RegisteredAt = normTime(r.RegisteredAt)
	r.StateSince = normTime(r.StateSince)
	r.LastSeen = normTime(r.LastSeen)
	r.LastHeartbeat = normTime(r.LastHeartbeat)
	if len(r.Labels) == 0 {
		r.Labels = nil
	} else {
		r.Labels = maps.Clone(r.Labels)
	}
	if len(r.Endpoints) == 0 {
		r.Endpoints = nil
	} else {
		r.Endpoints = maps.Clone(r.Endpoints)
	}
	if len(r.Frontends) == 0 {
		r.Frontends = nil
	} else {
		r.Frontends = slices.Clone(r.Frontends)
	}
	if r.Heartbeat != nil {
		hb := *r.Heartbeat
		hb.SentAt = normTime(hb.SentAt)
		hb.Config.LastSyncAt = normTime(hb.Config.LastSyncAt)
		hb.Config.LastSyncAttemptAt = normTime(hb.Config.LastSyncAttemptAt)
		hb.Health.Since = normTime(hb.Health.Since)
		if len(hb.Frontends) == 0 {
			hb.Frontends = nil
		} else {
			hb.Frontends = slices.Clone(hb.Frontends)
		}
		r.Heartbeat = &hb
	}
	return r
}

func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// Memory is the in-memory Store.
type Memory struct {
	mu      sync.Mutex
	records map[string]Record
	batches int
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{records: map[string]Record{}} }

// Put implements Store.
func (m *Memory) Put(ctx context.Context, records []Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range records {
		m.records[r.Name] = Normalize(r)
	}
	m.batches++
	return nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, name string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[name]
	if !ok {
		return Record{}, ErrNotFound
	}
	return Normalize(r), nil // a copy: callers may not reach into the store
}

// List implements Store.
func (m *Memory) List(ctx context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.records))
	for name := range m.records { //determinism:ok collecting keys, sorted below
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]Record, 0, len(names))
	for _, name := range names {
		out = append(out, Normalize(m.records[name]))
	}
	return out, nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records, name)
	return nil
}

// Batches counts Put calls, so tests can check that heartbeats are written in batches.
func (m *Memory) Batches() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.batches
}
