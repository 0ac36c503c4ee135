package capacity

import (
	"context"
	"time"

	"github.com/queryflux/queryflux/internal/redact"
)

// ContendedFor is how long after a worker's acquire was denied or had to wait the control plane
// still calls the cluster contended in its answers to other workers: a second covers the proxy
// core's longest retry back-off (500 ms) twice, so a worker that keeps retrying keeps it set.
// The waiting record forgets a denial this old.
const ContendedFor = time.Second

// RetryAskEvery is the longest a worker's waiting query goes between two retry-mode acquires
// (LeaseGuard.RetryMax caps the proxy core's back-off at it). FairWindow is how long after a
// denial the control plane still counts that worker as waiting: three asks, so a waiting
// worker stays counted through one lost or delayed request.
const (
	RetryAskEvery = 50 * time.Millisecond
	FairWindow    = 3 * RetryAskEvery
)

// WaitersMax bounds the waiting record per cluster: a holder denied while the record is full is
// not recorded (it is served in retry mode's first-come order, as without the record). Holders
// are authenticated workers and entries are forgotten after ContendedFor, so a fleet never
// comes near it.
const WaitersMax = 1024

// WaitRecord is the record of workers denied a cluster lately, kept in the lease store so that
// every control-plane replica reads and writes the same one (as they share the lease table):
// a worker waiting at one replica is seen by a worker asking another. Times are the store's
// clock (the database's for the Postgres store), like lease expiries.
//
// In retry mode a freed slot goes to whoever asks first, and the worker that freed it asks
// first (its own release wakes its queue), so without the record a worker that once held many
// slots keeps them (three workers of 8 clients each split 128 / 248 / 24 transactions). The
// control plane therefore keeps free slots for the waiting workers that hold fewest leases of
// the cluster, longest waiting first: an acquire is denied (yields) while there are no more free
// slots than waiting workers ranked ahead of it (Contention.Yields).
type WaitRecord interface {
	// Contention reads cluster's leases and waiting record as holder sees them at now, in one
	// go: the leases held, holder's own wait, whether others were denied within ContendedFor,
	// and how many waiting holders rank ahead of it.
	Contention(ctx context.Context, cluster, holder string, now time.Time) (Contention, error)
	// MarkDenied records that holder's acquire of cluster was denied (or had to wait) at now.
	// It starts a wait unless one is going on (denied since its last grant, the last time
	// within FairWindow), forgets denials older than ContendedFor, and records nothing new
	// for a cluster with WaitersMax holders recorded.
	MarkDenied(ctx context.Context, cluster, holder string, now time.Time) error
	// MarkGranted ends holder's wait for cluster: its next denial starts a new one, at the back.
	MarkGranted(ctx context.Context, cluster, holder string) error
}

// Contention is one read of a cluster's leases and waiting record, as one holder sees it.
type Contention struct {
	Leases int // leases held in all (revoked ones too, until freed)
	Held   int // leases the holder holds
	// Others: a holder other than this one was denied the cluster within ContendedFor.
	Others bool
	// Wait is the holder's entry when Waiting: denied since its last grant, the last time
	// within FairWindow.
	Wait    Waiter
	Waiting bool
	// Ahead counts the other waiting holders that rank before this one: fewer leases held,
	// then waiting longer, then by name. A holder not waiting ranks after every waiting one
	// that holds as many leases or fewer.
	Ahead int
}

// Waiter is one holder of the waiting record.
type Waiter struct {
	Holder  string
	Since   time.Time // first denial of its current wait
	Waiting bool      // denied since its last grant, the last time within FairWindow
}

// ContentionOf works out holder's Contention from the whole record: leases held per holder
// and the holders denied within ContendedFor (any order). It is the ranking's definition; a
// store that keeps an index must answer as it does.
func ContentionOf(holder string, held map[string]int, denied []Waiter) Contention {
	c := Contention{Held: held[holder]}
	for _, n := range held { //determinism:ok a sum does not depend on order
		c.Leases += n
	}
	for _, w := range denied {
		switch {
		case w.Holder != holder:
			c.Others = true
		case w.Waiting:
			c.Wait, c.Waiting = w, true
		}
	}
	for _, w := range denied {
		if w.Holder != holder && w.Waiting && ranksBefore(held[w.Holder], w, c.Held, c.Wait, c.Waiting) {
			c.Ahead++
		}
	}
	return c
}

// ranksBefore reports whether waiting w, holding held leases, ranks before me, holding mine
// (and waiting if waiting).
func ranksBefore(held int, w Waiter, mine int, me Waiter, waiting bool) bool {
	switch {
	case held != mine:
		return held < mine
	case !waiting:
		return true
	case !w.Since.Equal(me.Since):
		return w.Since.Before(me.Since)
	}
	return w.Holder < me.Holder
}

// Yields reports whether a retry-mode acquire by the holder is to be denied although a slot
// may be free: the free slots under limit are no more than the waiting holders ranked ahead
// of it, who will ask again within RetryAskEvery.
func (c Contention) Yields(limit int) bool {
	free := limit - c.Leases
	if free <= 0 {
		return false // the store denies it anyway
	}
	return c.Ahead >= free
}

// contention reads the waiting record of cluster; ok is false when the read failed (then
// nobody yields, and the answer says contended).
func (a *API) contention(ctx context.Context, cluster, holder string) (c Contention, ok bool) {
	c, err := a.store.Contention(ctx, cluster, holder, a.env.Now())
	if err != nil {
		a.recordFailed("read", err)
		return Contention{}, false
	}
	return c, true
}

// markDenied records a denial of holder, and wakes the contention watches held here; a failure
// only costs fairness, never the cap.
func (a *API) markDenied(ctx context.Context, cluster, holder string) {
	if err := a.store.MarkDenied(ctx, cluster, holder, a.env.Now()); err != nil {
		a.recordFailed("mark", err)
	}
	a.denials.Notify()
}

// markGranted ends holder's wait if c says it was waiting.
func (a *API) markGranted(ctx context.Context, c Contention, cluster, holder string) {
	if !c.Waiting {
		return
	}
	if err := a.store.MarkGranted(ctx, cluster, holder); err != nil {
		a.recordFailed("mark", err)
	}
}

func (a *API) recordFailed(op string, err error) {
	a.metrics.CoordinationFailures.WithLabelValues("store-waiters-" + op).Inc()
	a.env.Logger().Warn("capacity: the waiting record failed; fair share skipped", "op", op, "err", redact.Error(err))
}
