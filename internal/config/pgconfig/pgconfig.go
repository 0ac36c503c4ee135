// Package pgconfig keeps the shared sections of the configuration (clusters, groups, routers,
// fallback, translation, settings, history policy) in the control plane's Postgres database
// (tables of migrations/0005_config.sql), for deployments that edit config through the admin API.
//
// Reads take one REPEATABLE READ transaction, so a snapshot never mixes two edits. Edits go
// through Update, which loads, changes, compiles and writes back in one SERIALIZABLE transaction:
// an edit that would make the configuration invalid is rejected and changes nothing. Every
// committed edit notifies channel queryflux_config; Listen turns those into wake-ups.
//
// determinism: outside the simulator (Postgres through pgx; the simulator uses an in-memory source)
package pgconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Channel is the LISTEN/NOTIFY channel every config edit notifies.
const Channel = "queryflux_config"

// updateAttemptsMax bounds the retries of an Update that lost a serialization race.
const updateAttemptsMax = 5

// Source is the configuration in Postgres.
type Source struct {
	pool *pgxpool.Pool
	own  bool
	opts Options
}

// Options are a Source's choices. The zero value stores references only (no key) and resolves
// them from the process environment and files.
type Options struct {
	// Key seals engine passwords and tokens, passwords inside endpoints and credential options
	// at rest (seal.go). Nil: a literal secret is refused; references are stored as written.
	Key *Key
	// Secrets resolves ${env:...} and ${file:...} references when a snapshot is built or an
	// edit compiled (nil: config.OSSecrets bounded by the default policy,
	// config.SharedSecretSource). The control plane resolves them: its snapshots
	// carry values, its database only references or sealed values.
	Secrets config.SecretSource
	// Credentials is the snapshot mode revisions are recorded under (as the control plane
	// serves them), so History's revisions match the ETags of GET /admin/config.
	Credentials snapshot.CredentialsMode
}

// New uses pool (which the caller closes).
func New(pool *pgxpool.Pool, opts Options) *Source { return &Source{pool: pool, opts: opts} }

// Open connects to url with a pool of its own, closed by Close.
func Open(ctx context.Context, url string, opts Options) (*Source, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("pgconfig: connect: %w", err)
	}
	return &Source{pool: pool, own: true, opts: opts}, nil
}

// Close closes the pool if Open made it.
func (s *Source) Close() {
	if s.own {
		s.pool.Close()
	}
}

func (s *Source) secrets() config.SecretSource {
	if s.opts.Secrets != nil {
		return s.opts.Secrets
	}
	return config.SharedSecretSource(config.QueryFlux{}, "", config.OSSecrets)
}

// Load reads the shared sections in one REPEATABLE READ, read-only transaction and returns them
// as a configuration with local as its node-local section, defaults applied, references
// unresolved. It does not compile.
func (s *Source) Load(ctx context.Context, local config.QueryFlux) (*config.Config, error) {
	var cfg *config.Config
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			var err error
			cfg, err = s.read(ctx, tx)
			return err
		})
	if err != nil {
		return nil, err
	}
	cfg.QueryFlux = local
	config.ApplyDefaults(cfg)
	return cfg, nil
}

// Snapshot loads the configuration, resolves its references and builds its worker snapshot
// (which compiles it first).
func (s *Source) Snapshot(ctx context.Context, local config.QueryFlux, opts snapshot.Options) (*snapshot.WorkerSnapshotV1, error) {
	cfg, err := s.Load(ctx, local)
	if err != nil {
		return nil, err
	}
	if err := config.ResolveSharedSecrets(cfg, s.secrets()); err != nil {
		return nil, err
	}
	return snapshot.Build(cfg, opts)
}

// Revision is the revision cfg (references unresolved, as stored) is served under in the
// Source's credentials mode.
func (s *Source) Revision(cfg *config.Config) (string, error) {
	snap, err := s.build(cfg)
	if err != nil {
		return "", err
	}
	return snap.Revision, nil
}

// build resolves a copy of cfg and builds its snapshot in the Source's mode.
func (s *Source) build(cfg *config.Config) (*snapshot.WorkerSnapshotV1, error) {
	resolved := config.Clone(cfg)
	if err := config.ResolveSharedSecrets(resolved, s.secrets()); err != nil {
		return nil, err
	}
	return snapshot.Build(resolved, snapshot.Options{Credentials: s.opts.Credentials})
}

// Import replaces the whole stored configuration with cfg's shared sections, if cfg compiles.
func (s *Source) Import(ctx context.Context, cfg *config.Config) error {
	return s.Update(ctx, func(stored *config.Config) error {
		local := stored.QueryFlux
		*stored = *cfg
		stored.QueryFlux = local
		return nil
	})
}

// Update loads the stored configuration, lets edit change it, compiles the result (references
// resolved) and writes it back with a new row of config_revisions, all in one SERIALIZABLE
// transaction. Edits take turns (a table lock taken before anything is read), and one that
// still loses a serialization race is retried; after updateAttemptsMax it fails with
// config.ErrEditConflict. If edit returns an error or the result does not compile, nothing
// changes and that error (config.Errors for a compile failure) is returned. The config edit
// sees has an empty node-local section apart from defaults; changes to it are ignored.
func (s *Source) Update(ctx context.Context, edit func(*config.Config) error) error {
	return s.update(ctx, "edit", edit)
}

func (s *Source) update(ctx context.Context, note string, edit func(*config.Config) error) error {
	var err error
	for range updateAttemptsMax {
		err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
			// Before the first read, so the transaction's snapshot is taken after the lock.
			if _, err := tx.Exec(ctx, "LOCK TABLE config_revisions IN SHARE ROW EXCLUSIVE MODE"); err != nil {
				return fmt.Errorf("pgconfig: lock: %w (has `queryflux migrate` been run?)", err)
			}
			cfg, err := s.read(ctx, tx)
			if err != nil {
				return err
			}
			config.ApplyDefaults(cfg)
			if err := edit(cfg); err != nil {
				return err
			}
			cfg.QueryFlux = config.QueryFlux{}
			config.ApplyDefaults(cfg)
			snap, err := s.build(cfg)
			if err != nil {
				return err
			}
			return s.write(ctx, tx, cfg, snap.Revision, note)
		})
		if !isSerializationFailure(err) {
			return err
		}
	}
	return fmt.Errorf("pgconfig: update lost %d serialization races: %w (%v)", updateAttemptsMax, config.ErrEditConflict, err)
}

func isSerializationFailure(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == sqlstate.SerializationFailure || pgErr.Code == sqlstate.DeadlockDetected)
}

// Listen LISTENs on Channel with a connection of its own and calls changed once when listening
// starts (so an edit between a caller's last Load and the LISTEN is not missed) and once per
// notification after that. It returns when ctx ends or the connection fails; callers loop.
func (s *Source) Listen(ctx context.Context, changed func()) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgconfig: listen: %w", err)
	}
	// The connection will carry a LISTEN: take it out of the pool for good.
	listener := conn.Hijack()
	defer listener.Close(context.WithoutCancel(ctx))
	if _, err := listener.Exec(ctx, "LISTEN "+Channel); err != nil {
		return fmt.Errorf("pgconfig: listen: %w", err)
	}
	changed()
	for {
		if _, err := listener.WaitForNotification(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("pgconfig: listen: %w", err)
		}
		changed()
	}
}

// The tables' rows, read and written in store.go; the revisions in history.go.
