package worker

import (
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
