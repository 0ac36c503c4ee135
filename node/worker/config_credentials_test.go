package worker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/workerapi"
)

// strippedSnap is a snapshot served with credentials stripped: a Postgres cluster that logs in,
// and a sim cluster that does not.
func strippedSnap(t *testing.T) *snapshot.WorkerSnapshotV1 {
	t.Helper()
	cfg, err := config.Parse([]byte(`
clusters:
  pg: {engine: postgres, endpoint: "127.0.0.1:5432", database: app, credentials: {user: app, password: cp-pg-pw}, maxRunningQueries: 2}
  s: {engine: sim, maxRunningQueries: 2}
clusterGroups: [{name: g, members: [pg, s]}]
routingFallback: g
`))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Build(cfg, snapshot.Options{Credentials: snapshot.Stripped})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Clusters[0].Credentials.Password != "" {
		t.Fatal("the stripped snapshot carries the password")
	}
	return snap
}

// TestConfigSyncFillsStrippedCredentialsFromLocal: a stripped snapshot becomes active with the
// worker's own queryflux.clusterCredentials in its config.
func TestConfigSyncFillsStrippedCredentialsFromLocal(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	local := config.QueryFlux{ClusterCredentials: map[string]config.Credentials{"pg": {Password: "worker-pg-pw"}}}
	cs := NewConfigSync(f.worker, ConfigSyncOptions{Local: &local})
	snap := strippedSnap(t)
	if err := f.srv.Publish(snap); err != nil {
		t.Fatal(err)
	}
	f.start(cs)
	if got := f.waitActive(cs, ""); got.Revision != snap.Revision {
		t.Fatalf("active %s, want %s", got.Revision, snap.Revision)
	}
	cfg, _ := cs.Active()
	pg := cfg.Clusters[0]
	if pg.Name != "pg" || pg.Credentials.User != "app" || pg.Credentials.Password.Reveal() != "worker-pg-pw" {
		t.Fatalf("pg credentials: user %q password %q", pg.Credentials.User, pg.Credentials.Password.Reveal())
	}
	var hb workerapi.Heartbeat
	cs.contribute(&hb)
	if strings.Contains(fmt.Sprintf("%+v", hb), "worker-pg-pw") {
		t.Fatal("the heartbeat shows the local password")
	}
}

// TestConfigSyncRefusesStrippedWithoutLocalCredentials: with no local credentials for pg the
// revision is rejected with an error naming the cluster, nothing becomes active, and the
// heartbeat shows the revision seen but not active.
func TestConfigSyncRefusesStrippedWithoutLocalCredentials(t *testing.T) {
	f := newCSFleet(t, time.Minute)
	cs := NewConfigSync(f.worker, ConfigSyncOptions{Local: &config.QueryFlux{
		ClusterCredentials: map[string]config.Credentials{"other": {Password: "x"}},
	}})
	snap := strippedSnap(t)
	if err := f.srv.Publish(snap); err != nil {
		t.Fatal(err)
	}
	f.start(cs)
	deadline := time.Now().Add(10 * time.Second)
	for rev, _ := cs.Rejected(); rev != snap.Revision; rev, _ = cs.Rejected() {
		if time.Now().After(deadline) {
			t.Fatalf("stripped revision %s never rejected", snap.Revision)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, why := cs.Rejected()
	if why == nil || !strings.Contains(why.Error(), `"pg" (postgres)`) || strings.Contains(why.Error(), `"s"`) {
		t.Fatalf("rejection reason %v: want it to name pg only", why)
	}
	if cfg, _ := cs.Active(); cfg != nil {
		t.Fatal("a stripped snapshot without credentials became active")
	}
	var hb workerapi.Heartbeat
	cs.contribute(&hb)
	if hb.Revision.Active != "" || hb.Revision.LastSeen != snap.Revision {
		t.Fatalf("heartbeat revisions %+v", hb.Revision)
	}
}
