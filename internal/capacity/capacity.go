// Package capacity keeps a cluster's maxRunningQueries true across a whole fleet: capacity
// leases with fencing generations (CapacityStore), sweep locks (SweepCoordinator), the slot
// guard the proxy core calls before it runs a query (Guard), the self-fencing lease keeper
// behind it, the control plane's HTTP API for workers and the worker's client for it.
//
// It touches time, tasks and randomness only through the env.Env it is given, and the network
// only through the *http.Client it is given: it runs inside the simulator (docs/architecture.md).
// The Postgres store lives in the subpackage pgcapacity, outside the simulator.
package capacity

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lease is one granted slot of one cluster.
//
// Generation is the cluster's fencing token: every grant takes the next number, numbers are
// never reused (not after a release, a sweep or an eviction), so a holder that lost its lease
// can never renew or release somebody else's. ID is the lease's name: "<cluster>#<generation>".
//
// ExpiresAt is stamped by the store's clock (the database's for the Postgres store), which is
// not the holder's: a holder counts TTLMillis, the lifetime it was granted, on its own clock
// from when it sent the request. Revoked says the control plane is reclaiming the lease: it
// can no longer be renewed, and its slot is freed once the engine fence confirms that its
// work is stopped (or after the fence grace).
type Lease struct {
	ID         string    `json:"id"`
	Cluster    string    `json:"cluster"`
	Holder     string    `json:"holder"`
	Generation int64     `json:"generation"`
	ExpiresAt  time.Time `json:"expiresAt"`
	TTLMillis  int64     `json:"ttlMillis,omitempty"`
	Revoked    bool      `json:"revoked,omitempty"`
}

// Ref names the lease a renewal or release is for, on behalf of its holder.
func (l Lease) Ref() LeaseRef { return LeaseRef{ID: l.ID, Generation: l.Generation} }

// TTL is the lifetime the lease was granted or renewed for (0 when the store did not say).
func (l Lease) TTL() time.Duration { return time.Duration(l.TTLMillis) * time.Millisecond }

// LeaseRef is what a holder sends back to renew or release a lease.
//
// Holder, when set, is whom the lease must be held by: the control plane sets it to the
// authenticated worker, and a store refuses (ErrNotHolder) to renew or release a lease of
// someone else. It never travels on the wire; empty means any holder (the control plane's own
// reclaims and revocations).
type LeaseRef struct {
	ID         string `json:"id"`
	Generation int64  `json:"generation"`
	Holder     string `json:"-"`
}

// As returns the ref claimed by holder.
func (r LeaseRef) As(holder string) LeaseRef { r.Holder = holder; return r }

// Cluster returns the cluster part of the lease ID ("" when the ID is malformed).
func (r LeaseRef) Cluster() string {
	i := strings.LastIndexByte(r.ID, '#')
	if i <= 0 {
		return ""
	}
	return r.ID[:i]
}

// LeaseID is the ID of the lease of cluster with generation gen.
func LeaseID(cluster string, gen int64) string {
	return cluster + "#" + strconv.FormatInt(gen, 10)
}

// ParseLeaseID reads a lease ID, "<cluster>#<generation>", as the ref of that lease.
func ParseLeaseID(id string) (LeaseRef, error) {
	ref := LeaseRef{ID: id}
	i := strings.LastIndexByte(id, '#')
	gen, err := strconv.ParseInt(id[i+1:], 10, 64)
	if i <= 0 || err != nil || gen < 1 || LeaseID(id[:i], gen) != id {
		return LeaseRef{}, fmt.Errorf("%w: lease %q must be <cluster>#<generation>", ErrInvalid, id)
	}
	ref.Generation = gen
	return ref, nil
}

// SweepLock is a named lock held by one owner until ExpiresAt, so that one control-plane
// replica at a time sweeps stale leases.
type SweepLock struct {
	Name      string    `json:"name"`
	Owner     string    `json:"owner"`
	ExpiresAt time.Time `json:"expiresAt"`
}

var (
	// ErrAtCapacity is a denial: the cluster already has cap leases.
	ErrAtCapacity = errors.New("capacity: cluster at capacity")
	// ErrStaleGeneration refuses a renewal or release for a lease that is no longer held under
	// that generation: released, swept, evicted, expired, or never granted.
	ErrStaleGeneration = errors.New("capacity: stale lease generation")
	// ErrNotHolder refuses a renewal or release of a lease held by someone else.
	ErrNotHolder = errors.New("capacity: lease held by another worker")
	// ErrUnknownCluster refuses an acquire of a cluster the control plane's configuration does
	// not have.
	ErrUnknownCluster = errors.New("capacity: unknown cluster")
	// ErrLockHeld refuses a sweep lock that another owner holds and that has not expired.
	ErrLockHeld = errors.New("capacity: sweep lock held by another owner")
	// ErrInvalid wraps every rejection of bad arguments.
	ErrInvalid = errors.New("capacity: invalid argument")
	// ErrUnavailable wraps failures to reach the coordination service (network, 5xx, timeout).
	ErrUnavailable = errors.New("capacity: coordination unavailable")
)

// CapacityStore is the shared lease table. One clock stamps and sweeps the whole table, so no
// replica's clock can shorten a lease: the Postgres store uses the database's clock and
// ignores the callers' now; the in-memory store uses now, the caller's env.Env clock, unless
// it was given a clock of its own (Memory.WithClock, for a store several control planes share). A rapid model test holds the two to the same answers (the Postgres
// store then reads the test's clock).
//
// Invariant of every implementation: for every cluster, the number of leases held (expired or
// not, until they are swept or released) never exceeds the cap of the acquire that granted the
// newest of them, under any concurrency.
type CapacityStore interface {
	// Acquire grants a lease of cluster to holder if fewer than limit leases are held,
	// expiring at now+ttl; otherwise it returns ErrAtCapacity.
	Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (Lease, error)
	// Renew moves an unexpired, unrevoked lease's expiry to now+ttl, or returns
	// ErrStaleGeneration (ErrNotHolder when ref.Holder is set and holds it not).
	Renew(ctx context.Context, ref LeaseRef, ttl time.Duration, now time.Time) (Lease, error)
	// Release frees a lease (expired, revoked or not), or returns ErrStaleGeneration
	// (ErrNotHolder as Renew).
	Release(ctx context.Context, ref LeaseRef) error
	// ReleaseBatch frees every lease in refs still held under its generation and returns how
	// many it freed; stale refs are skipped. Refs whose Holder holds not their lease are skipped
	// too, and then the error wraps ErrNotHolder (the others are freed all the same).
	ReleaseBatch(ctx context.Context, refs []LeaseRef) (int, error)
	// List returns the leases of cluster ("" for every cluster), ordered by cluster and generation.
	List(ctx context.Context, cluster string) ([]Lease, error)
	// Revoke marks the leases sel selects as revoked and returns them (whether they were
	// revoked before or not), ordered.
	// A revoked lease cannot be renewed; it keeps its slot until it is released (by the
	// control plane's reclaimer, once the engine fence is done).
	Revoke(ctx context.Context, sel Selection, now time.Time) ([]Lease, error)
}

// Selection picks leases to revoke: the union of those expired by now (Expired), those of
// Holder, and those named by Refs (generation included).
type Selection struct {
	Expired bool
	Holder  string
	Refs    []LeaseRef
}

// Empty reports whether sel selects nothing.
func (sel Selection) Empty() bool { return !sel.Expired && sel.Holder == "" && len(sel.Refs) == 0 }

// SweepCoordinator hands out named locks with an owner and an expiry.
type SweepCoordinator interface {
	// AcquireSweepLock takes or extends (same owner) the lock name until now+ttl. It returns
	// ErrLockHeld if another owner holds it and it has not expired.
	AcquireSweepLock(ctx context.Context, name, owner string, ttl time.Duration, now time.Time) (SweepLock, error)
	// ReleaseSweepLock frees the lock if owner holds it; otherwise it does nothing.
	ReleaseSweepLock(ctx context.Context, name, owner string) error
}

// LeaseClient is the part of a CapacityStore a lease holder needs. A CapacityStore is one; so
// is the worker's Remote client of the control plane.
type LeaseClient interface {
	Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (Lease, error)
	Renew(ctx context.Context, ref LeaseRef, ttl time.Duration, now time.Time) (Lease, error)
	ReleaseBatch(ctx context.Context, refs []LeaseRef) (int, error)
}

// ReleasingAcquirer is a LeaseClient that releases leases and acquires one in a single round
// trip (Remote: the releases ride on the acquire request and land before it is decided). After
// a grant or ErrAtCapacity the releases have landed; after any other error they may not have.
type ReleasingAcquirer interface {
	AcquireReleasing(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []LeaseRef) (Lease, error)
}

// Limits on arguments, named so that bad input gets a clear error.
const (
	nameLenMax     = 256
	limitMax       = 1 << 20
	ttlMax         = 24 * time.Hour
	releaseRefsMax = 10000
)

// CheckAcquire validates Acquire's arguments; every store calls it first.
func CheckAcquire(cluster, holder string, limit int, ttl time.Duration) error {
	if err := checkName("cluster", cluster); err != nil {
		return err
	}
	if err := checkName("holder", holder); err != nil {
		return err
	}
	if limit < 1 || limit > limitMax {
		return fmt.Errorf("%w: cap %d must be in [1, %d]", ErrInvalid, limit, limitMax)
	}
	return CheckTTL(ttl)
}

// CheckTTL validates a lease or lock time-to-live.
func CheckTTL(ttl time.Duration) error {
	if ttl < time.Millisecond || ttl > ttlMax {
		return fmt.Errorf("%w: ttl %v must be in [1ms, %v]", ErrInvalid, ttl, ttlMax)
	}
	return nil
}

// CheckRefs validates a release batch.
func CheckRefs(refs []LeaseRef) error {
	if len(refs) > releaseRefsMax {
		return fmt.Errorf("%w: %d refs in one batch, at most %d", ErrInvalid, len(refs), releaseRefsMax)
	}
	return nil
}

func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if len(s) > nameLenMax {
		return fmt.Errorf("%w: %s is %d bytes long, at most %d", ErrInvalid, what, len(s), nameLenMax)
	}
	return nil
}

// CheckName validates a cluster, holder, lock or owner name.
func CheckName(what, s string) error { return checkName(what, s) }

// Timestamp normalizes a time to what every store keeps: UTC, whole microseconds (Postgres'
// timestamptz precision), so that stores agree to the microsecond.
func Timestamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
