// Package pgregistry is the Postgres registry.Store: the worker_registry table created by
// migrations/0002_worker_registry.sql. A Put is one round trip (a pgx batch inside one
// transaction), so the control plane's per-tick heartbeat batch costs one write.
//
// determinism: outside the simulator (Postgres store via pgx)
package pgregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queryflux/queryflux/internal/registry"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Store is a registry.Store on a pgx pool.
type Store struct {
	pool *pgxpool.Pool
}

var _ registry.Store = (*Store)(nil)

// Open connects to url. The schema must exist (migrations.Up).
func Open(ctx context.Context, url string) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("pgregistry: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgregistry: ping: %w", err)
	}
	return &Store{pool: pool}, nil
}

// New wraps an existing pool; the caller keeps ownership.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Close closes the pool Open made.
func (s *Store) Close() { s.pool.Close() }

const upsertSQL = `
INSERT INTO worker_registry (name, version, labels, frontends, token_hash, registered_at, state,
                             state_since, last_seen, last_heartbeat, heartbeat, endpoints, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now())
ON CONFLICT (name) DO UPDATE SET
    version = EXCLUDED.version, labels = EXCLUDED.labels, frontends = EXCLUDED.frontends,
    token_hash = EXCLUDED.token_hash, registered_at = EXCLUDED.registered_at, state = EXCLUDED.state,
    state_since = EXCLUDED.state_since, last_seen = EXCLUDED.last_seen,
    last_heartbeat = EXCLUDED.last_heartbeat, heartbeat = EXCLUDED.heartbeat, endpoints = EXCLUDED.endpoints,
    updated_at = now()`

const selectSQL = `SELECT name, version, labels, frontends, token_hash, registered_at, state, state_since,
       last_seen, last_heartbeat, heartbeat, endpoints FROM worker_registry`

// Put implements registry.Store: every record in one transaction, sent as one batch.
func (s *Store) Put(ctx context.Context, records []registry.Record) error {
	if len(records) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	for _, r := range records {
		args, err := rowArgs(registry.Normalize(r))
		if err != nil {
			return err
		}
		batch.Queue(upsertSQL, args...)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("pgregistry: put %d records: %w", len(records), err)
		}
		return nil
	})
}

// Get implements registry.Store.
func (s *Store) Get(ctx context.Context, name string) (registry.Record, error) {
	rows, err := s.pool.Query(ctx, selectSQL+" WHERE name = $1", name)
	if err != nil {
		return registry.Record{}, fmt.Errorf("pgregistry: get: %w", err)
	}
	recs, err := collect(rows)
	if err != nil {
		return registry.Record{}, err
	}
	if len(recs) == 0 {
		return registry.Record{}, registry.ErrNotFound
	}
	return recs[0], nil
}

// List implements registry.Store.
func (s *Store) List(ctx context.Context) ([]registry.Record, error) {
	rows, err := s.pool.Query(ctx, selectSQL+" ORDER BY name COLLATE \"C\"")
	if err != nil {
		return nil, fmt.Errorf("pgregistry: list: %w", err)
	}
	return collect(rows)
}

// Delete implements registry.Store.
func (s *Store) Delete(ctx context.Context, name string) error {
	if _, err := s.pool.Exec(ctx, "DELETE FROM worker_registry WHERE name = $1", name); err != nil {
		return fmt.Errorf("pgregistry: delete: %w", err)
	}
	return nil
}

func rowArgs(r registry.Record) ([]any, error) {
	labels, err := json.Marshal(orEmptyMap(r.Labels))
	if err != nil {
		return nil, err
	}
	frontends, err := json.Marshal(orEmptySlice(r.Frontends))
	if err != nil {
		return nil, err
	}
	endpoints, err := json.Marshal(orEmptyMap(r.Endpoints))
	if err != nil {
		return nil, err
	}
	var hb []byte
	if r.Heartbeat != nil {
		if hb, err = json.Marshal(r.Heartbeat); err != nil {
			return nil, err
		}
	}
	return []any{r.Name, r.Version, labels, frontends, r.TokenHash, nullTime(r.RegisteredAt), r.State,
		nullTime(r.StateSince), nullTime(r.LastSeen), nullTime(r.LastHeartbeat), hb, endpoints}, nil
}

func collect(rows pgx.Rows) ([]registry.Record, error) {
	defer rows.Close()
	out := []registry.Record{}
	for rows.Next() {
		var (
			r                         registry.Record
			labels, fronts, hb, ends  []byte
			registered, since, ls, lh *time.Time
		)
		if err := rows.Scan(&r.Name, &r.Version, &labels, &fronts, &r.TokenHash, &registered, &r.State,
			&since, &ls, &lh, &hb, &ends); err != nil {
			return nil, fmt.Errorf("pgregistry: scan: %w", err)
		}
		if err := json.Unmarshal(labels, &r.Labels); err != nil {
			return nil, fmt.Errorf("pgregistry: %s labels: %w", r.Name, err)
		}
		if err := json.Unmarshal(ends, &r.Endpoints); err != nil {
			return nil, fmt.Errorf("pgregistry: %s endpoints: %w", r.Name, err)
		}
		if err := json.Unmarshal(fronts, &r.Frontends); err != nil {
			return nil, fmt.Errorf("pgregistry: %s frontends: %w", r.Name, err)
		}
		if hb != nil {
			r.Heartbeat = &workerapi.Heartbeat{}
			if err := json.Unmarshal(hb, r.Heartbeat); err != nil {
				return nil, fmt.Errorf("pgregistry: %s heartbeat: %w", r.Name, err)
			}
		}
		r.RegisteredAt, r.StateSince, r.LastSeen, r.LastHeartbeat = deref(registered), deref(since), deref(ls), deref(lh)
		out = append(out, registry.Normalize(r))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgregistry: %w", err)
	}
	return out, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func orEmptyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func orEmptySlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// KeepPublished records skeleton (what the control plane's history gate reads of a published
// revision) as the newest published, moving a revision published before to the front, and
// deletes all but the keep newest (controlplane.PublishedKeeper). One transaction.
func (s *Store) KeepPublished(ctx context.Context, revision string, skeleton []byte, keep int) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO config_published (revision, gate) VALUES ($1, $2::jsonb)
ON CONFLICT (revision) DO UPDATE SET gate = EXCLUDED.gate, ordinal = nextval('config_published_ordinal'), published_at = now()`,
			revision, string(skeleton)); err != nil {
			return fmt.Errorf("pgregistry: keep published revision %s: %w", revision, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM config_published WHERE revision NOT IN
(SELECT revision FROM config_published ORDER BY ordinal DESC LIMIT $1)`, keep); err != nil {
			return fmt.Errorf("pgregistry: forget published revisions past %d: %w", keep, err)
		}
		return nil
	})
}

// Published is the skeletons KeepPublished kept, newest first, at most limit.
func (s *Store) Published(ctx context.Context, limit int) ([][]byte, error) {
	rows, err := s.pool.Query(ctx, `SELECT gate::text FROM config_published ORDER BY ordinal DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("pgregistry: published revisions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([]byte, error) {
		var text string
		err := row.Scan(&text)
		return []byte(text), err
	})
	if err != nil {
		return nil, fmt.Errorf("pgregistry: published revisions: %w", err)
	}
	return out, nil
}
