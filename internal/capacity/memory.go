package capacity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/queryflux/queryflux/node/env"
)

// Memory is the in-memory CapacityStore and SweepCoordinator: the simulator's store and the
// reference the Postgres store is model-tested against. Safe for concurrent use; it never
// blocks while holding its mutex.
type Memory struct {
	mu       sync.Mutex
	clusters map[string]*memCluster
	locks    map[string]SweepLock
	clock    func() time.Time // nil: the callers' now
	fleet    string           // FleetID's, once given
}

type memCluster struct {
	generation int64            // last generation granted; only grows
	leases     map[string]Lease // by ID
	held       map[string]int   // leases per holder
	waits      waitRecord
	named      map[namedKey]string // lease ID by the named acquire that was granted it
	nameOf     map[string]namedKey // and back, by lease ID
}

// namedKey is one holder's named acquire (NamedStore).
type namedKey struct{ holder, request string }

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{clusters: map[string]*memCluster{}, locks: map[string]SweepLock{}}
}

// WithClock makes m stamp and compare every lease and lock time with clock instead of the
// callers' now: one clock for the whole table, as the database's is for the Postgres store.
// A simulator whose control planes share one store gives it the simulated database's clock.
// Call it before use.
func (m *Memory) WithClock(clock func() time.Time) *Memory {
	m.clock = clock
	return m
}

// Monotonic makes m's clock e's wall time when Monotonic is called, plus the time elapsed since
// on e's monotonic clock: a lease's term is then a duration, which no step of the wall clock (an
// NTP step, an operator's date) shortens or lengthens. For a control plane that keeps its leases
// in memory (no database): with its callers' wall time, a step forward by minutes revoked and
// fenced every live lease at the next sweep, and a step back kept a dead worker's leases for as
// long. Expiries it reports are on that clock (they drift from the wall by the steps since).
// Call it before use.
func (m *Memory) Monotonic(e env.Env) *Memory {
	base := e.Now()
	return m.WithClock(func() time.Time { return base.Add(e.Now().Sub(base)) })
}

// now is the table's time: the store's clock if it has one, else the caller's.
func (m *Memory) now(caller time.Time) time.Time {
	if m.clock != nil {
		return m.clock()
	}
	return caller
}

var (
	_ CapacityStore    = (*Memory)(nil)
	_ SweepCoordinator = (*Memory)(nil)
)

func (m *Memory) cluster(name string) *memCluster {
	c := m.clusters[name]
	if c == nil {
		c = &memCluster{leases: map[string]Lease{}, held: map[string]int{}, waits: newWaitRecord(),
			named: map[namedKey]string{}, nameOf: map[string]namedKey{}}
		m.clusters[name] = c
	}
	return c
}

// Acquire implements CapacityStore.
func (m *Memory) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (Lease, error) {
	return m.AcquireNamed(ctx, cluster, holder, "", limit, ttl, now)
}

// AcquireNamed implements NamedStore.
func (m *Memory) AcquireNamed(ctx context.Context, cluster, holder, request string, limit int, ttl time.Duration, now time.Time) (Lease, error) {
	now = m.now(now)
	if err := CheckAcquire(cluster, holder, limit, ttl); err != nil {
		return Lease{}, err
	}
	if err := CheckRequestID(request); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cluster(cluster)
	if request != "" {
		if l, ok := c.namedLive(namedKey{holder, request}, ttl, now); ok {
			return l, nil
		}
	}
	if len(c.leases) >= limit {
		return Lease{}, ErrAtCapacity
	}
	c.generation++
	l := Lease{
		ID:         LeaseID(cluster, c.generation),
		Cluster:    cluster,
		Holder:     holder,
		Generation: c.generation,
		ExpiresAt:  Timestamp(now.Add(ttl)),
		TTLMillis:  ttl.Milliseconds(),
	}
	c.leases[l.ID] = l
	c.setHeld(holder, c.held[holder]+1)
	if request != "" {
		k := namedKey{holder, request}
		c.named[k], c.nameOf[l.ID] = l.ID, k
	}
	if len(c.leases) > limit {
		panic(fmt.Sprintf("capacity: memory store granted %d leases of %q over cap %d", len(c.leases), cluster, limit))
	}
	return l, nil
}

// namedLive is the lease the named acquire k was granted, renewed for ttl from now, while it is
// live (unrevoked, unexpired): an acquire sent again under its name (a retry that came before
// its first sending was decided) takes no other slot. A revoked or expired lease gives up the
// name (it keeps its slot until swept), and the acquire is decided anew.
func (c *memCluster) namedLive(k namedKey, ttl time.Duration, now time.Time) (Lease, bool) {
	id, ok := c.named[k]
	if !ok {
		return Lease{}, false
	}
	l, ok := c.leases[id]
	if !ok || l.Revoked || !l.ExpiresAt.After(Timestamp(now)) {
		delete(c.named, k)
		delete(c.nameOf, id)
		return Lease{}, false
	}
	// Answered as renewed from now; kept until the later of that and its term (two sendings
	// of one acquire with different TTLs, as the PostgreSQL store does within a batch).
	e := Timestamp(now.Add(ttl))
	l.TTLMillis = ttl.Milliseconds()
	kept := l
	if e.After(kept.ExpiresAt) {
		kept.ExpiresAt = e
	}
	c.leases[id] = kept
	l.ExpiresAt = e
	return l, true
}

// Named implements NamedStore.
func (m *Memory) Named(ctx context.Context, cluster, holder, request string) (Lease, bool, error) {
	if err := CheckRequestID(request); err != nil || request == "" {
		return Lease{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.clusters[cluster]
	if c == nil {
		return Lease{}, false, nil
	}
	l, ok := c.leases[c.named[namedKey{holder, request}]]
	return l, ok, nil
}

// drop frees lease l.
func (c *memCluster) drop(l Lease) {
	delete(c.leases, l.ID)
	if k, ok := c.nameOf[l.ID]; ok {
		if c.named[k] == l.ID {
			delete(c.named, k)
		}
		delete(c.nameOf, l.ID)
	}
	c.setHeld(l.Holder, c.held[l.Holder]-1)
}

// setHeld records that holder holds n leases.
func (c *memCluster) setHeld(holder string, n int) {
	if n == 0 {
		delete(c.held, holder)
	} else {
		c.held[holder] = n
	}
	c.waits.setHeld(holder, n)
}

// held returns the lease ref names if it is still held under ref's generation; err is
// ErrStaleGeneration when it is not, ErrNotHolder when ref.Holder holds it not.
func (m *Memory) held(ref LeaseRef) (*memCluster, Lease, error) {
	c := m.clusters[ref.Cluster()]
	if c == nil {
		return nil, Lease{}, cmp.Or(NeverGranted(ref, 0), ErrStaleGeneration)
	}
	l, ok := c.leases[ref.ID]
	switch {
	case !ok || l.Generation != ref.Generation:
		return nil, Lease{}, cmp.Or(NeverGranted(ref, c.generation), ErrStaleGeneration)
	case ref.Holder != "" && l.Holder != ref.Holder:
		return nil, Lease{}, ErrNotHolder
	}
	return c, l, nil
}

// Renew implements CapacityStore.
func (m *Memory) Renew(ctx context.Context, ref LeaseRef, ttl time.Duration, now time.Time) (Lease, error) {
	now = m.now(now)
	if err := CheckTTL(ttl); err != nil {
		return Lease{}, err
	}
	if err := CheckRefs([]LeaseRef{ref}); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, l, err := m.held(ref)
	if err != nil {
		return Lease{}, err
	}
	if l.Revoked || !l.ExpiresAt.After(Timestamp(now)) {
		return Lease{}, ErrStaleGeneration
	}
	l.ExpiresAt, l.TTLMillis = Timestamp(now.Add(ttl)), ttl.Milliseconds()
	c.leases[l.ID] = l
	return l, nil
}

// Release implements CapacityStore.
func (m *Memory) Release(ctx context.Context, ref LeaseRef) error {
	if err := CheckRefs([]LeaseRef{ref}); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, l, err := m.held(ref)
	if err != nil {
		return err
	}
	c.drop(l)
	return nil
}

// ReleaseBatch implements CapacityStore.
func (m *Memory) ReleaseBatch(ctx context.Context, refs []LeaseRef) (int, error) {
	if err := CheckRefs(refs); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, foreign := 0, 0
	for _, ref := range refs {
		c, l, err := m.held(ref)
		switch {
		case err == nil:
			c.drop(l)
			n++
		case errors.Is(err, ErrNotHolder):
			foreign++
		}
	}
	return n, foreignErr(foreign)
}

// foreignErr is ReleaseBatch's error for n refs of leases their claimed holder holds not.
func foreignErr(n int) error {
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d of the leases to release", ErrNotHolder, n)
}

// List implements CapacityStore.
func (m *Memory) List(ctx context.Context, cluster string) ([]Lease, error) {
	return m.collect(func(l Lease) bool { return cluster == "" || l.Cluster == cluster }, false), nil
}

// Count is how many leases cluster holds (revoked ones until released or swept), without
// listing them.
func (m *Memory) Count(cluster string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.clusters[cluster]; c != nil {
		return len(c.leases)
	}
	return 0
}

// Revoke implements CapacityStore.
func (m *Memory) Revoke(ctx context.Context, sel Selection, now time.Time) ([]Lease, error) {
	if err := CheckRefs(sel.Refs); err != nil {
		return nil, err
	}
	now = Timestamp(m.now(now))
	named := make(map[LeaseRef]bool, len(sel.Refs))
	for _, r := range sel.Refs {
		named[LeaseRef{ID: r.ID, Generation: r.Generation}] = true
	}
	return m.collect(func(l Lease) bool {
		return (sel.Expired && !l.ExpiresAt.After(now)) || (sel.Holder != "" && l.Holder == sel.Holder) || named[l.Ref()]
	}, true), nil
}

// collect returns the leases that match, ordered, marking them revoked if revoke is set.
func (m *Memory) collect(match func(Lease) bool, revoke bool) []Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Lease{}
	for _, c := range m.clusters { //determinism:ok the result is sorted below; deletes are order-free
		for id, l := range c.leases { //determinism:ok as above
			if match(l) {
				if revoke {
					l.Revoked = true
					c.leases[id] = l
				}
				out = append(out, l)
			}
		}
	}
	SortLeases(out)
	return out
}

// SortLeases orders leases by cluster, then generation.
func SortLeases(ls []Lease) {
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].Cluster != ls[j].Cluster {
			return ls[i].Cluster < ls[j].Cluster
		}
		return ls[i].Generation < ls[j].Generation
	})
}

// AcquireSweepLock implements SweepCoordinator.
func (m *Memory) AcquireSweepLock(ctx context.Context, name, owner string, ttl time.Duration, now time.Time) (SweepLock, error) {
	now = m.now(now)
	if err := checkLockArgs(name, owner, ttl); err != nil {
		return SweepLock{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.locks[name]
	if ok && cur.Owner != owner && cur.ExpiresAt.After(Timestamp(now)) {
		return SweepLock{}, ErrLockHeld
	}
	l := SweepLock{Name: name, Owner: owner, ExpiresAt: Timestamp(now.Add(ttl))}
	m.locks[name] = l
	return l, nil
}

// ReleaseSweepLock implements SweepCoordinator.
func (m *Memory) ReleaseSweepLock(ctx context.Context, name, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.locks[name]; ok && cur.Owner == owner {
		delete(m.locks, name)
	}
	return nil
}

func checkLockArgs(name, owner string, ttl time.Duration) error {
	if err := checkName("lock name", name); err != nil {
		return err
	}
	if err := checkName("owner", owner); err != nil {
		return err
	}
	return CheckTTL(ttl)
}

// CheckLockArgs validates AcquireSweepLock's arguments.
func CheckLockArgs(name, owner string, ttl time.Duration) error {
	return checkLockArgs(name, owner, ttl)
}

// Contention implements WaitRecord.
func (m *Memory) Contention(ctx context.Context, cluster, holder string, now time.Time) (Contention, error) {
	now = Timestamp(m.now(now))
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.clusters[cluster]
	if c == nil {
		return Contention{}, nil
	}
	out := Contention{Leases: len(c.leases), Held: c.held[holder]}
	c.waits.read(&out, holder, now)
	return out, nil
}

// MarkDenied implements WaitRecord.
func (m *Memory) MarkDenied(ctx context.Context, cluster, holder string, now time.Time) error {
	if err := checkName("cluster", cluster); err != nil {
		return err
	}
	if err := checkName("holder", holder); err != nil {
		return err
	}
	now = Timestamp(m.now(now))
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cluster(cluster)
	c.waits.denied(holder, c.held[holder], now)
	return nil
}

// MarkGranted implements WaitRecord.
func (m *Memory) MarkGranted(ctx context.Context, cluster, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.clusters[cluster]; c != nil {
		c.waits.granted(holder)
	}
	return nil
}
