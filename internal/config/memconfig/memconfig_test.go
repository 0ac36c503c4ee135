package memconfig

import (
	"context"
	"errors"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
)

func TestStore(t *testing.T) {
	ctx := context.Background()
	s := New()
	changes := 0
	s.OnChange(func() { changes++ })
	full, err := config.Load("../testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Import(ctx, full); err != nil {
		t.Fatal(err)
	}
	want, _ := snapshot.Build(full, snapshot.Options{})
	got, err := s.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{})
	if err != nil || got.Revision != want.Revision || changes != 1 {
		t.Fatalf("after import: %v, revision %s want %s, %d changes", err, got.Revision, want.Revision, changes)
	}

	// An edit that does not compile changes nothing and notifies nobody.
	err = s.Update(ctx, func(c *config.Config) error { c.RoutingFallback = "nowhere"; return nil })
	var errs config.Errors
	if !errors.As(err, &errs) || errs[0].Path != "routingFallback" || changes != 1 {
		t.Fatalf("invalid edit: %v, %d changes", err, changes)
	}
	// A kept reference into the edited config cannot change the store afterwards.
	var kept *config.Config
	if err := s.Update(ctx, func(c *config.Config) error { c.Clusters[1].MaxRunningQueries = 7; kept = c; return nil }); err != nil {
		t.Fatal(err)
	}
	kept.Clusters[1].MaxRunningQueries = 99
	cfg, _ := s.Load(ctx, config.QueryFlux{})
	if cfg.Clusters[1].MaxRunningQueries != 7 || changes != 2 {
		t.Fatalf("cap %d, %d changes", cfg.Clusters[1].MaxRunningQueries, changes)
	}

	outage := errors.New("database down")
	s.SetFailure(outage)
	if _, err := s.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{}); !errors.Is(err, outage) {
		t.Fatalf("during an outage: %v", err)
	}
	s.SetFailure(nil)
	if _, err := s.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{}); err != nil {
		t.Fatal(err)
	}
}
