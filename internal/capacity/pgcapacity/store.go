// Package pgcapacity is the Postgres CapacityStore and SweepCoordinator of the control plane
// (tables and functions of migrations/0003_capacity.sql).
//
// determinism: outside the simulator (talks to Postgres through pgx; batches calls with goroutines)
//
// How the cap holds: capacity_clusters keeps, per cluster, running (the number of lease rows)
// and generation. capacity_apply (one call per batch, one transaction) first locks the counter
// rows it touches with SELECT ... FOR UPDATE, in cluster order; a concurrent batch on the same
// cluster waits there until this one commits, then reads the committed counter. Under the lock
// it deletes released leases and lowers running by the rows actually deleted, grants each
// acquire only while running < its cap, inserts the granted leases and writes running and
// generation back, all in the same transaction. So every grant of a cluster is serialized on
// its row lock and checked against an exact, current count: no interleaving of batches,
// replicas or connections can exceed the cap (TestConcurrentAcquiresNeverExceedCap counts
// independently, from two stores on one database). The sweep and eviction take the same locks
// in the same order.
//
// How it stays fast: concurrent acquires are batched into one capacity_apply call (one round
// trip, one commit), and so are concurrent releases; an uncontended call is one round trip on
// its own. Release batches commit asynchronously (see runBatch for why that is safe).
package pgcapacity

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/capacity"
)

// Limits.
const (
	batchMax     = 256              // requests per acquire or release batch
	retriesMax   = 5                // on deadlock or serialization failure
	batchTimeout = 10 * time.Second // one batch's round trip, independent of its callers' contexts
)

// Store is the Postgres store. Create it with New.
type Store struct {
	pool *pgxpool.Pool

	acquires *batcher[op, opResult] // committed durably
	releases *batcher[op, opResult] // committed asynchronously (see runBatch)

	stats struct {
		sync.Mutex
		Stats
	}
}

// Stats count the store's batches since New.
type Stats struct {
	Batches    int64         // capacity_apply transactions
	Ops        int64         // acquires and releases in them
	BatchTotal time.Duration // their summed round-trip time
}

// Stats returns the batch counters.
func (s *Store) Stats() Stats {
	s.stats.Lock()
	defer s.stats.Unlock()
	return s.stats.Stats
}

// New returns a store on pool, whose database must be migrated (migrations.Up).
func New(pool *pgxpool.Pool) *Store {
	s := &Store{pool: pool}
	s.acquires = newBatcher(batchMax, func(ops []op) ([]opResult, error) { return s.runBatch(ops, false) })
	s.releases = newBatcher(batchMax, func(ops []op) ([]opResult, error) { return s.runBatch(ops, true) })
	return s
}

var (
	_ capacity.CapacityStore    = (*Store)(nil)
	_ capacity.SweepCoordinator = (*Store)(nil)
)

// op is one acquire (release nil) or one release in a batch.
type op struct {
	release *capacity.LeaseRef
	cluster string
	holder  string
	limit   int
	expires time.Time
}

// opResult is a granted generation (0: denied) or whether a release freed its lease.
type opResult struct {
	generation int64
	released   bool
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
	b := s.acquires
	c := b.submit(op{cluster: cluster, holder: holder, limit: limit, expires: expires})
	res, err, abandoned := awaitCtx(ctx, b, c)
	gen := res.generation
	if abandoned {
		// The caller left; a lease granted after that would leak until swept: free it.
		go func() {
			if res, err := b.await(c); err == nil && res.generation > 0 {
				gen := res.generation
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

// runBatch frees the batch's releases, then grants its acquires in order, in one transaction.
//
// A batch of releases only is committed with synchronous_commit off: its row locks are held
// for the commit record's write, not its flush, so releases cost grants almost nothing. That is
// safe: if Postgres crashes and loses a release, the lease stays until it expires (its holder
// stopped renewing it) and the sweep reclaims it; the cap only ever errs on the safe side.
// Acquires are always durable: a lost grant could hand its generation out twice. WAL is written
// in order, so a durable grant also makes every release before it durable.
func (s *Store) runBatch(ops []op, async bool) ([]opResult, error) {
	lock := map[string]bool{}
	var ids, clusters, holders []string
	var gens []int64
	var limits []int32
	var expires []time.Time
	for _, o := range ops {
		if o.release != nil {
			ids, gens = append(ids, o.release.ID), append(gens, o.release.Generation)
			lock[o.release.Cluster()] = true
			continue
		}
		clusters, holders = append(clusters, o.cluster), append(holders, o.holder)
		limits, expires = append(limits, int32(o.limit)), append(expires, o.expires)
		lock[o.cluster] = true
	}
	locked := make([]string, 0, len(lock))
	for c := range lock {
		locked = append(locked, c)
	}
	sort.Strings(locked) // for stable arguments only: the function sorts its locks itself
	var released []string
	var granted []int64
	start := time.Now()
	defer func() {
		s.stats.Lock()
		s.stats.Batches++
		s.stats.Ops += int64(len(ops))
		s.stats.BatchTotal += time.Since(start)
		s.stats.Unlock()
	}()
	args := []any{locked, orEmpty(ids), orEmpty(gens), orEmpty(clusters), orEmpty(holders), orEmpty(limits), orEmpty(expires)}
	const apply = "SELECT released, granted FROM capacity_apply($1, $2, $3, $4, $5, $6, $7)"
	err := s.retry(func(ctx context.Context) error {
		if !async || len(holders) > 0 {
			return s.pool.QueryRow(ctx, apply, args...).Scan(&released, &granted)
		}
		// One round trip: the four statements go out as one pipeline.
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue("SET LOCAL synchronous_commit TO off")
		b.Queue(apply, args...).QueryRow(func(row pgx.Row) error { return row.Scan(&released, &granted) })
		b.Queue("COMMIT")
		return s.pool.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("pgcapacity: batch: %w", err)
	}
	if len(granted) != len(holders) {
		panic(fmt.Sprintf("pgcapacity: capacity_apply answered %d grants for %d acquires", len(granted), len(holders)))
	}
	// Each lease is freed at most once, by the first release in the batch that names it.
	freed := make(map[string]bool, len(released))
	for _, id := range released {
		freed[id] = true
	}
	out := make([]opResult, len(ops))
	next := 0
	for i, o := range ops {
		if o.release != nil {
			out[i].released = freed[o.release.ID]
			delete(freed, o.release.ID)
			continue
		}
		out[i].generation = granted[next]
		next++
	}
	return out, nil
}

// orEmpty makes a nil slice an empty array (NULL would make capacity_apply's loops skip).
func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
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
		b *batcher[op, opResult]
		c *call[op, opResult]
	}
	calls := make([]pending, 0, len(refs))
	for _, r := range refs {
		cluster := r.Cluster()
		if cluster == "" {
			continue // no such lease can exist
		}
		calls = append(calls, pending{s.releases, s.releases.submit(op{release: &r})})
	}
	n := 0
	var firstErr error
	for _, p := range calls { // always wait for all: every leader must lead
		res, err := p.b.await(p.c)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if res.released {
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
