package worker

// The worker's last good configuration: every snapshot the worker
// activates is kept in a SnapshotStore, and a worker that has nothing active starts from it
// when the control plane does not answer or offers only a revision the worker refuses. The
// store is injected: a file in the worker's state directory in production (internal/statedir),
// memory in the simulator.

import (
	"context"
	"sync"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/redact"
)

// SnapshotSourceCache is the source of a configuration started from the SnapshotStore.
const SnapshotSourceCache = "cache"

// SnapshotStore keeps one encoded snapshot (snapshot.Encode) across restarts. Load answers
// nil, nil when nothing was saved. It holds credentials: implementations keep it private.
type SnapshotStore interface {
	Load() ([]byte, error)
	Save(encoded []byte) error
}

// MemorySnapshotStore is a SnapshotStore in memory: the simulator's disk, which survives a
// node's crash when the scenario keeps one store per node.
type MemorySnapshotStore struct {
	mu   sync.Mutex
	data []byte
}

// Load returns what was saved last (nil when nothing was).
func (m *MemorySnapshotStore) Load() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data, nil
}

// Save keeps encoded.
func (m *MemorySnapshotStore) Save(encoded []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data = append([]byte(nil), encoded...)
	return nil
}

// saveLastGood keeps snap as the last good configuration; a failure is logged, not fatal.
func (s *ConfigSync) saveLastGood(snap *snapshot.WorkerSnapshotV1, source string) {
	if s.opts.Store == nil || source == SnapshotSourceCache {
		return
	}
	b, err := snapshot.Encode(snap)
	if err == nil {
		err = s.opts.Store.Save(b)
	}
	if err != nil {
		s.e.Logger().Warn("could not keep the last good configuration", "worker", s.w.Name(), "revision", snap.Revision, "err", redact.Error(err))
	}
}

// startFromCache installs the last good snapshot when nothing is active yet. It tries once per
// process: a saved snapshot this build refuses stays refused.
func (s *ConfigSync) startFromCache(ctx context.Context, why string) {
	s.mu.Lock()
	tried := s.cacheTried
	s.cacheTried = true
	active := s.active != nil
	s.mu.Unlock()
	if s.opts.Store == nil || tried || active {
		return
	}
	b, err := s.opts.Store.Load()
	if err != nil || b == nil {
		if err != nil {
			s.e.Logger().Warn("could not read the last good configuration", "worker", s.w.Name(), "err", redact.Error(err))
		}
		return
	}
	snap, err := snapshot.Decode(b)
	if err == nil {
		err = s.install(ctx, snap, SnapshotSourceCache, snap.ConfirmedAt, confirmation{})
	}
	if err != nil {
		s.e.Logger().Error("the last good configuration was refused", "worker", s.w.Name(), "err", redact.Error(err))
		return
	}
	s.e.Logger().Warn("started from the last good configuration", "worker", s.w.Name(), "revision", snap.Revision,
		"confirmedAt", snap.ConfirmedAt, "because", why)
}
