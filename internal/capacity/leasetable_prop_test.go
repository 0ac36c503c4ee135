package capacity

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/testlong"
)

// TestLeaseTableKeepsItsCountsUnderAnyEvents drives a leaseTable with random events in any
// order a driver could feed them (acquires answered late or never, releases, renewals that
// land, fail or are refused, batches that land, fail or are put back, contention answers,
// idle expiry, an unreachable control plane, stop) and checks after every event that the
// table's counts agree with the leases it holds, and that no lease is both held and released;
// and that idle reuse keeps its bound: no lease is idle while the control plane's last answer
// about its cluster said contended, and none is taken from idle more than leaseReuseWindow
// after the request of the last answer that said uncontended (renewals' answers included).
// The table's own invariant checks (occupied <= cap at every admission, no lease renewed or
// reused after its release) panic if they break.
func TestLeaseTableKeepsItsCountsUnderAnyEvents(t *testing.T) {
	// A case costs under a millisecond, and an idle lease's expiry with a reused cluster's
	// check takes hundreds of cases to meet.
	testlong.RapidChecks(t, 3000, 30000)
	rapid.Check(t, func(rt *rapid.T) {
		m := &tableModel{t: newLeaseTable(tableConfig{
			LeaseTTL: 3 * time.Second, DriftMargin: 500 * time.Millisecond, RenewEvery: time.Second,
			OnLeaseLost:   rapid.SampledFrom([]string{OnLeaseLostCancel, OnLeaseLostOverrun}).Draw(rt, "lost"),
			OnUnavailable: rapid.SampledFrom([]string{OnUnavailableFailClosed, OnUnavailableLocalLimits}).Draw(rt, "unavailable"),
			Reuse:         rapid.Bool().Draw(rt, "reuse"),
			Checks:        rapid.Bool().Draw(rt, "checks"),
			AcquireWaits:  rapid.Bool().Draw(rt, "waits"),
		}), now: t0, uncontended: map[string]time.Time{}, answeredAt: map[string]time.Time{}}
		rt.Repeat(map[string]func(*rapid.T){
			"acquire":    m.acquire,
			"answer":     m.answer,
			"release":    m.release,
			"keep":       m.keep,
			"flush":      m.flush,
			"settle":     m.settle,
			"contention": m.contention,
			"expire":     func(*rapid.T) { m.t.expireIdle(m.now) },
			"advance":    func(rt *rapid.T) { m.now = m.now.Add(rapid.SampledFrom(steps).Draw(rt, "step")) },
			"stop": func(rt *rapid.T) { // rarely: it ends idle reuse for good
				if rapid.IntRange(0, 19).Draw(rt, "stop") == 0 {
					m.t.stop()
				}
			},
			"": m.check,
		})
	})
}

// steps are the time steps the model draws: within an idle hold, a reuse window, a renewal
// interval and a lease; mostly short ones, so that idle reuse happens.
var steps = []time.Duration{time.Millisecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	300 * time.Millisecond, 1200 * time.Millisecond, 4 * time.Second}

var modelClusters = []string{"a", "b"}

// tableModel is what a driver knows besides the table: acquires in flight, batches in flight,
// the slots it handed out, local slots.
type tableModel struct {
	t   *leaseTable
	now time.Time
	// uncontended: per cluster, when the request of the latest answer was sent, if it said
	// uncontended (absent: contended, or never said)
	uncontended map[string]time.Time
	answeredAt  map[string]time.Time
	gen         int64
	asking      []askingAcquire
	slots       []*slotState
	locals      []string
	batches     [][]queuedRelease
}

type askingAcquire struct {
	cluster string
	sent    time.Time
}

func (m *tableModel) acquire(rt *rapid.T) {
	c := rapid.SampledFrom(modelClusters).Draw(rt, "cluster")
	limit := rapid.IntRange(0, 4).Draw(rt, "limit")
	if m.t.c.Reuse {
		if s, _ := m.t.takeIdle(c, limit, uint64(rapid.IntRange(0, 2).Draw(rt, "affinity")), m.now, nil); s != nil {
			if last, ok := m.uncontended[c]; !ok || !m.now.Before(last.Add(leaseReuseWindow)) {
				rt.Fatalf("%s: lease %s taken from idle at %v, the last uncontended answer asked at %v (%v)",
					c, s.hl.lease.ID, m.now.Sub(t0), last.Sub(t0), ok)
			}
			m.slots = append(m.slots, s)
			return
		}
	}
	if m.t.unreachable(m.now) || !m.t.reserve(c, limit) {
		if m.t.unavailable(c, limit) == admitLocal {
			m.locals = append(m.locals, c)
		}
		return
	}
	m.asking = append(m.asking, askingAcquire{c, m.now})
}

// answer answers an acquire in flight: granted, denied, or no answer (the control plane is
// unreachable for a while).
func (m *tableModel) answer(rt *rapid.T) {
	if len(m.asking) == 0 {
		rt.Skip("no acquire in flight")
	}
	i := rapid.IntRange(0, len(m.asking)-1).Draw(rt, "acquire")
	a := m.asking[i]
	m.asking = append(m.asking[:i], m.asking[i+1:]...)
	switch rapid.IntRange(0, 2).Draw(rt, "answer") {
	case 0:
		m.gen++
		l := Lease{ID: LeaseID(a.cluster, m.gen), Cluster: a.cluster, Generation: m.gen,
			TTLMillis: rapid.SampledFrom([]int64{0, 2000, 3000}).Draw(rt, "ttl")}
		if s, late, _ := m.t.granted(a.cluster, l, a.sent, 0, m.now); !late {
			m.slots = append(m.slots, s)
		}
	case 1:
		m.t.denied(a.cluster)
	default:
		m.t.denied(a.cluster)
		m.t.failed(m.now)
	}
}

func (m *tableModel) release(rt *rapid.T) {
	if len(m.slots)+len(m.locals) == 0 {
		rt.Skip("nothing to release")
	}
	i := rapid.IntRange(0, len(m.slots)+len(m.locals)-1).Draw(rt, "slot")
	if i < len(m.slots) {
		s := m.slots[i]
		m.slots = append(m.slots[:i], m.slots[i+1:]...)
		m.t.release(s, m.now)
		return
	}
	i -= len(m.slots)
	m.t.releaseLocal(m.locals[i])
	m.locals = append(m.locals[:i], m.locals[i+1:]...)
}

// keep is a keeper round: fence, then renew the due batch (contention checks included), each
// renewal answered at once, with what the control plane says about its cluster.
func (m *tableModel) keep(rt *rapid.T) {
	m.t.fence(m.now)
	for _, s := range m.t.dueRenewals(m.now) {
		ref, _, ok := m.t.beginRenew(s, m.now)
		if !ok {
			continue
		}
		if rapid.Bool().Draw(rt, "answered") { // otherwise the control plane said nothing
			c, contended := s.hl.lease.Cluster, rapid.Bool().Draw(rt, "contended")
			m.t.renewedContention(map[string]bool{c: contended}, m.now)
			if m.t.c.Checks {
				m.answered(c, contended, m.now)
			}
		}
		switch rapid.IntRange(0, 2).Draw(rt, "renewal") {
		case 0:
			l := s.hl.lease
			if l.Ref() != ref {
				rt.Fatalf("renewal of %+v sent for slot of %+v", ref, l)
			}
			m.t.renewed(s, m.now, l)
		case 1:
			m.t.renewRefused(s, m.now)
		default:
			m.t.renewFailed(s, m.now)
		}
	}
}

func (m *tableModel) flush(*rapid.T) {
	if b := m.t.takeBatch(); len(b) > 0 {
		m.batches = append(m.batches, b)
	}
}

// settle answers a batch in flight: landed, failed, or put back (an acquire that carried it
// got no answer).
func (m *tableModel) settle(rt *rapid.T) {
	if len(m.batches) == 0 {
		rt.Skip("no batch in flight")
	}
	i := rapid.IntRange(0, len(m.batches)-1).Draw(rt, "batch")
	b := m.batches[i]
	m.batches = append(m.batches[:i], m.batches[i+1:]...)
	switch rapid.IntRange(0, 2).Draw(rt, "outcome") {
	case 0:
		m.t.landed(b)
	case 1:
		m.t.flushFailed(b, m.now)
	default:
		m.t.putBack(b)
	}
}

// contention is an acquire's answer about a cluster, to a request sent up to 5 ms ago (answers
// may come back in any order).
func (m *tableModel) contention(rt *rapid.T) {
	c, contended := rapid.SampledFrom(modelClusters).Draw(rt, "cluster"), rapid.Bool().Draw(rt, "contended")
	sent := m.now.Add(-rapid.SampledFrom([]time.Duration{0, time.Millisecond, 5 * time.Millisecond}).Draw(rt, "age"))
	m.t.contention(c, contended, sent)
	m.answered(c, contended, sent)
}

// answered records what the model expects of an answer about c to a request sent at sent: the
// latest request's answer counts.
func (m *tableModel) answered(c string, contended bool, sent time.Time) {
	if at, ok := m.answeredAt[c]; ok && sent.Before(at) {
		return
	}
	m.answeredAt[c] = sent
	if contended {
		delete(m.uncontended, c)
	} else {
		m.uncontended[c] = sent
	}
}

// check compares the table's counts with what it holds.
func (m *tableModel) check(rt *rapid.T) {
	t := m.t
	held, idle, pending, asking, local := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	state := map[string]string{} // lease ID -> where it is
	put := func(id, where string) {
		if was, ok := state[id]; ok {
			rt.Fatalf("lease %s is %s and %s at once", id, was, where)
		}
		state[id] = where
	}
	for _, s := range m.slots {
		held[s.hl.lease.Cluster]++
		put(s.hl.lease.ID, "running")
		if s.hl.releasing {
			rt.Fatalf("running lease %s is marked released", s.hl.lease.ID)
		}
		if i, ok := t.liveIndex(s.id); !ok || t.live[i] != s {
			rt.Fatalf("slot %d of lease %s is not live in the table", s.id, s.hl.lease.ID)
		}
	}
	idleN := 0
	for c, list := range t.idle {
		list := *list
		if _, ok := m.uncontended[c]; len(list) > 0 && !ok {
			rt.Fatalf("%s: %d leases idle, the control plane's last answer said contended", c, len(list))
		}
		for _, il := range list {
			idle[c]++
			idleN++
			put(il.hl.lease.ID, "idle")
			if il.hl.releasing {
				rt.Fatalf("idle lease %s is marked released", il.hl.lease.ID)
			}
		}
	}
	queued := append([]queuedRelease(nil), t.queue...)
	for _, b := range m.batches {
		queued = append(queued, b...)
	}
	for _, q := range queued {
		pending[q.cluster]++
		put(q.ref.ID, "releasing")
	}
	for _, a := range m.asking {
		asking[a.cluster]++
	}
	for _, c := range m.locals {
		local[c]++
	}
	for _, c := range modelClusters {
		for _, n := range []struct {
			what      string
			table, is int
		}{
			{"held", t.heldOf(c), held[c]}, {"idle", len(t.idleOf(c)), idle[c]}, {"asking", t.asking[c], asking[c]},
			{"local", t.local[c], local[c]},
		} {
			if n.table != n.is {
				rt.Fatalf("%s: the table counts %d %s, it has %d", c, n.table, n.what, n.is)
			}
		}
		// An idle take reads the held count through the check's pointer: the map's entry or none.
		if ch := t.checks[c]; ch != nil && ch.held != nil && ch.held != t.held[c] {
			rt.Fatalf("%s: the check's held count (%d) is not the table's", c, *ch.held)
		}
		// Releases dropped as expired leave pending; no other way out.
		if t.pending[c] != pending[c] {
			rt.Fatalf("%s: the table counts %d pending releases, %d are queued or in flight", c, t.pending[c], pending[c])
		}
	}
	if t.localN != len(m.locals) {
		rt.Fatalf("the table's localN is %d, the driver holds %d local slots", t.localN, len(m.locals))
	}
	if len(t.live) != len(m.slots) || t.idleN != idleN {
		rt.Fatalf("the table has %d live slots and idleN %d; the driver holds %d slots, %d idle", len(t.live), t.idleN, len(m.slots), idleN)
	}
}
