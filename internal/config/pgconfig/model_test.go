package pgconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/memconfig"
	"github.com/queryflux/queryflux/internal/config/snapshot"
)

// editStore is what pgconfig.Source and memconfig.Store both are.
type editStore interface {
	Update(ctx context.Context, edit func(*config.Config) error) error
	Snapshot(ctx context.Context, local config.QueryFlux, opts snapshot.Options) (*snapshot.WorkerSnapshotV1, error)
}

// errorPaths is the paths of a config.Errors, or a marker for another error (or none).
func errorPaths(err error) string {
	var errs config.Errors
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errs):
		p := make([]string, len(errs))
		for i, e := range errs {
			p[i] = e.Path
		}
		return fmt.Sprint(p)
	default:
		return "error: " + err.Error()
	}
}

// drawEdit draws one edit of the full configuration: valid or not.
func drawEdit(t *rapid.T, i int) (string, func(*config.Config) error) {
	name := func(s string) string { return fmt.Sprint(s, i) }
	switch rapid.IntRange(0, 6).Draw(t, name("kind")) {
	case 0:
		c, n := rapid.IntRange(0, 2).Draw(t, name("cluster")), rapid.IntRange(-1, 9).Draw(t, name("cap"))
		return fmt.Sprintf("cluster %d cap %d", c, n), func(cfg *config.Config) error {
			if c < len(cfg.Clusters) {
				cfg.Clusters[c].MaxRunningQueries = n
			}
			return nil
		}
	case 1:
		g := rapid.SampledFrom([]string{"x", "y", "local"}).Draw(t, name("group"))
		members := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"duck", "pg-1", "trino-1::adhoc", "ghost"}), 0, 3, rapid.ID[string]).Draw(t, name("members"))
		return fmt.Sprintf("add group %s %v", g, members), func(cfg *config.Config) error {
			cfg.ClusterGroups = append(cfg.ClusterGroups, config.ClusterGroup{Name: g, Members: members, Strategy: config.StrategyRoundRobin})
			return nil
		}
	case 2:
		g := rapid.IntRange(0, 3).Draw(t, name("drop"))
		return fmt.Sprintf("drop group %d", g), func(cfg *config.Config) error {
			if g < len(cfg.ClusterGroups) {
				cfg.ClusterGroups = slices.Delete(cfg.ClusterGroups, g, g+1)
			}
			return nil
		}
	case 3:
		fb := rapid.SampledFrom([]string{"local", "oltp", "x", ""}).Draw(t, name("fallback"))
		return "fallback " + fb, func(cfg *config.Config) error { cfg.RoutingFallback = fb; return nil }
	case 4:
		pw := rapid.StringMatching(`[a-z]{0,8}`).Draw(t, name("password"))
		return "password " + pw, func(cfg *config.Config) error {
			cfg.Clusters[0].Credentials.Password = config.Secret(pw)
			return nil
		}
	case 5:
		return "router drop", func(cfg *config.Config) error {
			if len(cfg.Routers) > 0 {
				cfg.Routers = cfg.Routers[1:]
			}
			return nil
		}
	default:
		return "edit fails", func(*config.Config) error { return errors.New("edit refused") }
	}
}

// TestMemoryStoreMeansWhatPostgresMeans: one random sequence of edits, valid and invalid, applied
// to memconfig and to pgconfig gives the same answers and the same snapshot revisions, so the
// simulator's store means what Postgres means.
func TestMemoryStoreMeansWhatPostgresMeans(t *testing.T) {
	pg, _ := newSource(t)
	ctx := context.Background()
	full := fullConfig(t)
	rapid.Check(t, func(t *rapid.T) {
		mem := memconfig.New()
		for _, s := range []editStore{pg, mem} {
			if err := s.Update(ctx, func(c *config.Config) error { *c = *config.Clone(full); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		for i := range rapid.IntRange(1, 8).Draw(t, "edits") {
			what, edit := drawEdit(t, i)
			errPG, errMem := pg.Update(ctx, edit), mem.Update(ctx, edit)
			if a, b := errorPaths(errPG), errorPaths(errMem); a != b {
				t.Fatalf("%s: Postgres says %s, memory says %s", what, a, b)
			}
			a, err := pg.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := mem.Snapshot(ctx, config.QueryFlux{}, snapshot.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if a.Revision != b.Revision {
				ca, _ := snapshot.Canonical(a)
				cb, _ := snapshot.Canonical(b)
				t.Fatalf("%s: revisions differ\nPostgres %s\nmemory   %s", what, ca, cb)
			}
		}
	})
}
