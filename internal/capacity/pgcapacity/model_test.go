package pgcapacity_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/capacity"
)

// outcome turns an error into the answer the two stores must agree on.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, capacity.ErrAtCapacity):
		return "at-capacity"
	case errors.Is(err, capacity.ErrStaleGeneration):
		return "stale"
	case errors.Is(err, capacity.ErrNotHolder):
		return "not-holder"
	case errors.Is(err, capacity.ErrLockHeld):
		return "lock-held"
	case errors.Is(err, capacity.ErrInvalid):
		return "invalid"
	}
	return "error: " + err.Error()
}

// TestModelMemoryMatchesPostgres runs random sequences of acquire (named or not), renew, release,
// release-batch (claimed by the right holder, the wrong one or none), revocations (expired,
// by holder, by ref), sweep locks, the waiting record (denials, grants) and clock advances against the in-memory
// store and the Postgres store, requires the same answer from both at every step, and checks
// that no cluster ever holds more leases than its cap.
func TestModelMemoryMatchesPostgres(t *testing.T) {
	pg, pool := newStore(t, 4)
	pg.UseCallerClock()
	ctx := context.Background()
	clusters := []string{"a", "b", "c"}
	holders := []string{"w1", "w2", "w3"}
	rapid.Check(t, func(rt *rapid.T) {
		if _, err := pool.Exec(ctx, "TRUNCATE capacity_leases, capacity_clusters, capacity_sweep_locks, capacity_waiters"); err != nil {
			rt.Fatal(err)
		}
		mem := capacity.NewMemory()
		now := t0
		caps := map[string]int{}
		for _, c := range clusters {
			caps[c] = rapid.IntRange(1, 4).Draw(rt, "cap-"+c)
		}
		var seen []capacity.Lease // every lease ever granted, for renew/release targets
		pickRef := func(rt *rapid.T) capacity.LeaseRef {
			if len(seen) == 0 || rapid.IntRange(0, 9).Draw(rt, "bogus") == 0 {
				c := rapid.SampledFrom(clusters).Draw(rt, "ref-cluster")
				g := rapid.Int64Range(0, 20).Draw(rt, "ref-gen")
				return capacity.LeaseRef{ID: capacity.LeaseID(c, g), Generation: g}
			}
			ref := rapid.SampledFrom(seen).Draw(rt, "ref").Ref()
			if rapid.IntRange(0, 9).Draw(rt, "wrong-gen") == 0 {
				ref.Generation++ // a stale holder's idea of the generation
			}
			if rapid.Bool().Draw(rt, "claimed") { // a worker's request: claimed by a holder, maybe the wrong one
				ref.Holder = rapid.SampledFrom(holders).Draw(rt, "claimant")
			}
			return ref
		}
		ttl := func(rt *rapid.T) time.Duration {
			return time.Duration(rapid.IntRange(1, 2000).Draw(rt, "ttl-ms")) * time.Millisecond
		}
		both := func(what string, m, p any, merr, perr error) {
			if outcome(merr) != outcome(perr) || (merr == nil && !reflect.DeepEqual(m, p)) {
				rt.Fatalf("%s: memory %+v (%v), postgres %+v (%v)", what, m, outcome(merr), p, outcome(perr))
			}
		}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for step := range steps {
			switch op := rapid.IntRange(0, 10).Draw(rt, "op"); op {
			case 0, 1: // acquire, twice as often
				c := rapid.SampledFrom(clusters).Draw(rt, "cluster")
				h := rapid.SampledFrom(holders).Draw(rt, "holder")
				d := ttl(rt)
				// Named or not: a name whose lease is live is answered that lease, renewed.
				name := rapid.SampledFrom([]string{"", "", "n1", "n2"}).Draw(rt, "request")
				m, merr := mem.AcquireNamed(ctx, c, h, name, caps[c], d, now)
				p, perr := pg.AcquireNamed(ctx, c, h, name, caps[c], d, now)
				both("acquire "+name, m, p, merr, perr)
				if merr == nil {
					seen = append(seen, m)
				}
			case 2:
				ref, d := pickRef(rt), ttl(rt)
				m, merr := mem.Renew(ctx, ref, d, now)
				p, perr := pg.Renew(ctx, ref, d, now)
				both("renew "+ref.ID, m, p, merr, perr)
			case 3:
				ref := pickRef(rt)
				both("release "+ref.ID, nil, nil, mem.Release(ctx, ref), pg.Release(ctx, ref))
			case 4:
				refs := make([]capacity.LeaseRef, rapid.IntRange(0, 5).Draw(rt, "batch"))
				for i := range refs {
					refs[i] = pickRef(rt)
				}
				m, merr := mem.ReleaseBatch(ctx, refs)
				p, perr := pg.ReleaseBatch(ctx, refs)
				both("release-batch", m, p, merr, perr)
			case 5, 6:
				var sel capacity.Selection
				sel.Expired = rapid.Bool().Draw(rt, "revoke-expired")
				if rapid.Bool().Draw(rt, "revoke-holder") {
					sel.Holder = rapid.SampledFrom(holders).Draw(rt, "evict")
				}
				for range rapid.IntRange(0, 2).Draw(rt, "revoke-refs") {
					sel.Refs = append(sel.Refs, pickRef(rt))
				}
				m, merr := mem.Revoke(ctx, sel, now)
				p, perr := pg.Revoke(ctx, sel, now)
				both(fmt.Sprintf("revoke %+v", sel), m, p, merr, perr)
			case 7:
				owner := rapid.SampledFrom([]string{"cp1", "cp2"}).Draw(rt, "owner")
				if rapid.Bool().Draw(rt, "lock-release") {
					both("unlock", nil, nil, mem.ReleaseSweepLock(ctx, "sweep", owner), pg.ReleaseSweepLock(ctx, "sweep", owner))
					break
				}
				d := ttl(rt)
				m, merr := mem.AcquireSweepLock(ctx, "sweep", owner, d, now)
				p, perr := pg.AcquireSweepLock(ctx, "sweep", owner, d, now)
				both("lock", m, p, merr, perr)
			case 8: // time passes, to the microsecond and below
				now = now.Add(time.Duration(rapid.Int64Range(0, 1_500_000_000).Draw(rt, "advance-ns")))
			case 9, 10: // the waiting record: a denial, or a grant ending a wait
				c := rapid.SampledFrom(clusters).Draw(rt, "wait-cluster")
				h := rapid.SampledFrom(holders).Draw(rt, "wait-holder")
				if op == 9 {
					both("mark denied", nil, nil, mem.MarkDenied(ctx, c, h, now), pg.MarkDenied(ctx, c, h, now))
				} else {
					both("mark granted", nil, nil, mem.MarkGranted(ctx, c, h), pg.MarkGranted(ctx, c, h))
				}
			}
			for _, c := range clusters {
				for _, h := range holders {
					m, merr := mem.Contention(ctx, c, h, now)
					p, perr := pg.Contention(ctx, c, h, now)
					both(fmt.Sprintf("contention %s for %s after step %d", c, h, step), m, p, merr, perr)
				}
			}
			for _, c := range clusters {
				m, _ := mem.List(ctx, c)
				p, err := pg.List(ctx, c)
				if err != nil {
					rt.Fatal(err)
				}
				both(fmt.Sprintf("list %s after step %d", c, step), m, p, nil, nil)
				if len(p) > caps[c] {
					rt.Fatalf("cluster %s holds %d leases, cap %d", c, len(p), caps[c])
				}
			}
		}
	})
}
