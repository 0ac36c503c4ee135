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
	// Fleet is the id of the fleet whose control plane granted the lease (Fleet.ID): the
	// lease's engine tag carries it, so two fleets sharing an engine server never stop each
	// other's queries. Empty from a control plane without one (an older release).
	Fleet string `json:"fleet,omitempty"`
}

// SessionHolder is the holder of the leases that one registration session of a worker takes
// through the control plane: "<worker>/<session>". Leases are held by the session, not the
// worker's name: a later registration under the same name (a restarted process, or anyone
// else holding the worker secret) can neither renew nor release them (ErrNotHolder). Worker
// names cannot contain '/', so the worker is always the part before it (HolderWorker).
func SessionHolder(worker, session string) string { return worker + "/" + session }

// HolderWorker is the worker a holder names: the part of a SessionHolder before '/', or the
// whole holder for one without a session (the control plane's own, tests).
func HolderWorker(holder string) string {
	worker, _, _ := strings.Cut(holder, "/")
	return worker
}

// Ref names the lease a renewal or release is for, on behalf of its holder.
func (l Lease) Ref() LeaseRef { return LeaseRef{ID: l.ID, Generation: l.Generation, Fleet: l.Fleet} }

// TTL is the lifetime the lease was granted or renewed for (0 when the store did not say).
func (l Lease) TTL() time.Duration { return time.Duration(l.TTLMillis) * time.Millisecond }

// LeaseRef is what a holder sends back to renew or release a lease.
//
// Holder, when set, is whom the lease must be held by: the control plane sets it to the
// authenticated worker, and a store refuses (ErrNotHolder) to renew or release a lease of
// someone else. It never travels on the wire; empty means any holder (the control plane's own
// reclaims and revocations).
//
// Fleet is the lease's fleet (Lease.Fleet), for its engine tag; it never travels on the wire
// either: a lease is named by its ID and generation.
type LeaseRef struct {
	ID         string `json:"id"`
	Generation int64  `json:"generation"`
	Holder     string `json:"-"`
	Fleet      string `json:"-"`
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
	// ErrNotHolder refuses a renewal or release, on behalf of a holder, of a lease held by
	// someone else (another worker, or another session of the same worker) or never granted
	// (a made-up generation). A lease once granted and no longer held is stale instead: the
	// table keeps no record of its past holders.
	ErrNotHolder = errors.New("capacity: lease held by another worker, or never granted")
	// ErrUnknownCluster refuses an acquire of a cluster the control plane's configuration does
	// not have.
	ErrUnknownCluster = errors.New("capacity: unknown cluster")
	// ErrNotServed refuses an acquire, on behalf of a worker, of a cluster the control plane
	// does not send that worker (its labels do not satisfy the cluster's or its groups'
	// workerSelector): a worker takes no capacity of clusters it is not given.
	ErrNotServed = errors.New("capacity: cluster not in this worker's configuration")
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
	// The record of workers denied a cluster lately lives with the leases, where every
	// replica sees it.
	WaitRecord
	// Named acquires: a worker names each acquire (its request id), so that one whose answer
	// was lost can be asked again and answered with the lease it was granted.
	NamedStore
}

// NamedStore keeps, with each lease, the request id of the acquire that was granted it.
type NamedStore interface {
	// AcquireNamed is Acquire, recording request (the holder's id of this acquire; "" none)
	// with the lease granted.
	AcquireNamed(ctx context.Context, cluster, holder, request string, limit int, ttl time.Duration, now time.Time) (Lease, error)
	// Named returns the lease of cluster that holder's acquire request was granted, while it is
	// held (revoked or expired ones too, until freed); false when none is.
	Named(ctx context.Context, cluster, holder, request string) (Lease, bool, error)
}

// RequestIDMax bounds a request id's length.
const RequestIDMax = 64

// CheckRequestID validates the request id a worker names an acquire with: at most
// RequestIDMax bytes of letters, digits, '-' and '_' ("" names none).
func CheckRequestID(id string) error {
	if len(id) > RequestIDMax {
		return fmt.Errorf("%w: requestId is %d bytes long, at most %d", ErrInvalid, len(id), RequestIDMax)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: requestId %q: byte %d is not a letter, digit, '-' or '_'", ErrInvalid, id, i)
		}
	}
	return nil
}

// The lease store's calls, as the Postgres store's latency histogram
// (queryflux_capacity_store_seconds) labels them and a simulator calibration names the service
// times of the waiting record's calls (scenarios.Calibration).
const (
	StoreAcquire     = "acquire"
	StoreRenew       = "renew"
	StoreRelease     = "release"
	StoreContention  = "contention"
	StoreMarkDenied  = "mark-denied"
	StoreMarkGranted = "mark-granted"
)

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

// BatchRenewer is a LeaseClient that renews many leases in one round trip (Remote:
// PathRenewBatch). RenewAll renews through it when the client is one.
type BatchRenewer interface {
	// RenewBatch answers each ref, in order, unless the whole call failed (err).
	RenewBatch(ctx context.Context, refs []LeaseRef, ttl time.Duration, now time.Time) ([]Renewed, error)
}

// Renewed is the outcome of one lease's renewal: the renewed lease, or the error Renew would
// have returned for it alone.
type Renewed struct {
	Lease Lease
	Err   error
}

// RenewAll renews refs through c: in one round trip when c is a BatchRenewer, else one by one.
func RenewAll(ctx context.Context, c LeaseClient, refs []LeaseRef, ttl time.Duration, now time.Time) ([]Renewed, error) {
	if b, ok := c.(BatchRenewer); ok {
		return b.RenewBatch(ctx, refs, ttl, now)
	}
	return renewEach(ctx, c, refs, ttl, now), nil
}

// renewEach renews refs one round trip each.
func renewEach(ctx context.Context, c LeaseClient, refs []LeaseRef, ttl time.Duration, now time.Time) []Renewed {
	out := make([]Renewed, len(refs))
	for i, ref := range refs {
		out[i].Lease, out[i].Err = c.Renew(ctx, ref, ttl, now)
	}
	return out
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

// CheckRefs validates a batch of lease refs: at most releaseRefsMax, each one's ID
// "<cluster>#<generation>" with its own generation.
func CheckRefs(refs []LeaseRef) error {
	if len(refs) > releaseRefsMax {
		return fmt.Errorf("%w: %d refs in one batch, at most %d", ErrInvalid, len(refs), releaseRefsMax)
	}
	for i, r := range refs {
		if parsed, err := ParseLeaseID(r.ID); err != nil || parsed.Generation != r.Generation {
			return fmt.Errorf("%w: lease ref %d {id %q, generation %d}: the id must be <cluster>#<generation> of that generation",
				ErrInvalid, i, r.ID, r.Generation)
		}
	}
	return nil
}

// NeverGranted reports whether ref is claimed by a holder and names a generation beyond
// current, the last its cluster granted (0: the cluster never granted one), and if so returns
// the error that refuses it (wrapping ErrNotHolder). Every store calls it for a claimed ref
// whose lease it does not hold: a made-up ref is refused like a foreign one.
func NeverGranted(ref LeaseRef, current int64) error {
	if ref.Holder == "" || ref.Generation <= current {
		return nil
	}
	return fmt.Errorf("%w: lease %s was never granted", ErrNotHolder, ref.ID)
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
