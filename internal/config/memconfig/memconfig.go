// Package memconfig is an editable configuration store in memory with pgconfig's semantics:
// Update loads, edits, compiles and stores all or nothing, and every stored change calls the
// change hooks, as Postgres's NOTIFY wakes pgconfig's listeners. The simulator's control planes
// use it in place of Postgres (keep one Store across a node's crashes: it stands for the
// database), and SetFailure stands for a database outage.
//
// It touches nothing but its own memory; it follows the determinism contract.
package memconfig

import (
	"context"
	"sync"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
)

// Store is the configuration's shared sections, in memory. Safe for concurrent use.
type Store struct {
	mu    sync.Mutex
	cfg   *config.Config // the node-local section is always empty
	hooks []func()
	fail  error
}

// New returns a store holding the empty configuration.
func New() *Store {
	cfg := &config.Config{}
	config.ApplyDefaults(cfg)
	return &Store{cfg: cfg}
}

// OnChange adds fn, called (outside the store's lock) after every stored change.
func (s *Store) OnChange(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, fn)
}

// SetFailure makes every call fail with err until SetFailure(nil): a database outage.
func (s *Store) SetFailure(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Load returns a copy of the stored configuration with local as its node-local section.
func (s *Store) Load(ctx context.Context, local config.QueryFlux) (*config.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	cfg := config.Clone(s.cfg)
	cfg.QueryFlux = local
	config.ApplyDefaults(cfg)
	return cfg, nil
}

// Snapshot loads the configuration and builds its worker snapshot.
func (s *Store) Snapshot(ctx context.Context, local config.QueryFlux, opts snapshot.Options) (*snapshot.WorkerSnapshotV1, error) {
	cfg, err := s.Load(ctx, local)
	if err != nil {
		return nil, err
	}
	return snapshot.Build(cfg, opts)
}

// Update lets edit change a copy of the stored configuration, compiles it, and stores it if it
// compiles; otherwise nothing changes and the error (config.Errors for a compile failure) is
// returned. edit runs under the store's lock: it must not block or call into an Env.
func (s *Store) Update(ctx context.Context, edit func(*config.Config) error) error {
	hooks, err := s.update(ctx, edit)
	if err != nil {
		return err
	}
	for _, fn := range hooks {
		fn()
	}
	return nil
}

func (s *Store) update(ctx context.Context, edit func(*config.Config) error) ([]func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	cfg := config.Clone(s.cfg)
	config.ApplyDefaults(cfg)
	if err := edit(cfg); err != nil {
		return nil, err
	}
	cfg.QueryFlux = config.QueryFlux{}
	config.ApplyDefaults(cfg)
	if err := config.Compile(cfg); err != nil {
		return nil, err
	}
	s.cfg = config.Clone(cfg) // edit may still hold references into cfg
	return append([]func(){}, s.hooks...), nil
}

// Import replaces the stored configuration with cfg's shared sections, if cfg compiles.
func (s *Store) Import(ctx context.Context, cfg *config.Config) error {
	return s.Update(ctx, func(stored *config.Config) error {
		*stored = *config.Clone(cfg)
		return nil
	})
}

func (s *Store) check(ctx context.Context) error {
	if s.fail != nil {
		return s.fail
	}
	return ctx.Err()
}
