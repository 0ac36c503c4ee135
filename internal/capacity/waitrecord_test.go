package capacity_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/capacity"
)

// refRecord is the waiting record as WaitRecord defines it, kept the plain way: a map of
// entries, forgotten by walking it, read by listing it whole and ranking with ContentionOf.
type refRecord struct {
	waits  map[string]refWait
	held   map[string]int
	latest time.Time // the record's time never goes back
}

type refWait struct {
	deniedAt, since time.Time
	waiting         bool
}

func (r *refRecord) at(now time.Time) time.Time {
	now = capacity.Timestamp(now)
	if now.After(r.latest) {
		r.latest = now
	}
	return r.latest
}

func (w refWait) waitingAt(now time.Time) bool {
	return w.waiting && now.Sub(w.deniedAt) < capacity.FairWindow
}

// denied records the denials of holders at now: the first forgets the old entries, the others
// find none to forget.
func (r *refRecord) denied(now time.Time, holders ...string) {
	now = r.at(now)
	for h, w := range r.waits {
		if now.Sub(w.deniedAt) >= capacity.ContendedFor {
			delete(r.waits, h)
		}
	}
	for _, h := range holders {
		r.record(h, now)
	}
}

func (r *refRecord) record(holder string, now time.Time) {
	w, ok := r.waits[holder]
	if !ok && len(r.waits) >= capacity.WaitersMax {
		return
	}
	if !w.waitingAt(now) {
		w.since, w.waiting = now, true
	}
	w.deniedAt = now
	r.waits[holder] = w
}

func (r *refRecord) granted(holder string) {
	if w, ok := r.waits[holder]; ok {
		w.waiting = false
		r.waits[holder] = w
	}
}

// contention is the record at now, listed whole and ranked for each of holders.
func (r *refRecord) contention(now time.Time, holders []string) map[string]capacity.Contention {
	now = r.at(now)
	var denied []capacity.Waiter
	for h, w := range r.waits {
		if now.Sub(w.deniedAt) < capacity.ContendedFor {
			denied = append(denied, capacity.Waiter{Holder: h, Since: w.since, Waiting: w.waitingAt(now)})
		}
	}
	out := map[string]capacity.Contention{}
	for _, h := range holders {
		out[h] = capacity.ContentionOf(h, r.held, denied)
	}
	return out
}

// TestWaitRecordMatchesContentionOf runs random sequences of acquires, releases, denials,
// grants, floods of new holders (filling the record to WaitersMax) and clock moves (forward
// by the record's own windows and around them, and back) on the in-memory store, and requires
// its Contention answer for every holder, after every step, to be the plain record's.
func TestWaitRecordMatchesContentionOf(t *testing.T) {
	ctx := context.Background()
	holders := []string{"a", "b", "c", "d", "e", "f"}
	steps := []time.Duration{0, time.Microsecond, 10 * time.Millisecond, capacity.RetryAskEvery,
		capacity.FairWindow - time.Microsecond, capacity.FairWindow, capacity.ContendedFor - time.Microsecond,
		capacity.ContendedFor, -time.Microsecond, -capacity.FairWindow}
	rapid.Check(t, func(rt *rapid.T) {
		m := capacity.NewMemory()
		ref := &refRecord{waits: map[string]refWait{}, held: map[string]int{}}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		leases := map[string][]capacity.Lease{}
		floods := 0
		// The cluster exists from the start, so the store keeps its record's time from the
		// first read on, as the plain record does.
		first, err := m.Acquire(ctx, "c", "setup", 1, time.Minute, now)
		if err != nil || m.Release(ctx, first.Ref()) != nil {
			rt.Fatal(err)
		}
		for step := range rapid.IntRange(1, 80).Draw(rt, "steps") {
			h := rapid.SampledFrom(holders).Draw(rt, "holder")
			switch op := rapid.IntRange(0, 11).Draw(rt, "op"); op {
			case 0, 1:
				l, err := m.Acquire(ctx, "c", h, 1000, time.Minute, now)
				if err != nil {
					rt.Fatal(err)
				}
				leases[h] = append(leases[h], l)
				ref.held[h]++
			case 2:
				if n := len(leases[h]); n > 0 {
					if err := m.Release(ctx, leases[h][n-1].Ref()); err != nil {
						rt.Fatal(err)
					}
					leases[h] = leases[h][:n-1]
					if ref.held[h]--; ref.held[h] == 0 {
						delete(ref.held, h)
					}
				}
			case 3, 4, 5:
				if err := m.MarkDenied(ctx, "c", h, now); err != nil {
					rt.Fatal(err)
				}
				ref.denied(now, h)
			case 6:
				if err := m.MarkGranted(ctx, "c", h); err != nil {
					rt.Fatal(err)
				}
				ref.granted(h)
			case 7, 8, 9, 10:
				now = now.Add(rapid.SampledFrom(steps).Draw(rt, "step"))
			case 11:
				n := rapid.SampledFrom([]int{1, capacity.WaitersMax / 2, capacity.WaitersMax}).Draw(rt, "flood")
				names := make([]string, n)
				for i := range names {
					names[i] = fmt.Sprintf("flood-%d-%d", floods, i)
					if err := m.MarkDenied(ctx, "c", names[i], now); err != nil {
						rt.Fatal(err)
					}
				}
				ref.denied(now, names...)
				floods++
			}
			asked := append(holders, "nobody", "flood-0-0")
			want := ref.contention(now, asked)
			for _, h := range asked {
				got, err := m.Contention(ctx, "c", h, now)
				if err != nil {
					rt.Fatal(err)
				}
				if got != want[h] {
					rt.Fatalf("step %d, %s at %v: got %+v, want %+v", step, h, now.Format("15:04:05.000000"), got, want[h])
				}
			}
		}
	})
}
