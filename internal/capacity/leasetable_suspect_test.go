package capacity

import (
	"testing"
	"time"
)

// TestSuspectAnswersNameEachLie: every way a grant or a renewal answer can be wrong on its own
// (one field off, the others right) is named, so a worker neither counts a lease under another
// cluster nor runs two queries on one lease (one of them idle) nor takes another lease's renewal
// for its own.
func TestSuspectAnswersNameEachLie(t *testing.T) {
	tb := newLeaseTable(tableConfig{LeaseTTL: 3 * time.Second, DriftMargin: 500 * time.Millisecond, RenewEvery: time.Second, Reuse: true})
	lease := func(cluster string, gen int64) Lease {
		return Lease{ID: LeaseID(cluster, gen), Cluster: cluster, Holder: "w", Generation: gen, TTLMillis: 3000}
	}
	idle := lease("c", 4)
	tb.idle["c"] = &[]idleLease{{hl: &heldLease{lease: idle}}}
	ended := lease("c", 2)
	tb.ended.add(ended.Ref())
	otherCluster := lease("c", 9)
	otherCluster.Cluster = "elsewhere" // the id is c's
	idOfAnother := lease("c", 9)
	idOfAnother.ID = LeaseID("c", 8) // the generation is 9
	genZero := lease("c", 0)
	revoked := lease("c", 10)
	revoked.Revoked = true
	for _, c := range []struct {
		name string
		l    Lease
		want string
	}{
		{"honest", lease("c", 11), ""},
		{"the id of c, the cluster another", otherCluster, answerMalformed},
		{"an id of another generation", idOfAnother, answerMalformed},
		{"generation 0", genZero, answerMalformed},
		{"revoked", revoked, answerRevoked},
		{"given up before", ended, answerEnded},
		{"kept idle", idle, answerDuplicate},
	} {
		if got := tb.suspectGrant("c", c.l); got != c.want {
			t.Errorf("grant %s (%+v): %q, want %q", c.name, c.l, got, c.want)
		}
	}

	held := lease("c", 5)
	anotherGen := held
	anotherGen.Generation = 6 // the id is still c#5
	anotherID := held
	anotherID.ID = LeaseID("c", 6)
	anotherCluster := held
	anotherCluster.Cluster = "elsewhere"
	revokedRenewal := held
	revokedRenewal.Revoked = true
	for _, c := range []struct {
		name string
		l    Lease
		want string
	}{
		{"honest", held, ""},
		{"another generation", anotherGen, answerOther},
		{"another id", anotherID, answerOther},
		{"another cluster", anotherCluster, answerOther},
		{"revoked", revokedRenewal, answerRevoked},
	} {
		if got := suspectRenewal(held, c.l); got != c.want {
			t.Errorf("renewal answered %s (%+v): %q, want %q", c.name, c.l, got, c.want)
		}
	}
}

// TestEndedLeasesAreBounded: a worker that gives up many leases remembers the last endedMax of
// them, each once, and no more: its memory of them does not grow with its uptime, and a lease it
// gave up lately is still told from a fresh grant.
func TestEndedLeasesAreBounded(t *testing.T) {
	var e endedLeases
	ref := func(i int) LeaseRef { return LeaseRef{ID: LeaseID("c", int64(i)), Generation: int64(i)} }
	const n = 3*endedMax + 17
	for i := 1; i <= n; i++ {
		e.add(ref(i))
		e.add(ref(i)) // given up twice (released, then its release dropped): one entry
	}
	if len(e.set) != endedMax || len(e.ring) != endedMax {
		t.Fatalf("after %d leases given up: %d remembered (%d in the ring), want %d", n, len(e.set), len(e.ring), endedMax)
	}
	for i := 1; i <= n; i++ {
		if want := i > n-endedMax; e.has(ref(i)) != want {
			t.Fatalf("lease %d of %d: remembered %v, want %v (the last %d)", i, n, e.has(ref(i)), want, endedMax)
		}
	}
}
