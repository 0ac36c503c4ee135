// Package pgcapacity is the Postgres CapacityStore and SweepCoordinator of the control plane
// (tables and functions of migrations/0003_capacity.sql, 0007 and 0010), and the retry-mode
// waiting record that every control-plane replica shares (capacity_waiters, 0010).
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
// One clock: every expiry is stamped and compared by the database's clock (capacity_now in
// migrations/0007), never a control plane's, so a replica whose wall clock steps or is skewed
// cannot shorten a lease. The callers' now arguments are ignored (a test may opt in to them).
//
// How it stays fast: concurrent acquires are batched into one capacity_apply call (one round
// trip, one commit), and so are concurrent releases; an uncontended call is one round trip on
// its own. Release batches commit asynchronously (see runBatch for why that is safe).
package pgcapacity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/sqlstate"
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
	// seconds is each call's time by operation (WithMetrics; nil: not measured).
	seconds *prometheus.HistogramVec
	// callerClock makes the store read the callers' now instead of the database's clock: the
	// model test drives time itself (export_test.go).
	callerClock bool
	// notifyFreed: each release batch NOTIFYs FreedChannel of its clusters (NotifyFreed).
	// origin names this store in its notices, so that its own watch skips them.
	notifyFreed atomic.Bool
	origin      string
	// notifyDenied: MarkDenied NOTIFYs DeniedChannel (NotifyDenied), as notices says.
	notifyDenied atomic.Bool
	notices      deniedNotices
}

// clock is the now argument of the SQL functions: NULL for the database's clock.
func (s *Store) clock(now time.Time) any {
	if s.callerClock {
		return capacity.Timestamp(now)
	}
	return nil
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
	s := &Store{pool: pool, origin: newOrigin()}
	s.acquires = newBatcher(batchMax, func(ops []op) ([]opResult, error) { return s.runBatch(ops, false) })
	s.releases = newBatcher(batchMax, func(ops []op) ([]opResult, error) { return s.runBatch(ops, true) })
	return s
}

// WithMetrics makes the store measure each call, from the caller's side (an acquire's or a
// release's wait for the batch in flight included), in queryflux_capacity_store_seconds on
// reg, by operation (capacity.StoreAcquire, ...). These are the lease table's share of a slot's
// hand-off from one worker to the next, and the service times a replay gives the simulator.
func (s *Store) WithMetrics(reg prometheus.Registerer) *Store {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "queryflux_capacity_store_seconds",
		Help:    "Time of the control plane's capacity lease store calls (PostgreSQL), by operation.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	}, []string{"op"})
	if err := reg.Register(h); err != nil {
		already, ok := err.(prometheus.AlreadyRegisteredError)
		if !ok {
			panic(err)
		}
		h = already.ExistingCollector.(*prometheus.HistogramVec)
	}
	s.seconds = h
	return s
}

// timed starts measuring one call of op; the returned function ends it.
func (s *Store) timed(op string) func() {
	if s.seconds == nil {
		return func() {}
	}
	start := time.Now()
	return func() { s.seconds.WithLabelValues(op).Observe(time.Since(start).Seconds()) }
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
	request string // the acquire's name ("" none)
	limit   int
	ttl     time.Duration
	now     any // the store's clock argument
}

// opResult is a granted generation (0: denied) and when it expires, or whether a release
// freed its lease or was refused (another holder holds it).
type opResult struct {
	generation int64
	expires    time.Time
	released   bool
	foreign    bool
}

// Acquire implements capacity.CapacityStore.
func (s *Store) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	return s.AcquireNamed(ctx, cluster, holder, "", limit, ttl, now)
}

// AcquireNamed implements capacity.NamedStore: the lease row keeps request (migration 0014).
func (s *Store) AcquireNamed(ctx context.Context, cluster, holder, request string, limit int, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	if err := capacity.CheckAcquire(cluster, holder, limit, ttl); err != nil {
		return capacity.Lease{}, err
	}
	if err := capacity.CheckRequestID(request); err != nil {
		return capacity.Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return capacity.Lease{}, err
	}
	defer s.timed(capacity.StoreAcquire)()
	b := s.acquires
	c := b.submit(op{cluster: cluster, holder: holder, request: request, limit: limit, ttl: ttl, now: s.clock(now)})
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
	return capacity.Lease{ID: capacity.LeaseID(cluster, gen), Cluster: cluster, Holder: holder, Generation: gen,
		ExpiresAt: res.expires, TTLMillis: ttl.Milliseconds()}, nil
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
	var ids, relHolders, clusters, holders, requests []string
	var gens, ttls []int64
	var limits []int32
	var now any
	for _, o := range ops {
		if o.release != nil {
			ids, gens = append(ids, o.release.ID), append(gens, o.release.Generation)
			relHolders = append(relHolders, o.release.Holder)
			lock[o.release.Cluster()] = true
			continue
		}
		clusters, holders, requests = append(clusters, o.cluster), append(holders, o.holder), append(requests, o.request)
		limits, ttls = append(limits, int32(o.limit)), append(ttls, o.ttl.Milliseconds())
		lock[o.cluster] = true
		now = o.now // the same for every op of one store
	}
	locked := make([]string, 0, len(lock))
	for c := range lock {
		locked = append(locked, c)
	}
	sort.Strings(locked) // for stable arguments only: the function sorts its locks itself
	var namedIDs, namedHolders []string
	var namedGens, granted []int64
	var stamped time.Time
	start := time.Now()
	defer func() {
		s.stats.Lock()
		s.stats.Batches++
		s.stats.Ops += int64(len(ops))
		s.stats.BatchTotal += time.Since(start)
		s.stats.Unlock()
	}()
	args := []any{locked, orEmpty(ids), orEmpty(gens), orEmpty(relHolders), orEmpty(clusters), orEmpty(holders),
		orEmpty(limits), orEmpty(ttls), now, orEmpty(requests)}
	const apply = "SELECT named_ids, named_gens, named_holders, granted, stamped FROM capacity_apply($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
	scan := func(row pgx.Row) error { return row.Scan(&namedIDs, &namedGens, &namedHolders, &granted, &stamped) }
	err := s.retry(func(ctx context.Context) error {
		if !async || len(holders) > 0 {
			return scan(s.pool.QueryRow(ctx, apply, args...))
		}
		// One round trip: the four statements go out as one pipeline.
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue("SET LOCAL synchronous_commit TO off")
		b.Queue(apply, args...).QueryRow(scan)
		if s.notifyFreed.Load() {
			// In the transaction: delivered at its commit, with no round trip of its own.
			b.Queue("SELECT pg_notify($1, $2)", FreedChannel, freedNotice(s.origin, locked))
		}
		b.Queue("COMMIT")
		return s.pool.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("pgcapacity: batch: %w", err)
	}
	if len(granted) != len(holders) {
		panic(fmt.Sprintf("pgcapacity: capacity_apply answered %d grants for %d acquires", len(granted), len(holders)))
	}
	// Each lease is freed by the first release in the batch that may free it (no claim, or its
	// holder's); a claim by another holder before that is refused, any release after it is stale.
	holderOf := make(map[capacity.LeaseRef]string, len(namedIDs))
	for i, id := range namedIDs {
		holderOf[capacity.LeaseRef{ID: id, Generation: namedGens[i]}] = namedHolders[i]
	}
	out := make([]opResult, len(ops))
	next := 0
	for i, o := range ops {
		if o.release != nil {
			key := capacity.LeaseRef{ID: o.release.ID, Generation: o.release.Generation}
			holder, held := holderOf[key]
			switch {
			case !held:
			case o.release.Holder != "" && o.release.Holder != holder:
				out[i].foreign = true
			default:
				out[i].released = true
				delete(holderOf, key)
			}
			continue
		}
		out[i].generation = granted[next]
		out[i].expires = capacity.Timestamp(stamped.Add(o.ttl))
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
		if err == nil || !errors.As(err, &pgErr) || (pgErr.Code != sqlstate.DeadlockDetected && pgErr.Code != sqlstate.SerializationFailure) {
			return err
		}
	}
	return err
}

// Named implements capacity.NamedStore (a scan of the cluster's leases: it is asked only
// for an acquire whose answer was lost).
func (s *Store) Named(ctx context.Context, cluster, holder, request string) (capacity.Lease, bool, error) {
	if err := capacity.CheckRequestID(request); err != nil || request == "" {
		return capacity.Lease{}, false, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, cluster, generation, holder, expires_at, revoked, ttl_ms FROM capacity_leases
		WHERE cluster = $1 AND holder = $2 AND request = $3 ORDER BY generation DESC LIMIT 1`, cluster, holder, request)
	if err != nil {
		return capacity.Lease{}, false, fmt.Errorf("pgcapacity: named lease: %w", err)
	}
	ls, err := collectLeases(rows)
	if err != nil || len(ls) == 0 {
		return capacity.Lease{}, false, err
	}
	return ls[0], true, nil
}

// Renew implements capacity.CapacityStore.
func (s *Store) Renew(ctx context.Context, ref capacity.LeaseRef, ttl time.Duration, now time.Time) (capacity.Lease, error) {
	if err := capacity.CheckTTL(ttl); err != nil {
		return capacity.Lease{}, err
	}
	if err := capacity.CheckRefs([]capacity.LeaseRef{ref}); err != nil {
		return capacity.Lease{}, err
	}
	l := capacity.Lease{ID: ref.ID, Generation: ref.Generation, TTLMillis: ttl.Milliseconds()}
	defer s.timed(capacity.StoreRenew)()
	err := s.pool.QueryRow(ctx, `WITH n AS (SELECT capacity_now($5) AS t)
		UPDATE capacity_leases SET expires_at = n.t + $3 * interval '1 millisecond', ttl_ms = $3 FROM n
		WHERE id = $1 AND generation = $2 AND NOT revoked AND expires_at > n.t AND ($4 = '' OR holder = $4)
		RETURNING cluster, holder, expires_at`,
		ref.ID, ref.Generation, ttl.Milliseconds(), ref.Holder, s.clock(now)).Scan(&l.Cluster, &l.Holder, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return capacity.Lease{}, s.whyNot(ctx, ref)
	}
	if err != nil {
		return capacity.Lease{}, fmt.Errorf("pgcapacity: renew: %w", err)
	}
	l.ExpiresAt = capacity.Timestamp(l.ExpiresAt)
	return l, nil
}

// whyNot tells why ref could not be renewed: another holder holds it or it was never granted
// (ErrNotHolder), or it is not held under that generation any more, expired or revoked
// (ErrStaleGeneration).
func (s *Store) whyNot(ctx context.Context, ref capacity.LeaseRef) error {
	if ref.Holder == "" {
		return capacity.ErrStaleGeneration
	}
	var holder *string
	var current int64
	err := s.pool.QueryRow(ctx, `SELECT (SELECT holder FROM capacity_leases WHERE id = $1 AND generation = $2),
		coalesce((SELECT generation FROM capacity_clusters WHERE cluster = $3), 0)`,
		ref.ID, ref.Generation, ref.Cluster()).Scan(&holder, &current)
	switch {
	case err != nil:
		return fmt.Errorf("pgcapacity: renew: %w", err)
	case holder == nil:
		return cmp.Or(capacity.NeverGranted(ref, current), capacity.ErrStaleGeneration)
	case *holder != ref.Holder:
		return capacity.ErrNotHolder
	}
	return capacity.ErrStaleGeneration
}

// neverGranted counts the claimed refs that ReleaseBatch found not held and whose generation
// their cluster has not reached. Generations only grow, so a generation beyond the one read
// after the batch was beyond it during the batch too.
func (s *Store) neverGranted(ctx context.Context, refs []capacity.LeaseRef) (int, error) {
	clusters := make([]string, len(refs))
	for i, r := range refs {
		clusters[i] = r.Cluster()
	}
	rows, err := s.pool.Query(ctx, `SELECT cluster, generation FROM capacity_clusters WHERE cluster = ANY ($1)`, clusters)
	if err != nil {
		return 0, fmt.Errorf("pgcapacity: release: %w", err)
	}
	current := map[string]int64{}
	var cluster string
	var gen int64
	_, err = pgx.ForEachRow(rows, []any{&cluster, &gen}, func() error { current[cluster] = gen; return nil })
	if err != nil {
		return 0, fmt.Errorf("pgcapacity: release: %w", err)
	}
	n := 0
	for _, r := range refs {
		if capacity.NeverGranted(r, current[r.Cluster()]) != nil {
			n++
		}
	}
	return n, nil
}

// Release implements capacity.CapacityStore.
func (s *Store) Release(ctx context.Context, ref capacity.LeaseRef) error {
	n, err := s.ReleaseBatch(ctx, []capacity.LeaseRef{ref})
	if errors.Is(err, capacity.ErrNotHolder) {
		return capacity.ErrNotHolder
	}
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
	defer s.timed(capacity.StoreRelease)()
	type pending struct {
		b *batcher[op, opResult]
		c *call[op, opResult]
	}
	calls := make([]pending, 0, len(refs))
	for _, r := range refs {
		calls = append(calls, pending{s.releases, s.releases.submit(op{release: &r})})
	}
	n, foreign := 0, 0
	var firstErr error
	var unheld []capacity.LeaseRef // claimed refs of no lease: stale, or made up
	// Always wait for all: every leader must lead.
	for i, p := range calls {
		res, err := p.b.await(p.c)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		switch {
		case res.released:
			n++
		case res.foreign:
			foreign++
		case err == nil && refs[i].Holder != "":
			unheld = append(unheld, refs[i])
		}
	}
	if firstErr == nil && len(unheld) > 0 {
		made, err := s.neverGranted(ctx, unheld)
		foreign += made
		firstErr = err
	}
	if firstErr == nil && foreign > 0 {
		firstErr = fmt.Errorf("%w: %d of the leases to release", capacity.ErrNotHolder, foreign)
	}
	return n, firstErr
}

// List implements capacity.CapacityStore.
func (s *Store) List(ctx context.Context, cluster string) ([]capacity.Lease, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, cluster, generation, holder, expires_at, revoked, ttl_ms FROM capacity_leases
		WHERE $1 = '' OR cluster = $1`, cluster)
	if err != nil {
		return nil, fmt.Errorf("pgcapacity: list: %w", err)
	}
	return collectLeases(rows)
}

// Revoke implements capacity.CapacityStore.
func (s *Store) Revoke(ctx context.Context, sel capacity.Selection, now time.Time) ([]capacity.Lease, error) {
	if err := capacity.CheckRefs(sel.Refs); err != nil {
		return nil, err
	}
	ids, gens := make([]string, len(sel.Refs)), make([]int64, len(sel.Refs))
	for i, r := range sel.Refs {
		ids[i], gens[i] = r.ID, r.Generation
	}
	var holder any
	if sel.Holder != "" {
		holder = sel.Holder
	}
	var out []capacity.Lease
	err := s.retry(func(context.Context) error {
		rows, err := s.pool.Query(ctx, `SELECT id, cluster, generation, holder, expires_at, revoked, ttl_ms
			FROM capacity_revoke($1, $2, $3, $4, $5)`, s.clock(now), sel.Expired, holder, ids, gens)
		if err != nil {
			return err
		}
		out, err = collectLeases(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgcapacity: revoke leases: %w", err)
	}
	return out, nil
}

func collectLeases(rows pgx.Rows) ([]capacity.Lease, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (capacity.Lease, error) {
		var l capacity.Lease
		err := r.Scan(&l.ID, &l.Cluster, &l.Generation, &l.Holder, &l.ExpiresAt, &l.Revoked, &l.TTLMillis)
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
// fleetSQL keeps $1 as the fleet id unless the table has one, and answers the id it holds.
const fleetSQL = `
WITH kept AS (INSERT INTO capacity_fleet (id) VALUES ($1) ON CONFLICT (one) DO NOTHING RETURNING id)
SELECT id FROM kept UNION ALL SELECT id FROM capacity_fleet`

// FleetID implements capacity.FleetKeeper. A replica that raced another's first write sees
// neither row in its statement's snapshot, and reads again.
func (s *Store) FleetID(ctx context.Context, candidate string) (string, error) {
	for range 2 {
		var id string
		err := s.pool.QueryRow(ctx, fleetSQL, candidate).Scan(&id)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return "", fmt.Errorf("pgcapacity: fleet id: %w", err)
		}
	}
	return "", errors.New("pgcapacity: fleet id: capacity_fleet stays empty")
}

func (s *Store) AcquireSweepLock(ctx context.Context, name, owner string, ttl time.Duration, now time.Time) (capacity.SweepLock, error) {
	if err := capacity.CheckLockArgs(name, owner, ttl); err != nil {
		return capacity.SweepLock{}, err
	}
	l := capacity.SweepLock{Name: name, Owner: owner}
	err := s.pool.QueryRow(ctx, `WITH n AS (SELECT capacity_now($4) AS t)
		INSERT INTO capacity_sweep_locks AS s (name, owner, expires_at) SELECT $1, $2, n.t + $3 * interval '1 millisecond' FROM n
		ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
		WHERE s.owner = EXCLUDED.owner OR s.expires_at <= capacity_now($4)
		RETURNING expires_at`, name, owner, ttl.Milliseconds(), s.clock(now)).Scan(&l.ExpiresAt)
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

// Contention implements capacity.WaitRecord: one query over capacity_leases and
// capacity_waiters (migrations/0010), ranked by capacity.ContentionOf.
func (s *Store) Contention(ctx context.Context, cluster, holder string, now time.Time) (capacity.Contention, error) {
	defer s.timed(capacity.StoreContention)()
	rows, err := s.pool.Query(ctx, `SELECT holder, held, since, waiting, denied FROM capacity_contention($1, $2, $3, $4)`,
		cluster, s.clock(now), capacity.FairWindow.Milliseconds(), capacity.ContendedFor.Milliseconds())
	if err != nil {
		return capacity.Contention{}, fmt.Errorf("pgcapacity: contention: %w", err)
	}
	defer rows.Close()
	held := map[string]int{}
	var waiters []capacity.Waiter
	for rows.Next() {
		var w capacity.Waiter
		var n int
		var since *time.Time
		var denied bool
		if err := rows.Scan(&w.Holder, &n, &since, &w.Waiting, &denied); err != nil {
			return capacity.Contention{}, fmt.Errorf("pgcapacity: contention: %w", err)
		}
		if n > 0 {
			held[w.Holder] = n
		}
		if denied {
			w.Since = capacity.Timestamp(*since)
			waiters = append(waiters, w)
		}
	}
	if err := rows.Err(); err != nil {
		return capacity.Contention{}, fmt.Errorf("pgcapacity: contention: %w", err)
	}
	return capacity.ContentionOf(holder, held, waiters), nil
}

// MarkDenied implements capacity.WaitRecord.
func (s *Store) MarkDenied(ctx context.Context, cluster, holder string, now time.Time) error {
	if err := capacity.CheckName("cluster", cluster); err != nil {
		return err
	}
	if err := capacity.CheckName("holder", holder); err != nil {
		return err
	}
	defer s.timed(capacity.StoreMarkDenied)()
	args := []any{cluster, holder, s.clock(now), capacity.FairWindow.Milliseconds(), capacity.ContendedFor.Milliseconds(), capacity.WaitersMax}
	query := `SELECT capacity_wait_denied($1, $2, $3, $4, $5, $6)`
	announce := s.notifyDenied.Load() && s.notices.due(cluster, holder, time.Now())
	if announce {
		// In the same statement: the notice is delivered when the denial it announces commits.
		query = `SELECT capacity_wait_denied($1, $2, $3, $4, $5, $6), pg_notify($7, $8)`
		args = append(args, DeniedChannel, s.origin+"\n"+cluster)
	}
	if _, err := s.pool.Exec(ctx, query, args...); err != nil {
		if announce {
			s.notices.undo(cluster, holder)
		}
		return fmt.Errorf("pgcapacity: mark denied: %w", err)
	}
	return nil
}

// MarkGranted implements capacity.WaitRecord.
func (s *Store) MarkGranted(ctx context.Context, cluster, holder string) error {
	defer s.timed(capacity.StoreMarkGranted)()
	_, err := s.pool.Exec(ctx, `UPDATE capacity_waiters SET waiting = false WHERE cluster = $1 AND holder = $2 AND waiting`, cluster, holder)
	if err != nil {
		return fmt.Errorf("pgcapacity: mark granted: %w", err)
	}
	return nil
}
