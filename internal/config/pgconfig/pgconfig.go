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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
)

// Channel is the LISTEN/NOTIFY channel every config edit notifies.
const Channel = "queryflux_config"

// updateAttemptsMax bounds the retries of an Update that lost a serialization race.
const updateAttemptsMax = 5

// Source is the configuration in Postgres.
type Source struct {
	pool *pgxpool.Pool
	own  bool
}

// New uses pool (which the caller closes).
func New(pool *pgxpool.Pool) *Source { return &Source{pool: pool} }

// Open connects to url with a pool of its own, closed by Close.
func Open(ctx context.Context, url string) (*Source, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("pgconfig: connect: %w", err)
	}
	return &Source{pool: pool, own: true}, nil
}

// Close closes the pool if Open made it.
func (s *Source) Close() {
	if s.own {
		s.pool.Close()
	}
}

// Load reads the shared sections in one REPEATABLE READ, read-only transaction and returns them
// as a configuration with local as its node-local section, defaults applied. It does not compile.
func (s *Source) Load(ctx context.Context, local config.QueryFlux) (*config.Config, error) {
	var cfg *config.Config
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			var err error
			cfg, err = read(ctx, tx)
			return err
		})
	if err != nil {
		return nil, err
	}
	cfg.QueryFlux = local
	config.ApplyDefaults(cfg)
	return cfg, nil
}

// Snapshot loads the configuration and builds its worker snapshot (which compiles it first).
func (s *Source) Snapshot(ctx context.Context, local config.QueryFlux, opts snapshot.Options) (*snapshot.WorkerSnapshotV1, error) {
	cfg, err := s.Load(ctx, local)
	if err != nil {
		return nil, err
	}
	return snapshot.Build(cfg, opts)
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

// Update loads the stored configuration, lets edit change it, compiles the result and writes it
// back, all in one SERIALIZABLE transaction (retried when it loses a race with another edit).
// If edit returns an error or the result does not compile, nothing changes and that error
// (config.Errors for a compile failure) is returned. The config edit sees has an empty node-local
// section apart from defaults; changes to it are ignored.
func (s *Source) Update(ctx context.Context, edit func(*config.Config) error) error {
	var err error
	for range updateAttemptsMax {
		err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
			cfg, err := read(ctx, tx)
			if err != nil {
				return err
			}
			config.ApplyDefaults(cfg)
			if err := edit(cfg); err != nil {
				return err
			}
			cfg.QueryFlux = config.QueryFlux{}
			config.ApplyDefaults(cfg)
			if err := config.Compile(cfg); err != nil {
				return err
			}
			return write(ctx, tx, cfg)
		})
		if !isSerializationFailure(err) {
			return err
		}
	}
	return fmt.Errorf("pgconfig: update lost %d serialization races: %w", updateAttemptsMax, err)
}

func isSerializationFailure(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
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

// ------------------------------------------------------------------------------------ storage

// credRow is credentials as stored: plain strings (config.Secret redacts when marshaled).
type credRow struct {
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	Token    string `json:"token,omitempty"`
}

// variantRow is config.ClusterOverrides as stored.
type variantRow struct {
	Endpoint          *string           `json:"endpoint,omitempty"`
	Database          *string           `json:"database,omitempty"`
	Credentials       *credRow          `json:"credentials,omitempty"`
	MaxRunningQueries *int              `json:"maxRunningQueries,omitempty"`
	Enabled           *bool             `json:"enabled,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Options           map[string]string `json:"options,omitempty"`
}

func toCredRow(c config.Credentials) credRow {
	return credRow{User: c.User, Password: c.Password.Reveal(), Token: c.Token.Reveal()}
}

func (c credRow) credentials() config.Credentials {
	return config.Credentials{User: c.User, Password: config.Secret(c.Password), Token: config.Secret(c.Token)}
}

func read(ctx context.Context, tx pgx.Tx) (*config.Config, error) {
	cfg := &config.Config{}
	if err := readClusters(ctx, tx, cfg); err != nil {
		return nil, err
	}
	if err := readGroups(ctx, tx, cfg); err != nil {
		return nil, err
	}
	if err := readRouters(ctx, tx, cfg); err != nil {
		return nil, err
	}
	if err := readSections(ctx, tx, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func readClusters(ctx context.Context, tx pgx.Tx, cfg *config.Config) error {
	rows, err := tx.Query(ctx, `SELECT name, engine, endpoint, database, cred_user, cred_password, cred_token,
		max_running_queries, enabled, labels, options, variants FROM config_clusters ORDER BY position, name`)
	if err != nil {
		return fmt.Errorf("pgconfig: read clusters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c config.Cluster
		var cred credRow
		var enabled bool
		var variants map[string]variantRow
		if err := rows.Scan(&c.Name, &c.Engine, &c.Endpoint, &c.Database, &cred.User, &cred.Password, &cred.Token,
			&c.MaxRunningQueries, &enabled, &c.Labels, &c.Options, &variants); err != nil {
			return fmt.Errorf("pgconfig: read clusters: %w", err)
		}
		c.Credentials = cred.credentials()
		c.Enabled = &enabled
		for _, name := range sortedKeys(variants) {
			v := variants[name]
			o := config.ClusterOverrides{Endpoint: v.Endpoint, Database: v.Database, MaxRunningQueries: v.MaxRunningQueries,
				Enabled: v.Enabled, Labels: v.Labels, Options: v.Options}
			if v.Credentials != nil {
				creds := v.Credentials.credentials()
				o.Credentials = &creds
			}
			if c.Variants == nil {
				c.Variants = map[string]config.ClusterOverrides{}
			}
			c.Variants[name] = o
		}
		cfg.Clusters = append(cfg.Clusters, c)
	}
	return rows.Err()
}

func readGroups(ctx context.Context, tx pgx.Tx, cfg *config.Config) error {
	rows, err := tx.Query(ctx, `SELECT name, spec FROM config_cluster_groups ORDER BY position, name`)
	if err != nil {
		return fmt.Errorf("pgconfig: read groups: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var g config.ClusterGroup
		if err := rows.Scan(&name, &g); err != nil {
			return fmt.Errorf("pgconfig: read groups: %w", err)
		}
		g.Name = name
		cfg.ClusterGroups = append(cfg.ClusterGroups, g)
	}
	return rows.Err()
}

func readRouters(ctx context.Context, tx pgx.Tx, cfg *config.Config) error {
	rows, err := tx.Query(ctx, `SELECT spec FROM config_routers ORDER BY position`)
	if err != nil {
		return fmt.Errorf("pgconfig: read routers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r config.Router
		if err := rows.Scan(&r); err != nil {
			return fmt.Errorf("pgconfig: read routers: %w", err)
		}
		cfg.Routers = append(cfg.Routers, r)
	}
	return rows.Err()
}

// sections maps each config_sections row to the field it fills.
func sections(cfg *config.Config) map[string]any {
	return map[string]any{
		"routingFallback": &cfg.RoutingFallback,
		"translation":     &cfg.Translation,
		"settings":        &cfg.Settings,
		"historyPolicy":   &cfg.HistoryPolicy,
	}
}

func readSections(ctx context.Context, tx pgx.Tx, cfg *config.Config) error {
	rows, err := tx.Query(ctx, `SELECT section, value FROM config_sections ORDER BY section`)
	if err != nil {
		return fmt.Errorf("pgconfig: read sections: %w", err)
	}
	defer rows.Close()
	fields := sections(cfg)
	for rows.Next() {
		var name string
		var raw []byte
		if err := rows.Scan(&name, &raw); err != nil {
			return fmt.Errorf("pgconfig: read sections: %w", err)
		}
		field, ok := fields[name]
		if !ok {
			return fmt.Errorf("pgconfig: unknown section %q", name)
		}
		if err := json.Unmarshal(raw, field); err != nil {
			return fmt.Errorf("pgconfig: section %s: %w", name, err)
		}
	}
	return rows.Err()
}

func write(ctx context.Context, tx pgx.Tx, cfg *config.Config) error {
	for _, table := range []string{"config_clusters", "config_cluster_groups", "config_routers", "config_sections"} {
		if _, err := tx.Exec(ctx, "DELETE FROM "+table); err != nil {
			return fmt.Errorf("pgconfig: clear %s: %w", table, err)
		}
	}
	batch := &pgx.Batch{}
	for i, c := range cfg.Clusters {
		variants := map[string]variantRow{}
		for _, name := range sortedKeys(c.Variants) {
			o := c.Variants[name]
			v := variantRow{Endpoint: o.Endpoint, Database: o.Database, MaxRunningQueries: o.MaxRunningQueries,
				Enabled: o.Enabled, Labels: o.Labels, Options: o.Options}
			if o.Credentials != nil {
				cred := toCredRow(*o.Credentials)
				v.Credentials = &cred
			}
			variants[name] = v
		}
		cred := toCredRow(c.Credentials)
		batch.Queue(`INSERT INTO config_clusters (name, position, engine, endpoint, database, cred_user, cred_password,
			cred_token, max_running_queries, enabled, labels, options, variants)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			c.Name, i, c.Engine, c.Endpoint, c.Database, cred.User, cred.Password, cred.Token,
			c.MaxRunningQueries, c.IsEnabled(), jsonMap(c.Labels), jsonMap(c.Options), variants)
	}
	for i, g := range cfg.ClusterGroups {
		batch.Queue(`INSERT INTO config_cluster_groups (name, position, spec) VALUES ($1, $2, $3)`, g.Name, i, g)
	}
	for i, r := range cfg.Routers {
		batch.Queue(`INSERT INTO config_routers (position, spec) VALUES ($1, $2)`, i, r)
	}
	fields := sections(cfg)
	for _, name := range sortedKeys(fields) {
		raw, err := json.Marshal(fields[name])
		if err != nil {
			return fmt.Errorf("pgconfig: section %s: %w", name, err)
		}
		batch.Queue(`INSERT INTO config_sections (section, value) VALUES ($1, $2)`, name, raw)
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("pgconfig: write: %w", err)
	}
	return nil
}

// jsonMap stores a nil map as {} rather than null.
func jsonMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
