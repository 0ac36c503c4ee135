// Package pgcapacity is the Postgres CapacityStore and SweepCoordinator of the control plane
// (tables and functions of migrations/0003_capacity.sql).
//
// determinism: outside the simulator (talks to Postgres through pgx; batches calls with goroutines)
//
// How the cap holds: capacity_acquire updates the cluster's counter row with
// "UPDATE ... WHERE running < cap RETURNING generation" and inserts the lease in the same
// transaction; the row lock serializes every grant of a cluster, and Postgres re-checks the
// WHERE clause against the newest row version after waiting for the lock, so no interleaving
// can grant past the cap. Every release decrements the counter in the transaction that deletes
// the lease rows, so the counter is exactly the number of leases held.
//
// How it stays fast: concurrent acquires of one cluster (and releases of one cluster) are
// batched into one function call, i.e. one round trip and one commit; an uncontended call is one
// round trip on its own. Batches of one cluster never wait on another cluster's rows.
package pgcapacity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/capacity"
)

// Limits.
const (
	batchMax       = 256              // requests per acquire or release batch
	retriesMax     = 5                // on deadlock or serialization failure
	batchTimeout   = 10 * time.Second // one batch's round trip, independent of its callers' contexts
	abandonWaitMax = 30 * time.Second
)

// Store is the Postgres store. Create it with New.
type Store struct {
	pool *pgxpool.Pool

	mu       sync.Mutex
	acquires map[string]*batcher[acquireReq, int64]       // by cluster
	releases map[string]*batcher[capacity.LeaseRef, bool] // by cluster
}

// New returns a store on pool, whose database must be migrated (migrations.Up).
func New(pool *pgxpool.Pool) *Store {
	return &Store{
		pool:     pool,
		acquires: map[string]*batcher[acquireReq, int64]{},
		releases: map[string]*batcher[capacity.LeaseRef, bool]{},
	}
}

var (
	_ capacity.CapacityStore    = (*Store)(nil)
	_ capacity.SweepCoordinator = (*Store)(nil)
)

type acquireReq struct {
	holder  string
	limit   int
	expires time.Time
}

func (s *Store) acquireBatcher(cluster string) *batcher[acquireReq, int64] {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.acquires[cluster]
	if b == nil {
		b = newBatcher(batchMax, func(reqs []acquireReq) ([]int64, error) { return s.runAcquire(cluster, reqs) })
		s.acquires[cluster] = b
	}
	return b
}

func (s *Store) releaseBatcher(cluster string) *batcher[capacity.LeaseRef, bool] {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.releases[cluster]
	if b == nil {
		b = newBatcher(batchMax, s.runRelease)
		s.releases[cluster] = b
	}
	return b
}

// Acquire implements capacity.CapacityStore.
func (s *Store) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	if err := capacity.CheckAcquire(cluster, holder, limit, ttl); err != nil {
		return capacity.Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return capacity.Lease{}, err
	}
	expires := capacity.Timestamp(now.Add(ttl))
	b := s.acquireBatcher(cluster)
	c := b.submit(acquireReq{holder: holder, limit: limit, expires: expires})
	gen, err, abandoned := awaitCtx(ctx, b, c)
	if abandoned {
		// The caller left; a lease granted after that would leak until swept: free it.
		go func() {
			if gen, err := b.await(c); err == nil && gen > 0 {
				_, _ = s.ReleaseBatch(context.Background(), []capacity.LeaseRef{{ID: capacity.LeaseID(cluster, gen), Generation: gen}})
			}
		}()
		return capacity.Lease{}, ctx.Err()
	}
	if err != nil {
		return capacity.Lease{}, err
	}
	if gen == 0 {
		return capacity.Lease{}, capacity.ErrAtCapacity
	}
	return capacity.Lease{ID: capacity.LeaseID(cluster, gen), Cluster: cluster, Holder: holder, Generation: gen, ExpiresAt: expires}, nil
}

// awaitCtx waits for c's result unless ctx ends first (abandoned).
func awaitCtx[Req, Res any](ctx context.Context, b *batcher[Req, Res], c *call[Req, Res]) (res Res, err error, abandoned bool) {
	select {
	case <-c.done:
		res, err = b.await(c)
		return res, err, false
	case <-ctx.Done():
		return res, nil, true
	}
}

func (s *Store) runAcquire(cluster string, reqs []acquireReq) ([]int64, error) {
	holders := make([]string, len(reqs))
	limits := make([]int32, len(reqs))
	expires := make([]time.Time, len(reqs))
	for i, r := range reqs {
		holders[i], limits[i], expires[i] = r.holder, int32(r.limit), r.expires
	}
	var gens []int64
	err := s.retry(func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, "SELECT capacity_acquire($1, $2, $3, $4)", cluster, holders, limits, expires).Scan(&gens)
	})
	if err != nil {
		return nil, fmt.Errorf("pgcapacity: acquire %q: %w", cluster, err)
	}
	return gens, nil
}

func (s *Store) runRelease(refs []capacity.LeaseRef) ([]bool, error) {
	ids := make([]string, len(refs))
	gens := make([]int64, len(refs))
	for i, r := range refs {
		ids[i], gens[i] = r.ID, r.Generation
	}
	var released []string
	err := s.retry(func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, "SELECT capacity_release($1, $2)", ids, gens).Scan(&released)
	})
	if err != nil {
		return nil, fmt.Errorf("pgcapacity: release: %w", err)
	}
	// Each lease is released at most once, by the first ref in this batch that names it.
	freed := map[string]bool{}
	for _, id := range released {
		freed[id] = true
	}
	out := make([]bool, len(refs))
	for i, r := range refs {
		if freed[r.ID] {
			out[i] = true
			delete(freed, r.ID)
		}
	}
	return out, nil
}

// retry runs fn in a fresh context of its own until it does not fail with a deadlock or a
// serialization failure (each attempt is one whole transaction, so it is safe to repeat).
func (s *Store) retry(fn func(ctx context.Context) error) error {
	var err error
	for attempt := 0; attempt < retriesMax; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		err = fn(ctx)
		cancel()
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || (pgErr.Code != "40P01" && pgErr.Code != "40001") {
			return err
		}
	}
	return err
}

// Renew implements capacity.CapacityStore.
func (s *Store) Renew(ctx context.Context, ref capacity.LeaseRef, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	if err := capacity.CheckTTL(ttl); err != nil {
		return capacity.Lease{}, err
	}
	l := capacity.Lease{ID: ref.ID, Generation: ref.Generation}
	err := s.pool.QueryRow(ctx, `UPDATE capacity_leases SET expires_at = $3
		WHERE id = $1 AND generation = $2 AND expires_at > $4
		RETURNING cluster, holder, expires_at`,
		ref.ID, ref.Generation, capacity.Timestamp(now.Add(ttl)), capacity.Timestamp(now)).Scan(&l.Cluster, &l.Holder, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return capacity.Lease{}, capacity.ErrStaleGeneration
	}
	if err != nil {
		return capacity.Lease{}, fmt.Errorf("pgcapacity: renew: %w", err)
	}
	l.ExpiresAt = capacity.Timestamp(l.ExpiresAt)
	return l, nil
}

// Release implements capacity.CapacityStore.
func (s *Store) Release(ctx context.Context, ref capacity.LeaseRef) error {
	n, err := s.ReleaseBatch(ctx, []capacity.LeaseRef{ref})
	if err != nil {
		return err
	}
	if n == 0 {
		return capacity.ErrStaleGeneration
	}
	return nil
}

// ReleaseBatch implements capacity.CapacityStore. Refs are grouped by cluster and each group
// joins that cluster's release batch.
func (s *Store) ReleaseBatch(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	if err := capacity.CheckRefs(refs); err != nil {
		return 0, err
	}
	type pending struct {
		b *batcher[capacity.LeaseRef, bool]
		c *call[capacity.LeaseRef, bool]
	}
	calls := make([]pending, 0, len(refs))
	for _, r := range refs {
		cluster := r.Cluster()
		if cluster == "" {
			continue // no such lease can exist
		}
		b := s.releaseBatcher(cluster)
		calls = append(calls, pending{b, b.submit(r)})
	}
	n := 0
	var firstErr error
	for _, p := range calls { // always wait for all: every leader must lead
		ok, err := p.b.await(p.c)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if ok {
			n++
		}
	}
	return n, firstErr
}

// List implements capacity.CapacityStore.
func (s *Store) List(ctx context.Context, cluster string) ([]capacity.Lease, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, cluster, generation, holder, expires_at FROM capacity_leases
		WHERE $1 = '' OR cluster = $1`, cluster)
	if err != nil {
		return nil, fmt.Errorf("pgcapacity: list: %w", err)
	}
	return collectLeases(rows)
}

// SweepStale implements capacity.CapacityStore.
func (s *Store) SweepStale(ctx context.Context, now time.Time) ([]capacity.Lease, error) {
	return s.releaseWhere(ctx, capacity.Timestamp(now), nil)
}

// ReleaseHolder implements capacity.CapacityStore.
func (s *Store) ReleaseHolder(ctx context.Context, holder string) (int, error) {
	if err := capacity.CheckName("holder", holder); err != nil {
		return 0, err
	}
	ls, err := s.releaseWhere(ctx, nil, &holder)
	return len(ls), err
}

func (s *Store) releaseWhere(ctx context.Context, now any, holder *string) ([]capacity.Lease, error) {
	var out []capacity.Lease
	err := s.retry(func(context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT id, cluster, generation, holder, expires_at
			FROM capacity_release_where($1, $2)`, now, holder)
		if err != nil {
			return err
		}
		out, err = collectLeases(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgcapacity: release leases: %w", err)
	}
	return out, nil
}

func collectLeases(rows pgx.Rows) ([]capacity.Lease, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (capacity.Lease, error) {
		var l capacity.Lease
		err := r.Scan(&l.ID, &l.Cluster, &l.Generation, &l.Holder, &l.ExpiresAt)
		l.ExpiresAt = capacity.Timestamp(l.ExpiresAt)
		return l, err
	})
	if err != nil {
		return nil, err
	}
	capacity.SortLeases(out) // Go's byte order, whatever the database's collation
	return out, nil
}

// AcquireSweepLock implements capacity.SweepCoordinator.
func (s *Store) AcquireSweepLock(ctx context.Context, name, owner string, ttl time.Duration, now time.Time) (capacity.SweepLock, error) {
	if err := capacity.CheckLockArgs(name, owner, ttl); err != nil {
		return capacity.SweepLock{}, err
	}
	l := capacity.SweepLock{Name: name, Owner: owner}
	err := s.pool.QueryRow(ctx, `INSERT INTO capacity_sweep_locks AS s (name, owner, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
		WHERE s.owner = EXCLUDED.owner OR s.expires_at <= $4
		RETURNING expires_at`, name, owner, capacity.Timestamp(now.Add(ttl)), capacity.Timestamp(now)).Scan(&l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return capacity.SweepLock{}, capacity.ErrLockHeld
	}
	if err != nil {
		return capacity.SweepLock{}, fmt.Errorf("pgcapacity: sweep lock: %w", err)
	}
	l.ExpiresAt = capacity.Timestamp(l.ExpiresAt)
	return l, nil
}

// ReleaseSweepLock implements capacity.SweepCoordinator.
func (s *Store) ReleaseSweepLock(ctx context.Context, name, owner string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM capacity_sweep_locks WHERE name = $1 AND owner = $2`, name, owner); err != nil {
		return fmt.Errorf("pgcapacity: release sweep lock: %w", err)
	}
	return nil
}
