package pgconfig

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/migrations/migratedtest"
)

func newSource(t *testing.T) (*Source, string) {
	t.Helper()
	url := migratedtest.NewDatabase(t)
	ctx := context.Background()
	src, err := Open(ctx, url, Options{Key: testKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	return src, url
}

// testKey is a fixed config key (64 hex digits).
func testKey(t testing.TB) *Key {
	t.Helper()
	k, err := ParseKey("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func fullConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load("../testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var at = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestImportThenSnapshotMatchesYAML: the configuration stored in Postgres and read back gives the
// same snapshot revision as the YAML file it came from, credentials included.
func TestImportThenSnapshotMatchesYAML(t *testing.T) {
	src, _ := newSource(t)
	ctx := context.Background()
	cfg := fullConfig(t)
	if err := src.Import(ctx, cfg); err != nil {
		t.Fatalf("Import: %v", err)
	}
	want, err := snapshot.Build(cfg, snapshot.Options{ConfirmedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{ConfirmedAt: at})
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if got.Revision != want.Revision {
		a, _ := snapshot.Canonical(got)
		b, _ := snapshot.Canonical(want)
		t.Fatalf("revision from Postgres %s, from YAML %s\n%s\n%s", got.Revision, want.Revision, a, b)
	}
	loaded, err := src.Load(ctx, config.QueryFlux{})
	if err != nil {
		t.Fatal(err)
	}
	if p := loaded.Clusters[0].Variants["adhoc"].Credentials.Password.Reveal(); p != "analyst-pass" {
		t.Fatalf("variant password %q", p)
	}
}

func TestUpdateRejectsAnInvalidEditAndKeepsTheOldConfig(t *testing.T) {
	src, _ := newSource(t)
	ctx := context.Background()
	if err := src.Import(ctx, fullConfig(t)); err != nil {
		t.Fatal(err)
	}
	before, _ := src.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{})
	err := src.Update(ctx, func(c *config.Config) error {
		c.ClusterGroups[0].Members = append(c.ClusterGroups[0].Members, "ghost")
		c.Clusters[1].MaxRunningQueries = 99
		return nil
	})
	var errs config.Errors
	if !errors.As(err, &errs) || errs[0].Path != "clusterGroups[0].members[2]" {
		t.Fatalf("want an error at clusterGroups[0].members[2], got %v", err)
	}
	after, _ := src.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{})
	if after.Revision != before.Revision {
		t.Fatal("a rejected edit changed the stored configuration")
	}
	// A valid edit goes through and changes the revision.
	if err := src.Update(ctx, func(c *config.Config) error { c.Clusters[1].MaxRunningQueries = 99; return nil }); err != nil {
		t.Fatal(err)
	}
	edited, _ := src.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{})
	if edited.Revision == before.Revision || edited.Clusters[1].MaxRunningQueries != 99 {
		t.Fatalf("valid edit not applied: %s %+v", edited.Revision, edited.Clusters[1])
	}
}

// TestConcurrentUpdatesAreSerialized: many concurrent increments through Update all land.
func TestConcurrentUpdatesAreSerialized(t *testing.T) {
	src, _ := newSource(t)
	ctx := context.Background()
	if err := src.Import(ctx, fullConfig(t)); err != nil {
		t.Fatal(err)
	}
	const n = 4
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			errs <- src.Update(ctx, func(c *config.Config) error { c.Clusters[0].MaxRunningQueries++; return nil })
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg, _ := src.Load(ctx, config.QueryFlux{})
	if got := cfg.Clusters[0].MaxRunningQueries; got != 10+n {
		t.Fatalf("maxRunningQueries %d after %d increments from 10", got, n)
	}
}

func TestListenWakesOnEveryEdit(t *testing.T) {
	src, url := newSource(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wakes := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() { done <- src.Listen(ctx, func() { wakes <- struct{}{} }) }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-wakes:
		case <-time.After(10 * time.Second):
			t.Fatalf("no wake-up for %s", what)
		}
	}
	wait("listen start")
	if err := src.Import(ctx, fullConfig(t)); err != nil {
		t.Fatal(err)
	}
	wait("import")
	// An edit made outside this package (psql, another control plane) wakes it too.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for len(wakes) > 0 {
		<-wakes
	}
	if _, err := conn.Exec(ctx, "UPDATE config_clusters SET max_running_queries = 7 WHERE name = 'duck'"); err != nil {
		t.Fatal(err)
	}
	wait("direct SQL edit")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen returned %v after cancel", err)
	}
}

// A cluster's workerSelector survives the store: read back, the snapshot filtered for a worker
// the selector excludes holds neither the cluster nor, emptied, its group, as from the YAML.
func TestClusterWorkerSelectorSurvivesTheStore(t *testing.T) {
	src, _ := newSource(t)
	ctx := context.Background()
	cfg, err := config.Parse([]byte(`
clusters:
  - {name: c, engine: postgres, endpoint: "127.0.0.1:5432", maxRunningQueries: 1}
  - {name: c-us, engine: postgres, endpoint: "127.0.0.1:5432", maxRunningQueries: 1, workerSelector: {zone: us}}
clusterGroups:
  - {name: g, members: [c]}
  - {name: us, members: [c-us]}
routingFallback: g
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Import(ctx, cfg); err != nil {
		t.Fatalf("Import: %v", err)
	}
	loaded, err := src.Load(ctx, config.QueryFlux{})
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.Clusters[1].WorkerSelector; got["zone"] != "us" || len(got) != 1 {
		t.Fatalf("c-us workerSelector read back %v, want {zone: us}", got)
	}
	if loaded.Clusters[0].WorkerSelector != nil {
		t.Errorf("c workerSelector read back %v, want none", loaded.Clusters[0].WorkerSelector)
	}
	want, err := snapshot.Build(cfg, snapshot.Options{ConfirmedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{ConfirmedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	eu, err := got.For(map[string]string{"zone": "eu"})
	if err != nil {
		t.Fatal(err)
	}
	wantEU, err := want.For(map[string]string{"zone": "eu"})
	if err != nil {
		t.Fatal(err)
	}
	if eu.Revision != wantEU.Revision || len(eu.ClusterGroups) != 1 || eu.ClusterGroups[0].Name != "g" {
		t.Errorf("an eu worker's snapshot from Postgres: revision %s, groups %v; from YAML %s", eu.Revision, eu.ClusterGroups, wantEU.Revision)
	}
}
