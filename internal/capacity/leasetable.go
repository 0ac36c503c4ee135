package capacity

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// leaseTable is everything a LeaseGuard knows and decides, as plain data: which leases this
// node holds, keeps idle, is asking for, renewing or releasing, and when each stops counting.
// It starts no task, does no I/O and reads no clock: every event carries its now, and every
// event returns what the driver must do about it (effects: callbacks to run, tasks to wake,
// counts to record; renewals and release batches to send). The LeaseGuard is its driver: it
// holds the lock, makes the round trips through its LeaseClient and feeds their outcomes back.
// Transcript tests (testdata/leasetable) drive it event by event.
type leaseTable struct {
	c      tableConfig
	nextID uint64
	// live holds the live slots (leased, not yet released) in the order of their ids (ids only
	// grow): a release finds its slot by a binary search, with no map to write twice a
	// statement.
	live []*slotState
	// liveLent: liveSlots gave live out, and a caller may be ranging over it, so a removal makes
	// a new list instead of writing this one in place (once per keeper run, not per release).
	liveLent bool
	// held counts leased slots per cluster, live or fenced, until released. A count is a
	// pointer, which its slots keep (slotState.held): the idle path takes and releases a lease
	// per statement without looking the cluster's name up (heldOf reads a count).
	held  map[string]*int
	local map[string]int // slots granted without a lease (onUnavailable: localLimits)
	// localN is local's sum: while it is 0 (no localLimits slot anywhere), an idle take need not
	// look its cluster's local count up by name.
	localN int
	queue  []queuedRelease
	full   bool // the release queue hit its bound (reported once until it has room again)
	// pending counts, per cluster, releases queued or in flight: the control plane still counts
	// those leases, so an acquire that they would push over the cap is denied without asking.
	pending map[string]int
	// asking counts, per cluster, acquires in flight to the control plane: each may come back
	// with a lease, so they count against the cap like held ones. Otherwise acquires racing one
	// another (or a local fallback admission) could together take this node past it.
	asking       map[string]int
	flushFailing bool // the last batch failed: pending releases may never land, ask anyway
	// unreachableUntil: the control plane did not answer an acquire; until then, don't ask.
	unreachableUntil time.Time
	// idle holds released leases kept for the next acquire of their cluster (counted as held),
	// idleN how many in all. checks holds, per cluster, what the control plane last said about
	// contention there; absent means keep nothing idle. A lease idles only while its cluster's
	// check says uncontended, so a cluster with idle leases has a check, which points at its
	// list too (clusterCheck.idle, set and cleared with the map's entry).
	idle     map[string]*[]idleLease // a list's memory: the idle path appends and takes without a map write
	idleN    int
	reaperAt time.Time // when the idle reaper wakes next (zero: when told)
	// retaken: a lease was taken from idle since the reaper last ran. A reaper that then finds
	// none idle wakes once more a hold later (expireIdle) rather than sleep until told: on a
	// slot busy enough that its lease is taken again before the reaper runs, telling it cost a
	// wake-up of its goroutine (another thread's futex, an allocation) every statement.
	retaken  bool
	checks   map[string]*clusterCheck
	keeperAt time.Time // when the keeper runs next, as nextWork last answered (zero: unknown)
	stopped  bool      // the driver's tasks ended: keep nothing idle
	// watch: the contention watch is in use (Watch, until the control plane turns out not to
	// have it); watchSet holds the clusters of the watch in flight (nil: none), watchRetryAt
	// when the watcher may watch again after a failure.
	watch        bool
	watchSet     []string
	watchRetryAt time.Time
	// ended are the leases this node gave up last (queued for release: released, fenced or
	// dropped), to tell a control plane that answers one of them as granted again.
	ended endedLeases
}

// endedMax bounds the leases a node remembers it gave up (endedLeases): a ring, oldest first out.
const endedMax = 1024

// endedLeases are the refs (fleet, id, generation) of the leases a node gave up last.
type endedLeases struct {
	set  map[LeaseRef]struct{}
	ring []LeaseRef
	next int
}

func (e *endedLeases) add(ref LeaseRef) {
	if _, ok := e.set[ref]; ok {
		return
	}
	if e.set == nil {
		e.set = map[LeaseRef]struct{}{}
	}
	if len(e.ring) < endedMax {
		e.ring = append(e.ring, ref)
	} else {
		delete(e.set, e.ring[e.next])
		e.ring[e.next] = ref
		e.next = (e.next + 1) % endedMax
	}
	e.set[ref] = struct{}{}
}

func (e *endedLeases) has(ref LeaseRef) bool {
	_, ok := e.set[ref]
	return ok
}

// tableConfig is what a leaseTable's decisions depend on besides its events.
type tableConfig struct {
	LeaseTTL, DriftMargin, RenewEvery time.Duration
	OnLeaseLost                       string
	OnUnavailable                     string
	// Reuse: released leases may be kept idle for the next acquire (see LeaseGuard).
	Reuse bool
	// Checks: renewal answers say whether a cluster is contended (a ContentionRenewer), so the
	// keeper asks, with a renewal, about a cluster whose leases it reuses before its reuse
	// window ends. Without them reuse ends leaseReuseWindow after an acquire's answer.
	Checks bool
	// Watch: the client answers contention watches (a ContentionWatcher), so while leases are
	// reused the watcher holds one open instead of the keeper's checks, which take over only
	// if the control plane turns out not to have it.
	Watch bool
	// AcquireWaits: acquires wait at the control plane, so this node's pending releases do not
	// deny them here (GuardOptions.AcquireWaits).
	AcquireWaits bool
	// ReleaseQueueMax bounds the queued releases (0: ReleaseQueueMaxDefault).
	ReleaseQueueMax int
}

// heldLease is one lease as this node holds it, shared by the slots and idle entries that carry
// it in turn, so that the table can tell its state at every step. Its terms are the lease's:
// a renewal sent while one slot ran it counts for the slot that runs it when the answer comes.
type heldLease struct {
	lease     Lease
	tag       string    // lease.Ref().Tag(), set at the grant and never changed (SlotTag reads it unlocked)
	fenceAt   time.Time // stop counting on the lease from here on
	reuseBy   time.Time // fenceAt less RenewEvery: kept or taken idle only before it (fenced)
	renewAt   time.Time // next renewal due
	releasing bool      // queued for release (or dropped): never renewed or reused again
}

// slotState is one leased slot: a running query's claim, live until its query releases it.
type slotState struct {
	id       uint64
	hl       *heldLease
	affinity uint64 // query.Affinity of the acquire's context
	// check is the check of the lease's cluster when the slot was taken from idle (nil
	// otherwise): a cluster's check, once made, is never replaced, so release need not look
	// it up again.
	check *clusterCheck
	held  *int // its cluster's held count (leaseTable.held), while the slot counts in it

	released bool
	lost     bool // fenced, query told to stop (cancel)
	overrun  bool // fenced, query kept (overrun)
	onLost   []func()
	hook     [1]func() // onLost's first: most slots get one (no allocation for it)
}

// idleLease is a released slot's lease kept for the next acquire of its cluster.
type idleLease struct {
	hl       *heldLease
	since    time.Time // released into idle then: taken until its hold (idleHold) is over
	affinity uint64    // who released it (query.Affinity of its acquire): taken by them first
}

// clusterCheck is what the control plane last said about contention on one cluster (in an
// acquire's or a renewal's answer), and whether this node reused a lease of it since it last
// asked.
type clusterCheck struct {
	at        time.Time // when the request that brought the answer was sent
	reuseTill time.Time // at + leaseReuseWindow (uncontendedAt, twice per leased statement)
	contended bool
	idle      *[]idleLease // leaseTable.idle's entry of the cluster (nil: none)
	// held is leaseTable.held's entry of the cluster once an idle take looked it up (nil: not
	// known), cleared where the entry is deleted (dropHeld): an idle take per statement then
	// looks the cluster's name up once, for its check.
	held   *int
	reused bool // a lease was taken from idle since the last renewal of the cluster was sent
	// watchedUntil: a watch of the cluster is in flight, and until then its answer, at once
	// on contention, would have come back (its wait and leaseReuseWindow from when it was
	// sent): no answer yet means uncontended.
	watchedUntil time.Time
}

type queuedRelease struct {
	ref     LeaseRef
	cluster string
	until   time.Time // after this the control plane has reclaimed the lease anyway
}

// effects is what the driver does after an event, in this order: count, wake the keeper, wake
// the idle reaper, run OnFreed's callbacks, wake the release flusher, run fenced queries'
// cancel functions.
type effects struct {
	lost        []lostLease
	dropped     []droppedRelease
	queueFull   *queueFull
	wakeKeeper  bool // a cluster needs a contention check before the keeper's next run
	wakeReaper  bool // a lease went idle while the reaper had no deadline
	wakeFreed   bool // a slot may be free for a denied caller
	wakeFlusher bool // a release was queued
	// watch: the watcher is to watch again at once (a cluster its watch in flight does not
	// cover is reused): its watch in flight, if any, is cancelled.
	watch  bool
	cancel []func()
}

// lostLease is a lease fenced under policy (OnLeaseLostCancel or OnLeaseLostOverrun).
type lostLease struct{ cluster, policy string }

// droppedRelease is a release given up (reason "queue-full" or "expired").
type droppedRelease struct{ cluster, reason string }

// queueFull reports that the release queue started refusing releases.
type queueFull struct {
	cluster string
	queued  int
}

func (e *effects) add(o effects) {
	e.lost = append(e.lost, o.lost...)
	e.dropped = append(e.dropped, o.dropped...)
	e.queueFull = cmpOr(e.queueFull, o.queueFull)
	e.wakeKeeper = e.wakeKeeper || o.wakeKeeper
	e.wakeReaper = e.wakeReaper || o.wakeReaper
	e.wakeFreed = e.wakeFreed || o.wakeFreed
	e.wakeFlusher = e.wakeFlusher || o.wakeFlusher
	e.watch = e.watch || o.watch
	e.cancel = append(e.cancel, o.cancel...)
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func newLeaseTable(c tableConfig) *leaseTable {
	return &leaseTable{
		c:       c,
		held:    map[string]*int{},
		local:   map[string]int{},
		pending: map[string]int{},
		asking:  map[string]int{},
		idle:    map[string]*[]idleLease{},
		checks:  map[string]*clusterCheck{},
		watch:   c.Reuse && c.Watch,
	}
}

// --------------------------------------------------------------------------------- acquires

// reserve counts an acquire about to ask the control plane, unless limit is below 1 or this
// node's leases (held, idle, releasing, being asked for) and local slots already fill it.
func (t *leaseTable) reserve(cluster string, limit int) bool {
	if limit < 1 || t.occupied(cluster)+t.local[cluster] >= limit {
		return false
	}
	t.asking[cluster]++
	if t.occupied(cluster)+t.local[cluster] > limit {
		violated("%q occupied %d (local %d) over its cap %d after an admission", cluster, t.occupied(cluster), t.local[cluster], limit)
	}
	return true
}

// occupied is the number of slots of cluster the control plane counts for this node as far as
// it knows: leases held (idle ones too) and asked for, and releases not yet landed unless the
// flusher is failing (then the control plane may be unreachable and the acquire must go on to
// its onUnavailable policy) or acquires wait at the control plane anyway.
func (t *leaseTable) occupied(cluster string) int {
	n := t.heldOf(cluster) + len(t.idleOf(cluster)) + t.asking[cluster]
	if !t.flushFailing && !t.c.AcquireWaits {
		n += t.pending[cluster]
	}
	return n
}

// denied ends a reserved acquire that brought no lease (denied, failed or cancelled).
func (t *leaseTable) denied(cluster string) {
	t.asking[cluster] = nonNegative(t.asking[cluster]-1, "acquires in flight", cluster)
	if t.asking[cluster] == 0 {
		delete(t.asking, cluster)
	}
}

// granted ends a reserved acquire, sent at sent, with the lease l it was granted: a slot (in
// the same step, so the count never drops in between). When the grant came back too late to
// count on at now (this node was frozen, or the round trip outlived the lease), the slot is
// released at once and late is true: the caller is told to ask again.
func (t *leaseTable) granted(cluster string, l Lease, sent time.Time, affinity uint64, now time.Time) (s *slotState, late bool, e effects) {
	t.denied(cluster)
	hl := &heldLease{lease: l, tag: l.Ref().Tag()}
	fenceAt, renewAt := t.terms(sent, l)
	t.fenced(hl, fenceAt, renewAt)
	s = t.addSlot(new(slotState), hl, affinity)
	if t.lostAt(s, now) {
		return nil, true, t.release(s, now)
	}
	return s, false, effects{}
}

// Kinds of answers of a control plane that misbehaves (Metrics.MisbehavingAnswers).
const (
	answerMalformed = "malformed" // a lease of another cluster, or whose id is not its cluster's and generation's
	answerRevoked   = "revoked"   // a grant or renewal of a lease marked revoked
	answerDuplicate = "duplicate" // a grant of a lease this node holds already (a slot or idle)
	answerEnded     = "ended"     // a grant of a lease this node gave up (released, fenced)
	answerOther     = "other"     // a renewal answered with another lease than the one renewed
)

// suspectGrant is what is wrong with lease l as the answer to an acquire of cluster ("" when
// nothing is that this node can tell): a control plane that grants one lease twice, or a lease
// it revoked or was given back, must not make this node run more queries than it holds leases.
func (t *leaseTable) suspectGrant(cluster string, l Lease) string {
	ref := l.Ref()
	switch {
	case l.Cluster != cluster || l.Generation < 1 || l.ID != LeaseID(cluster, l.Generation):
		return answerMalformed
	case l.Revoked:
		return answerRevoked
	case t.ended.has(ref):
		return answerEnded
	}
	for _, s := range t.live {
		if s.hl.lease.Ref() == ref {
			return answerDuplicate
		}
	}
	for _, il := range t.idleOf(cluster) {
		if il.hl.lease.Ref() == ref {
			return answerDuplicate
		}
	}
	return ""
}

// suspectRenewal is what is wrong with l as the answer to the renewal of held ("" when
// nothing is): a renewal answered with a revoked lease, or with another one, is not a renewal.
func suspectRenewal(held, l Lease) string {
	switch {
	case l.Revoked:
		return answerRevoked
	case l.ID != held.ID || l.Generation != held.Generation || l.Cluster != held.Cluster:
		return answerOther
	}
	return ""
}

// refuseGrant ends a reserved acquire of cluster answered with lease l, which this node does
// not use (suspectGrant said why). A lease revoked or given up before is released again: the
// control plane that granted it counts it for this node.
func (t *leaseTable) refuseGrant(cluster string, l Lease, sent time.Time, why string) effects {
	t.denied(cluster)
	if why != answerRevoked && why != answerEnded {
		return effects{}
	}
	hl := &heldLease{lease: l, tag: l.Ref().Tag()}
	fenceAt, renewAt := t.terms(sent, l)
	t.fenced(hl, fenceAt, renewAt)
	return t.queueRelease(hl)
}

// addSlot makes s, new memory, the live slot of hl.
func (t *leaseTable) addSlot(s *slotState, hl *heldLease, affinity uint64) *slotState {
	return t.addSlotHeld(s, hl, affinity, t.heldCount(hl.lease.Cluster))
}

// addSlotHeld is addSlot for a caller that has the lease's cluster's held count (held).
func (t *leaseTable) addSlotHeld(s *slotState, hl *heldLease, affinity uint64, held *int) *slotState {
	t.nextID++
	*s = slotState{id: t.nextID, hl: hl, affinity: affinity, held: held}
	s.onLost = s.hook[:0]
	t.live = append(t.live, s) // past the end of any list liveSlots gave out
	*held++
	return s
}

// heldOf is cluster's held count.
func (t *leaseTable) heldOf(cluster string) int {
	if n := t.held[cluster]; n != nil {
		return *n
	}
	return 0
}

// heldCount is cluster's held count, made (at 0) when it has none.
func (t *leaseTable) heldCount(cluster string) *int {
	n := t.held[cluster]
	if n == nil {
		n = new(int)
		t.held[cluster] = n
	}
	return n
}

// setIdle makes list cluster's idle list (nil: none), in the map and in its check.
func (t *leaseTable) setIdle(cluster string, ch *clusterCheck, list *[]idleLease) {
	if list == nil {
		delete(t.idle, cluster)
	} else {
		t.idle[cluster] = list
	}
	if ch != nil {
		ch.idle = list
	}
}

// terms are when a lease l acquired or renewed by a request sent at sent stops counting, and
// when it is to be renewed: the control plane stamped it no earlier than sent with the TTL it
// granted (its own configuration's, when shorter than LeaseTTL) to live.
func (t *leaseTable) terms(sent time.Time, l Lease) (fenceAt, renewAt time.Time) {
	ttl, every := t.c.LeaseTTL, t.c.RenewEvery
	if granted := l.TTL(); granted > 0 && granted < ttl {
		// Scaled in floating point: every*granted in integer nanoseconds overflows int64 from
		// about 3 s² on (10 s x 6 s came out as a renewal every 155 ms).
		every = max(time.Duration(float64(every)*float64(granted)/float64(ttl)), time.Millisecond)
		ttl = granted
	}
	return sent.Add(ttl - min(t.c.DriftMargin, ttl/2)), sent.Add(every)
}

// failed records that the control plane did not answer an acquire at now: for unreachableHold,
// acquires apply the onUnavailable policy at once.
func (t *leaseTable) failed(now time.Time) { t.unreachableUntil = now.Add(unreachableHold) }

// unreachable reports whether the control plane failed an acquire less than unreachableHold
// before now.
func (t *leaseTable) unreachable(now time.Time) bool { return now.Before(t.unreachableUntil) }

// unavailableAnswer is what becomes of an acquire the control plane cannot answer.
type unavailableAnswer int

const (
	failClosed unavailableAnswer = iota // onUnavailable failClosed: the query fails
	admitLocal                          // localLimits: a local slot, counted against the cap here
	localFull                           // localLimits, and this node's slots fill the cap
)

// unavailable applies the onUnavailable policy to an acquire of cluster that the control plane
// cannot answer.
func (t *leaseTable) unavailable(cluster string, limit int) unavailableAnswer {
	switch {
	case t.c.OnUnavailable != OnUnavailableLocalLimits:
		return failClosed
	case t.admitLocal(cluster, limit):
		return admitLocal
	}
	return localFull
}

// admitLocal grants a slot counted by this node only (onUnavailable: localLimits), leased
// slots included.
func (t *leaseTable) admitLocal(cluster string, limit int) bool {
	leased := t.heldOf(cluster) + len(t.idleOf(cluster)) + t.asking[cluster]
	if t.local[cluster] >= limit-leased {
		return false
	}
	t.local[cluster]++
	t.localN++
	if leased+t.local[cluster] > limit {
		violated("%q holds %d leased and %d local slots over its cap %d", cluster, leased, t.local[cluster], limit)
	}
	return true
}

// releaseLocal gives back a slot admitLocal granted.
func (t *leaseTable) releaseLocal(cluster string) {
	if n := t.local[cluster]; n > 0 {
		t.localN--
	}
	t.local[cluster] = nonNegative(t.local[cluster]-1, "local running count", cluster)
}

// contention records what the control plane said about cluster in the answer to a request sent
// at sent (an answer to an earlier request than the last one recorded says nothing new). Once
// it says contended, the cluster's idle leases are released at once and none are kept until an
// answer says otherwise; an uncontended answer lets this node reuse the cluster's leases for
// leaseReuseWindow from sent.
func (t *leaseTable) contention(cluster string, contended bool, sent time.Time) effects {
	ch := t.checks[cluster]
	if ch == nil {
		ch = &clusterCheck{idle: t.idle[cluster]}
		t.checks[cluster] = ch
	}
	if !sent.Before(ch.at) {
		ch.at, ch.reuseTill, ch.contended = sent, sent.Add(leaseReuseWindow), contended
	}
	if contended {
		ch.watchedUntil = time.Time{}
		return t.releaseIdle(cluster)
	}
	return effects{}
}

// ----------------------------------------------------------------------------------- slots

// release ends slot s at now: its lease is kept idle for the next acquire of its cluster when
// idle reuse allows (then a waiter may take it at once), or queued for release.
func (t *leaseTable) release(s *slotState, now time.Time) effects {
	if s.released {
		panic(fmt.Sprintf("capacity: slot of lease %s released twice", s.hl.lease.ID))
	}
	s.released = true
	s.onLost, s.hook = nil, [1]func(){} // never run now (fence sees live slots only): what they reach is let go
	c := s.hl.lease.Cluster
	if i, ok := t.liveIndex(s.id); ok {
		if t.liveLent {
			t.live, t.liveLent = slices.Concat(t.live[:i], t.live[i+1:]), false
		} else {
			t.live = slices.Delete(t.live, i, i+1)
		}
	}
	hp := s.held
	if hp == nil { // not made by addSlot
		hp = t.heldCount(c)
	}
	s.held = nil
	held := nonNegative(*hp-1, "held count", c)
	ch := s.check
	if ch == nil {
		ch = t.checks[c]
	}
	if !s.lost && !s.overrun && t.reusableBy(ch, s.hl, now) {
		// The cluster's count stays in the map at 0 while its lease idles: the next take, a
		// moment away on a busy slot, counts it again without the map's delete and insert.
		*hp = held
		list := ch.idle // reusable: ch is not nil
		if list == nil {
			list = new([]idleLease)
			t.setIdle(c, ch, list)
		}
		*list = append(*list, idleLease{hl: s.hl, since: now, affinity: s.affinity})
		t.idleN++
		// The reaper need not be told while it sleeps until an earlier hold's end: by then this
		// lease is at most a hold past its own, and an acquire never takes a lease past its
		// hold anyway. Telling it only then saves a wake-up per query on a busy slot. With the
		// watch, the first lease to go idle starts one: the longer hold counts from then on.
		return effects{wakeReaper: t.reaperAt.IsZero(), wakeFreed: true, watch: t.unwatched(c, now)}
	}
	if *hp = held; held == 0 {
		t.dropHeld(c, ch)
	}
	// Even a fenced lease is released: the control plane may still hold it (one-way partition).
	return t.queueRelease(s.hl)
}

// queueRelease queues the release of lease hl for the flusher or the next acquire.
func (t *leaseTable) queueRelease(hl *heldLease) effects {
	if hl.releasing {
		violated("lease %s released twice", hl.lease.ID)
	}
	hl.releasing = true
	l := hl.lease
	t.ended.add(l.Ref())
	if len(t.queue) >= cmp.Or(t.c.ReleaseQueueMax, ReleaseQueueMaxDefault) {
		// The control plane has not taken a release for a long time; this one's lease ends at
		// its term there. Counted and reported, so an operator sees leases held to their term.
		e := effects{dropped: []droppedRelease{{l.Cluster, "queue-full"}}}
		if !t.full {
			t.full = true
			e.queueFull = &queueFull{cluster: l.Cluster, queued: len(t.queue)}
		}
		return e
	}
	t.full = false
	t.queue = append(t.queue, queuedRelease{ref: l.Ref(), cluster: l.Cluster, until: hl.fenceAt.Add(2 * t.c.DriftMargin)})
	t.pending[l.Cluster]++
	return effects{wakeFlusher: true}
}

// lostAt reports whether slot s is lost at now. A slot also counts as lost once its fence time
// has passed, before the keeper has fenced it: a node that was frozen (SIGSTOP, a long pause)
// must not start work under a lease that the control plane may have reclaimed meanwhile,
// whichever of its tasks runs first.
func (t *leaseTable) lostAt(s *slotState, now time.Time) bool {
	return s.lost || (!s.overrun && !now.Before(s.hl.fenceAt))
}

// onLost registers fn to run when s is fenced, and reports whether it must run at once instead
// (s is fenced already).
func (t *leaseTable) onLost(s *slotState, fn func()) (now bool) {
	if s.lost {
		return true
	}
	s.onLost = append(s.onLost, fn)
	return false
}

// ------------------------------------------------------------------------------ idle reuse

// reusable reports whether lease hl of cluster may be kept idle or taken from idle at now: the
// control plane said, less than leaseReuseWindow before now, that no other worker contends for
// the cluster, and the lease's fence is at least one renewal interval away, so the keeper has a
// whole round to renew it for the query that takes it.
func (t *leaseTable) reusable(cluster string, hl *heldLease, now time.Time) bool {
	return t.reusableBy(t.checks[cluster], hl, now)
}

// reusableBy is reusable for the cluster whose check is ch (nil: none): a caller that has the
// check at hand spares the map its lookups (the idle path runs twice per leased statement).
func (t *leaseTable) reusableBy(ch *clusterCheck, hl *heldLease, now time.Time) bool {
	return t.c.Reuse && !t.stopped && ch.uncontendedAt(now) && now.Before(hl.reuseBy)
}

// idleHold is how long a lease of cluster released at now waits idle for the next acquire:
// idleLeaseHold, or watchedIdleHold while a watch of the cluster is in flight (the control
// plane answers it at once when another worker is denied the cluster, and that answer releases
// the idle leases).
func (t *leaseTable) idleHold(cluster string, now time.Time) time.Duration {
	return t.checks[cluster].idleHold(now)
}

// idleHold is leaseTable.idleHold for the cluster whose check is ch (nil: none).
func (ch *clusterCheck) idleHold(now time.Time) time.Duration {
	if ch != nil && now.Before(ch.watchedUntil) {
		return watchedIdleHold
	}
	return idleLeaseHold
}

// uncontendedAt reports whether the control plane's last answer about cluster said nobody else
// contends for it, and was asked less than leaseReuseWindow before now, or a watch of it is in
// flight (watchedUntil).
func (t *leaseTable) uncontendedAt(cluster string, now time.Time) bool {
	return t.checks[cluster].uncontendedAt(now)
}

// uncontendedAt is leaseTable.uncontendedAt for the cluster whose check is ch (nil: none).
func (ch *clusterCheck) uncontendedAt(now time.Time) bool {
	return ch != nil && !ch.contended && (now.Before(ch.reuseTill) || now.Before(ch.watchedUntil))
}

// checking reports whether the keeper checks reused clusters with renewals (Checks without a
// watch).
func (t *leaseTable) checking() bool { return t.c.Checks && !t.watch }

// noteReuse records that a lease of cluster was taken from idle at now (its slot is live).
// With the watch, the watcher is woken unless its watch in flight covers the cluster (or it
// failed less than watchRetry ago). With checks, the keeper is to check the cluster checkAfter
// from the last answer, and is woken unless it runs by then anyway. (It planned without the
// check when it last ran, if no slot of the cluster was live then, or the answer it planned
// from has been superseded since.)
func (t *leaseTable) noteReuse(cluster string, now time.Time) effects {
	return t.noteReuseBy(t.checks[cluster], cluster, now)
}

// noteReuseBy is noteReuse for cluster, whose check is ch (set: the lease was reusable).
func (t *leaseTable) noteReuseBy(ch *clusterCheck, cluster string, now time.Time) effects {
	if t.watch {
		return effects{watch: t.unwatched(cluster, now)}
	}
	if !t.c.Checks {
		return effects{}
	}
	ch.reused = true
	return effects{wakeKeeper: t.keeperAt.IsZero() || t.keeperAt.After(ch.at.Add(checkAfter))}
}

// unwatched reports whether the watcher is to watch cluster now: the watch is in use, its watch
// in flight (if any) does not cover the cluster, and it did not fail less than watchRetry ago.
func (t *leaseTable) unwatched(cluster string, now time.Time) bool {
	return t.watch && !slices.Contains(t.watchSet, cluster) && !now.Before(t.watchRetryAt)
}

// checkDue reports whether the keeper is to ask the control plane about cluster at now: a lease
// of it was reused since it last asked, and the last answer, uncontended, is checkAfter old and
// still within its reuse window (past it, the next acquire asks anyway).
func (t *leaseTable) checkDue(cluster string, now time.Time) bool {
	ch := t.checks[cluster]
	return t.checking() && !t.stopped && ch != nil && ch.reused && t.uncontendedAt(cluster, now) &&
		!now.Before(ch.at.Add(checkAfter))
}

// takeIdle turns the idle lease of cluster that affinity released last (else the most recently
// idled one) into a slot, if one is still reusable at now and this node's running slots leave
// room under limit (a lowered cap). Idle leases of the cluster that are no longer reusable go
// to the release queue.
func (t *leaseTable) takeIdle(cluster string, limit int, affinity uint64, now time.Time, into *slotState) (*slotState, effects) {
	ch := t.checks[cluster] // looked up once: this runs once per leased statement
	if ch == nil || ch.idle == nil || len(*ch.idle) == 0 {
		return nil, effects{} // idle leases have their cluster's check (leaseTable.idle)
	}
	kept := ch.idle
	list := *kept
	local, hp, held := 0, ch.held, 0
	if t.localN > 0 {
		local = t.local[cluster]
	}
	if hp == nil {
		hp = t.held[cluster]
		ch.held = hp
	}
	if hp != nil {
		held = *hp
	}
	if held+local >= limit {
		return nil, effects{}
	}
	preferLast(list, affinity)
	var s *slotState
	var e effects
	queued := false // e holds the releases of leases past their reuse
	for len(list) > 0 && s == nil {
		il := list[len(list)-1]
		list = list[:len(list)-1]
		t.idleN--
		if !now.Before(il.since.Add(ch.idleHold(now))) || !t.reusableBy(ch, il.hl, now) {
			e.add(t.queueRelease(il.hl))
			queued = true
			continue
		}
		if il.hl.releasing {
			violated("idle lease %s taken after its release", il.hl.lease.ID)
		}
		if into == nil {
			into = new(slotState)
		}
		if hp == nil {
			hp = t.heldCount(cluster)
			ch.held = hp
		}
		s = t.addSlotHeld(into, il.hl, affinity, hp)
		s.check = ch
		t.retaken = true
		if held++; held+local > limit {
			violated("%q runs %d leased and %d local slots over its cap %d", cluster, held, local, limit)
		}
		if reuse := t.noteReuseBy(ch, cluster, now); queued {
			e.add(reuse)
		} else {
			e = reuse // the common case: nothing to merge
		}
	}
	*kept = list // kept even when empty: the next release appends without allocating
	return s, e
}

// idleOf is the list of cluster's idle leases (nil: none).
func (t *leaseTable) idleOf(cluster string) []idleLease {
	if list := t.idle[cluster]; list != nil {
		return *list
	}
	return nil
}

// preferLast moves the last idle lease affinity released to the end of list, keeping the
// others' order.
func preferLast(list []idleLease, affinity uint64) {
	if affinity == 0 {
		return
	}
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].affinity == affinity {
			il := list[i]
			copy(list[i:], list[i+1:])
			list[len(list)-1] = il
			return
		}
	}
}

// releaseIdle queues the releases of all idle leases of cluster.
func (t *leaseTable) releaseIdle(cluster string) effects {
	var e effects
	list := t.idleOf(cluster)
	for _, il := range list {
		e.add(t.queueRelease(il.hl))
	}
	t.idleN -= len(list)
	t.setIdle(cluster, t.checks[cluster], nil)
	t.forgetIfUnheld(cluster)
	return e
}

// forgetIfUnheld drops cluster's held count once it is 0 and no lease of it idles any more
// (release keeps the count at 0 while its lease idles).
func (t *leaseTable) forgetIfUnheld(cluster string) {
	if t.heldOf(cluster) == 0 {
		t.dropHeld(cluster, t.checks[cluster])
	}
}

// dropHeld deletes cluster's held count, and its check's (ch: the cluster's, nil for none)
// pointer to it: a count made again later is another.
func (t *leaseTable) dropHeld(cluster string, ch *clusterCheck) {
	delete(t.held, cluster)
	if ch != nil {
		ch.held = nil
	}
}

// expireIdle queues the releases of idle leases whose hold has run out at now and returns when
// the next one runs out (zero when none is left): the idle reaper's next wake-up.
func (t *leaseTable) expireIdle(now time.Time) (time.Time, effects) {
	var next time.Time
	var e effects
	var buf [clusterKeysOnStack]string
	for _, c := range sortedKeys(buf[:0], t.idle) {
		var keep []idleLease
		for _, il := range *t.idle[c] {
			if until := il.since.Add(t.idleHold(c, now)); now.Before(until) {
				keep = append(keep, il)
				if next.IsZero() || until.Before(next) {
					next = until
				}
				continue
			}
			e.add(t.queueRelease(il.hl))
			t.idleN--
		}
		if len(keep) == 0 {
			t.setIdle(c, t.checks[c], nil)
			t.forgetIfUnheld(c)
		} else {
			*t.idle[c] = keep
		}
	}
	switch {
	case !next.IsZero() || t.stopped:
	case t.retaken:
		// Leases go idle and are taken again before the reaper runs: it comes back a hold
		// from now, never later than the end of the hold of a lease released meanwhile (holds
		// are idleLeaseHold or longer), so that lease needs no wake-up.
		next = now.Add(idleLeaseHold)
	case now.Before(t.reaperAt):
		// A run before the one planned: woken again by a release while it ran (reaperAt was
		// still zero then). The planned run still comes; sleeping until told instead would
		// make the next release wake it again, and so on, each statement.
		next = t.reaperAt
	}
	t.retaken = false
	t.reaperAt = next
	return next, e
}

// stop keeps nothing idle from now on and releases the idle leases.
func (t *leaseTable) stop() effects {
	t.stopped = true
	var e effects
	for _, c := range slices.Sorted(maps.Keys(t.idle)) {
		e.add(t.releaseIdle(c))
	}
	return e
}

// ----------------------------------------------------------------------------------- watch

// beginWatch starts, at now, a watch of the clusters whose leases this node holds or keeps
// idle and that are uncontended: each counts as uncontended until the watch's answer could
// have come back (watchedUntil), and the watch in flight is theirs (watchSet). None: nil.
func (t *leaseTable) beginWatch(now time.Time) []string {
	t.watchSet = nil
	if !t.watch || t.stopped {
		return nil
	}
	var buf [clusterKeysOnStack]string
	for _, c := range sortedKeys(buf[:0], t.checks) {
		if t.heldOf(c)+len(t.idleOf(c)) > 0 && t.uncontendedAt(c, now) {
			t.watchSet = append(t.watchSet, c)
			t.checks[c].watchedUntil = now.Add(watchWait + leaseReuseWindow)
		}
	}
	return t.watchSet
}

// watchEnd is how a watch ended, besides its answer.
type watchEnd int

const (
	watchAnswered    watchEnd = iota // uncontended lists the clusters still uncontended
	watchCancelled                   // for a new watch (effects.watch): no news
	watchFailed                      // no answer: no watch until watchRetry from now
	watchUnsupported                 // the control plane has none: the keeper's checks take over
)

// watched records how the watch of clusters, sent at sent, ended at now. An answer's
// uncontended clusters count from when it was sent (an answer says no more), its contended
// ones from now (it said so at once); a watch that failed stops counting.
func (t *leaseTable) watched(clusters, uncontended []string, end watchEnd, sent, now time.Time) effects {
	t.watchSet = nil
	var e effects
	for _, c := range clusters {
		ch := t.checks[c]
		switch {
		case end == watchAnswered && slices.Contains(uncontended, c):
			e.add(t.contention(c, false, sent))
		case end == watchAnswered:
			e.add(t.contention(c, true, now))
		case end != watchCancelled:
			ch.watchedUntil = time.Time{}
		}
	}
	switch end {
	case watchFailed:
		t.watchRetryAt = now.Add(watchRetry)
	case watchUnsupported:
		t.watch = false
		e.wakeKeeper = true
	}
	return e
}

// ---------------------------------------------------------------------------------- keeper

// fence drops every live lease whose fence time has come at now: under onLeaseLost cancel its
// query is told to stop (its OnLost callbacks), under overrun it is let finish and counted.
func (t *leaseTable) fence(now time.Time) effects {
	var e effects
	for _, s := range t.liveSlots() {
		if s.lost || s.overrun || now.Before(s.hl.fenceAt) {
			continue
		}
		c := s.hl.lease.Cluster
		if t.c.OnLeaseLost == OnLeaseLostOverrun {
			s.overrun = true
			e.lost = append(e.lost, lostLease{c, OnLeaseLostOverrun})
			continue
		}
		s.lost = true
		e.cancel = append(e.cancel, s.onLost...)
		s.onLost = nil
		e.lost = append(e.lost, lostLease{c, OnLeaseLostCancel})
	}
	return e
}

// dueRenewals is the batch of live slots whose renewal is due at now, most overdue first (ties
// by slot id), at most keeperActionsMax; and, for each cluster whose contention check is due
// (checkDue) and none of whose slots is, its live slot renewed longest ago: renewed early, its
// answer is the check. The driver renews them in that order, in batches (beginRenewals).
func (t *leaseTable) dueRenewals(now time.Time) []*slotState {
	var due []*slotState
	carried := map[string]bool{}     // clusters with a renewal due: it carries the check
	check := map[string]*slotState{} // per cluster whose check is due, the slot to renew
	for _, s := range t.liveSlots() {
		c := s.hl.lease.Cluster
		switch {
		case s.lost || s.overrun:
		case !now.Before(s.hl.renewAt):
			due, carried[c] = append(due, s), true
		case t.checkDue(c, now) && (check[c] == nil || s.hl.renewAt.Before(check[c].hl.renewAt)):
			check[c] = s
		}
	}
	var buf [clusterKeysOnStack]string
	for _, c := range sortedKeys(buf[:0], check) {
		if !carried[c] {
			due = append(due, check[c])
		}
	}
	slices.SortStableFunc(due, func(a, b *slotState) int { return a.hl.renewAt.Compare(b.hl.renewAt) })
	return due[:min(len(due), keeperActionsMax)]
}

// beginRenew starts the renewal of s at now, if it is still live and unfenced: the ref to send
// and the earliest fence time of all live slots (the round trip must not outlast it).
func (t *leaseTable) beginRenew(s *slotState, now time.Time) (ref LeaseRef, fenceFirst time.Time, ok bool) {
	live, refs, fenceFirst := t.beginRenewals([]*slotState{s}, now)
	if len(live) == 0 {
		return LeaseRef{}, time.Time{}, false
	}
	return refs[0], fenceFirst, true
}

// beginRenewals starts, at now, the renewals of those of slots still live, unfenced and due (or
// carrying their cluster's contention check), to be sent in one batch: those slots, their refs,
// and the earliest fence time of all live slots (the round trip must not outlast it). The
// clusters in the batch are checked by its answer: a lease reused from now on asks again.
func (t *leaseTable) beginRenewals(slots []*slotState, now time.Time) (live []*slotState, refs []LeaseRef, fenceFirst time.Time) {
	for _, s := range slots {
		c := s.hl.lease.Cluster
		if s.released || s.lost || s.overrun || (now.Before(s.hl.renewAt) && !t.checkDue(c, now)) {
			continue
		}
		if s.hl.releasing {
			violated("lease %s renewed after its release", s.hl.lease.ID)
		}
		live, refs = append(live, s), append(refs, s.hl.lease.Ref())
	}
	if len(live) == 0 {
		return nil, nil, time.Time{}
	}
	for _, s := range live {
		if ch := t.checks[s.hl.lease.Cluster]; ch != nil && t.checking() {
			ch.reused = false
		}
	}
	for _, o := range t.liveSlots() {
		if !o.lost && !o.overrun && (fenceFirst.IsZero() || o.hl.fenceAt.Before(fenceFirst)) {
			fenceFirst = o.hl.fenceAt
		}
	}
	return live, refs, fenceFirst
}

// renewed records the renewal of s, sent at sent, that came back with l: new terms for its
// lease, whichever slot runs it now or if it is idle. A lease queued for release meanwhile
// keeps the terms it was queued with.
func (t *leaseTable) renewed(s *slotState, sent time.Time, l Lease) {
	if s.hl.releasing {
		return
	}
	s.hl.lease = l
	fenceAt, renewAt := t.terms(sent, l)
	t.fenced(s.hl, fenceAt, renewAt)
}

// fenced sets hl's fence and renewal times (and reuseBy, computed once per term, not on the
// idle path's two checks per leased statement).
func (t *leaseTable) fenced(hl *heldLease, fenceAt, renewAt time.Time) {
	hl.fenceAt, hl.renewAt, hl.reuseBy = fenceAt, renewAt, fenceAt.Add(-t.c.RenewEvery)
}

// renewRefused records that the control plane no longer has the lease of s (a renewal sent at
// sent was refused): it is fenced at once.
func (t *leaseTable) renewRefused(s *slotState, sent time.Time) { t.fenced(s.hl, sent, s.hl.renewAt) }

// renewFailed records a renewal of s that got no answer by now: retried soon, leaving room for
// the other leases' renewals.
func (t *leaseTable) renewFailed(s *slotState, now time.Time) {
	s.hl.renewAt = now.Add(max(t.c.RenewEvery/10, time.Millisecond))
}

// renewedContention records what the answer to a renewal batch sent at sent said about its
// clusters' contention (absent: nothing). Only with Checks (otherwise renewals say nothing).
func (t *leaseTable) renewedContention(contended map[string]bool, sent time.Time) effects {
	var e effects
	if !t.c.Checks {
		return e
	}
	var buf [clusterKeysOnStack]string
	for _, c := range sortedKeys(buf[:0], contended) {
		e.add(t.contention(c, contended[c], sent))
	}
	return e
}

// nextWork is the earliest renewal or fence time of the live slots, or contention check
// (checkDue) of a cluster whose leases were reused and that has a live slot to renew for it
// (now + RenewEvery when none), and is recorded as when the keeper runs next. A check with no
// live slot waits for the next reuse, which wakes the keeper (noteReuse).
func (t *leaseTable) nextWork(now time.Time) time.Time {
	var next time.Time
	earliest := func(at time.Time) {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	live := map[string]bool{} // clusters with a live slot
	for _, s := range t.liveSlots() {
		if !s.lost && !s.overrun {
			earliest(s.hl.renewAt)
			earliest(s.hl.fenceAt)
			live[s.hl.lease.Cluster] = true
		}
	}
	var buf [clusterKeysOnStack]string
	for _, c := range sortedKeys(buf[:0], t.checks) {
		if ch := t.checks[c]; t.checking() && !t.stopped && ch.reused && t.uncontendedAt(c, now) && live[c] {
			earliest(ch.at.Add(checkAfter))
		}
	}
	if next.IsZero() {
		next = now.Add(t.c.RenewEvery)
	}
	t.keeperAt = next
	return next
}

// sortedKeys is slices.Sorted(maps.Keys(m)), appended to buf: the lease keeper goes over its
// per-cluster maps (a cluster or four) in key order at every pass, and a slice made for each
// was a fifth of a simulated worker's allocations outside its requests. With buf an array of
// the caller's (clusterKeysOnStack), nothing is allocated while the map fits it.
func sortedKeys[V any](buf []string, m map[string]V) []string {
	keys := buf[:0]
	for k := range m { //determinism:ok sorted below
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clusterKeysOnStack is how many clusters sortedKeys' callers make room for on their stacks.
const clusterKeysOnStack = 8

// liveSlots lists the live slots in the order of their ids. The list is the table's (not to be
// written to, and not written in place while lent): the keeper reads it three times a run.
func (t *leaseTable) liveSlots() []*slotState {
	t.liveLent = true
	return t.live
}

// liveIndex is where the live slot of id is in live, if it is there.
func (t *leaseTable) liveIndex(id uint64) (int, bool) {
	lo, hi := 0, len(t.live)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.live[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(t.live) && t.live[lo].id == id
}

// -------------------------------------------------------------------------------- releases

// takeBatch takes the next batch of queued releases (at most releaseBatchMax) to send, on its
// own or carried by an acquire. They stay pending until landed, failed or put back.
func (t *leaseTable) takeBatch() []queuedRelease {
	n := min(len(t.queue), releaseBatchMax)
	if n == 0 {
		return nil
	}
	batch := append([]queuedRelease(nil), t.queue[:n]...)
	t.queue = t.queue[n:]
	return batch
}

// putBack returns a batch that was not sent to the front of the queue.
func (t *leaseTable) putBack(batch []queuedRelease) effects {
	if len(batch) == 0 {
		return effects{}
	}
	t.queue = append(batch, t.queue...)
	return effects{wakeFlusher: true}
}

// landed records a batch that reached the control plane.
func (t *leaseTable) landed(batch []queuedRelease) effects {
	t.flushFailing = false
	for _, q := range batch {
		t.unpend(q.cluster)
	}
	return effects{wakeFreed: true}
}

// flushFailed records a batch that did not reach the control plane by now: it goes back to the
// queue, minus the releases whose leases have expired there anyway.
func (t *leaseTable) flushFailed(batch []queuedRelease, now time.Time) effects {
	e := effects{wakeFreed: true}
	t.flushFailing = true
	var keep []queuedRelease
	for _, q := range batch {
		if now.Before(q.until) {
			keep = append(keep, q)
		} else {
			e.dropped = append(e.dropped, droppedRelease{q.cluster, "expired"})
			t.unpend(q.cluster)
		}
	}
	t.queue = append(keep, t.queue...)
	return e
}

// unpend counts one release of cluster as no longer pending.
func (t *leaseTable) unpend(cluster string) {
	t.pending[cluster] = nonNegative(t.pending[cluster]-1, "pending release count", cluster)
	if t.pending[cluster] == 0 {
		delete(t.pending, cluster)
	}
}

// -------------------------------------------------------------------------------- helpers

// violated panics: an invariant of the table does not hold. Every check before a call is a
// comparison of counts or flags the table has at hand, cheap enough to stay on in production,
// where a broken count would otherwise break the cap silently.
func violated(format string, args ...any) {
	panic("capacity: invariant violated: " + fmt.Sprintf(format, args...))
}

// nonNegative returns n, and panics naming what went negative if it did.
func nonNegative(n int, what, cluster string) int {
	if n < 0 {
		panic(fmt.Sprintf("capacity: %s of %q went negative", what, cluster))
	}
	return n
}
