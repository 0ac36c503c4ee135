package worker

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/workerapi"
)

// storeWith is a snapshot store holding snap, as a worker that ran it before its restart has.
func storeWith(t *testing.T, snap *snapshot.WorkerSnapshotV1) *MemorySnapshotStore {
	t.Helper()
	b, err := snapshot.Encode(snap)
	if err != nil {
		t.Fatal(err)
	}
	st := &MemorySnapshotStore{}
	if err := st.Save(b); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestConfigSyncKeepsTheLastGoodSnapshot: what the worker activates is kept in its store.
func TestConfigSyncKeepsTheLastGoodSnapshot(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	st := &MemorySnapshotStore{}
	s := NewConfigSync(f.worker, ConfigSyncOptions{Store: st, BackoffMin: 10 * time.Millisecond})
	s1 := csSnap(t, 1)
	if err := f.srv.Publish(s1); err != nil {
		t.Fatal(err)
	}
	f.start(s)
	f.waitActive(s, "")
	kept, err := snapshot.Decode(waitSaved(t, st))
	if err != nil || kept.Revision != s1.Revision {
		t.Fatalf("kept %v %v, want %s", kept, err, s1.Revision)
	}
}

// waitSaved is what st holds once something was saved there: a configuration is kept after it
// is active, not before (the test may look in between).
func waitSaved(t *testing.T, st *MemorySnapshotStore) []byte {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, _ := st.Load(); b != nil {
			return b
		}
	}
	t.Fatal("the active configuration was never kept")
	return nil
}

// TestConfigSyncStartsFromTheLastGoodSnapshot: a restarted worker starts from its store when the
// control plane has nothing to offer, or only a revision the worker refuses; the control
// plane's next good revision then replaces it.
func TestConfigSyncStartsFromTheLastGoodSnapshot(t *testing.T) {
	good := csSnap(t, 3)
	for name, publish := range map[string]*snapshot.WorkerSnapshotV1{
		"control plane down": nil,
		"revision refused":   invalidSnap(t),
	} {
		t.Run(name, func(t *testing.T) {
			f := newCSFleet(t, time.Minute)
			if publish != nil {
				if err := f.srv.Publish(publish); err != nil {
					t.Fatal(err)
				}
			}
			s := NewConfigSync(f.worker, ConfigSyncOptions{Store: storeWith(t, good), BackoffMin: 10 * time.Millisecond})
			f.start(s)
			if got := f.waitActive(s, ""); got.Revision != good.Revision {
				t.Fatalf("active %s, want the kept %s", got.Revision, good.Revision)
			}
			var hb workerapi.Heartbeat
			s.contribute(&hb)
			if hb.Config.Source != SnapshotSourceCache || !hb.Config.Stale {
				t.Fatalf("heartbeat config %+v, want source cache and stale", hb.Config)
			}
			next := csSnap(t, 4)
			if err := f.srv.Publish(next); err != nil {
				t.Fatal(err)
			}
			if got := f.waitActive(s, good.Revision); got.Revision != next.Revision {
				t.Fatalf("active %s, want the control plane's %s", got.Revision, next.Revision)
			}
		})
	}
}

// TestConfigSyncRefusesABadKeptSnapshot: a kept snapshot the worker refuses (tampered with, or
// not compiling) is not activated.
func TestConfigSyncRefusesABadKeptSnapshot(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	st := &MemorySnapshotStore{}
	_ = st.Save([]byte(`{"schemaVersion":1,"revision":"0000000000000000"}`))
	bad := storeWith(t, invalidSnap(t))
	for _, store := range []SnapshotStore{st, bad} {
		s := NewConfigSync(f.worker, ConfigSyncOptions{Store: store, BackoffMin: 10 * time.Millisecond})
		ctx, cancel := f.e.WithTimeout(f.ctx, time.Second)
		s.startFromCache(ctx, "test")
		cancel()
		if cfg, _ := s.Active(); cfg != nil {
			t.Fatal("a bad kept snapshot was activated")
		}
	}
}

func activeOf(s *ConfigSync) *snapshot.WorkerSnapshotV1 { _, snap := s.Active(); return snap }

// failingStore is a SnapshotStore whose disk fails as told, counting its reads.
type failingStore struct {
	MemorySnapshotStore
	loadErr, saveErr error
	loads            atomic.Int64
}

func (f *failingStore) Load() ([]byte, error) {
	f.loads.Add(1)
	if f.loadErr != nil {
		return nil, f.loadErr
	}
	return f.MemorySnapshotStore.Load()
}

func (f *failingStore) Save(b []byte) error {
	if f.saveErr != nil {
		return f.saveErr
	}
	return f.MemorySnapshotStore.Save(b)
}

// TestConfigCacheTellsTheOperator: what happens to the last good configuration is in the
// worker's log where an operator looks (a disk that cannot keep or read it, a kept copy refused,
// a start from it), an empty store is no error, and a refused copy is read once per process.
func TestConfigCacheTellsTheOperator(t *testing.T) {
	startFrom := func(f *csFleet, st SnapshotStore) *ConfigSync {
		s := NewConfigSync(f.worker, ConfigSyncOptions{Store: st, BackoffMin: 10 * time.Millisecond})
		ctx, cancel := f.e.WithTimeout(f.ctx, 5*time.Second)
		defer cancel()
		s.startFromCache(ctx, "test")
		return s
	}
	wantLog := func(f *csFleet, parts ...string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			line := ""
			for _, l := range strings.Split(f.logs.String(), "\n") {
				if strings.Contains(l, parts[0]) {
					line = l
				}
			}
			missing := ""
			for _, p := range parts {
				if !strings.Contains(line, p) {
					missing = p
				}
			}
			if missing == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no log line with %q (missing %q) in:\n%s", parts[0], missing, f.logs.String())
			}
		}
	}

	t.Run("a disk that cannot keep it", func(t *testing.T) {
		f := newCSFleet(t, time.Minute)
		if err := f.srv.Publish(csSnap(t, 1)); err != nil {
			t.Fatal(err)
		}
		s := NewConfigSync(f.worker, ConfigSyncOptions{Store: &failingStore{saveErr: errors.New("disk is full")}, BackoffMin: 10 * time.Millisecond})
		f.start(s)
		f.waitActive(s, "")
		wantLog(f, "could not keep the last good configuration", "level=WARN", "disk is full")
	})
	t.Run("a disk that cannot read it", func(t *testing.T) {
		f := newCSFleet(t, time.Minute)
		st := &failingStore{loadErr: errors.New("permission denied")}
		if s := startFrom(f, st); activeOf(s) != nil {
			t.Fatal("an unreadable store activated a configuration")
		}
		wantLog(f, "could not read the last good configuration", "level=WARN", "permission denied")
		if strings.Contains(f.logs.String(), "was refused") {
			t.Fatalf("an unreadable store was read as a refused configuration:\n%s", f.logs.String())
		}
	})
	t.Run("an empty store", func(t *testing.T) {
		f := newCSFleet(t, time.Minute)
		startFrom(f, &failingStore{})
		if logs := f.logs.String(); strings.Contains(logs, "last good configuration") {
			t.Fatalf("an empty store is logged as a failure:\n%s", logs)
		}
	})
	t.Run("a refused copy, read once", func(t *testing.T) {
		f := newCSFleet(t, time.Minute)
		st := &failingStore{}
		b, err := snapshot.Encode(invalidSnap(t))
		if err != nil {
			t.Fatal(err)
		}
		_ = st.MemorySnapshotStore.Save(b)
		s := startFrom(f, st)
		wantLog(f, "the last good configuration was refused", "level=ERROR")
		s.startFromCache(f.ctx, "again")
		if n := st.loads.Load(); n != 1 {
			t.Fatalf("the refused copy was read %d times, want once per process", n)
		}
	})
	t.Run("a start from it", func(t *testing.T) {
		f := newCSFleet(t, time.Minute)
		good := csSnap(t, 2)
		if s := startFrom(f, storeWith(t, good)); activeOf(s) == nil {
			t.Fatal("the kept configuration was not activated")
		}
		wantLog(f, "started from the last good configuration", "level=WARN", good.Revision, "because=test")
	})
}
