package capacity

import (
	"container/list"
	"slices"
	"sort"
	"time"
)

// waitRecord is one cluster's waiting record in the in-memory store, indexed so that a read
// costs O(log n) and a denial O(1) amortized, whatever the number of holders recorded (a
// full cluster is asked every RetryAskEvery by every waiting worker of a fleet):
//
//   - byDenial lists the entries oldest denial first: a denial moves its entry to the back,
//     forgetting takes from the front, and the last two entries say whether others were
//     denied lately;
//   - window marks the first entry denied within FairWindow of latest;
//   - ranked holds the entries waiting at latest, in rank order (Contention.Ahead).
//
// The record's time never goes back: a call with a time before the latest one it has seen is
// taken at the latest (it waited for the store's mutex meanwhile). With times that never go
// back, its answers are ContentionOf's over the whole record (TestWaitRecordMatchesContentionOf).
type waitRecord struct {
	byHolder map[string]*waitEntry
	byDenial list.List     // of *waitEntry, oldest denial first
	window   *list.Element // first entry of byDenial denied within FairWindow of latest; nil if none
	ranked   []*waitEntry  // the entries waiting at latest, by rankLess
	latest   time.Time
}

// waitEntry is one holder's entry.
type waitEntry struct {
	holder          string
	deniedAt, since time.Time
	waiting         bool // denied since its last grant
	held            int  // the holder's leases: the rank's first key, current while ranked
	ranked          bool // in ranked: waiting, and denied within FairWindow of latest
	elem            *list.Element
}

func newWaitRecord() waitRecord { return waitRecord{byHolder: map[string]*waitEntry{}} }

// rankLess is the waiting order: fewer leases held, then waiting longer, then by name.
func rankLess(a, b *waitEntry) bool {
	switch {
	case a.held != b.held:
		return a.held < b.held
	case !a.since.Equal(b.since):
		return a.since.Before(b.since)
	}
	return a.holder < b.holder
}

// advance moves the record's time to now (unless now is earlier: then it stays) and returns
// it; entries whose last denial falls out of FairWindow stop ranking.
func (r *waitRecord) advance(now time.Time) time.Time {
	if now.Before(r.latest) {
		return r.latest
	}
	r.latest = now
	for r.window != nil {
		e := r.window.Value.(*waitEntry)
		if now.Sub(e.deniedAt) < FairWindow {
			break
		}
		r.unrank(e)
		r.window = r.window.Next()
	}
	return now
}

// denied records holder's denial at now (holding held leases), as MarkDenied says.
func (r *waitRecord) denied(holder string, held int, now time.Time) {
	now = r.advance(now)
	r.forget(now)
	e := r.byHolder[holder]
	if e == nil {
		if len(r.byHolder) >= WaitersMax {
			return
		}
		e = &waitEntry{holder: holder, held: held}
		e.elem = r.byDenial.PushBack(e)
		r.byHolder[holder] = e
	}
	if !e.ranked { // no wait going on: one starts
		e.since, e.waiting = now, true
	}
	e.deniedAt = now
	r.toBack(e)
	if !e.ranked {
		r.rank(e)
	}
}

// granted ends holder's wait.
func (r *waitRecord) granted(holder string) {
	if e := r.byHolder[holder]; e != nil {
		e.waiting = false
		r.unrank(e)
	}
}

// setHeld records that holder now holds held leases.
func (r *waitRecord) setHeld(holder string, held int) {
	e := r.byHolder[holder]
	if e == nil || e.held == held {
		return
	}
	wasRanked := e.ranked
	r.unrank(e)
	e.held = held
	if wasRanked {
		r.rank(e)
	}
}

// read fills in c (whose Held is holder's leases) from the record at now.
func (r *waitRecord) read(c *Contention, holder string, now time.Time) {
	now = r.advance(now)
	for el := r.byDenial.Back(); el != nil; el = el.Prev() {
		if e := el.Value.(*waitEntry); e.holder != holder {
			c.Others = now.Sub(e.deniedAt) < ContendedFor
			break
		}
	}
	if e := r.byHolder[holder]; e != nil && e.ranked {
		c.Wait, c.Waiting = Waiter{Holder: holder, Since: e.since, Waiting: true}, true
		c.Ahead = r.position(e)
		return
	}
	c.Ahead = sort.Search(len(r.ranked), func(i int) bool { return r.ranked[i].held > c.Held })
}

// forget drops the entries denied ContendedFor or longer before now.
func (r *waitRecord) forget(now time.Time) {
	for el := r.byDenial.Front(); el != nil; el = r.byDenial.Front() {
		e := el.Value.(*waitEntry)
		if now.Sub(e.deniedAt) < ContendedFor {
			return
		}
		r.unrank(e)
		if r.window == el {
			r.window = el.Next()
		}
		r.byDenial.Remove(el)
		delete(r.byHolder, e.holder)
	}
}

// toBack moves e, just denied at latest, to the back of byDenial, inside the window.
func (r *waitRecord) toBack(e *waitEntry) {
	if r.window == e.elem {
		r.window = e.elem.Next()
	}
	r.byDenial.MoveToBack(e.elem)
	if r.window == nil {
		r.window = e.elem
	}
}

// position is e's index in ranked (binary search: ranks are distinct, names are).
func (r *waitRecord) position(e *waitEntry) int {
	return sort.Search(len(r.ranked), func(i int) bool { return !rankLess(r.ranked[i], e) })
}

func (r *waitRecord) rank(e *waitEntry) {
	r.ranked = slices.Insert(r.ranked, r.position(e), e)
	e.ranked = true
}

func (r *waitRecord) unrank(e *waitEntry) {
	if !e.ranked {
		return
	}
	i := r.position(e)
	r.ranked = slices.Delete(r.ranked, i, i+1)
	e.ranked = false
}
