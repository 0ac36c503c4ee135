// Package monotime builds time.Time values that carry a chosen monotonic reading, which the
// time package has no constructor for: the simulator's node clocks and the real daemons' test
// clock hook move a process's wall reading apart from its monotonic one (an NTP step), as
// Go's own time.Now() readings may be. It touches nothing but its arguments: it writes
// time.Time's fields as the time package lays them out, checked against the time package's
// own behaviour once, at start (Check).
package monotime

import (
	"fmt"
	"time"
	"unsafe"
)

// layout mirrors time.Time: with the hasMonotonic bit set, wall holds 33 bits of seconds since
// 1885-01-01 and 30 bits of nanoseconds, and ext the monotonic reading in nanoseconds.
type layout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

const (
	hasMonotonic = 1 << 63
	nsecShift    = 30
)

var epoch1885 = time.Date(1885, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// New returns wall (its location kept) carrying the monotonic reading mono; outside what a
// monotonic-carrying Time can hold (before 1885, after 2157), wall alone.
func New(wall time.Time, mono time.Duration) time.Time {
	sec := wall.Unix() - epoch1885
	if sec < 0 || sec >= 1<<33 {
		return wall
	}
	t := wall
	l := (*layout)(unsafe.Pointer(&t))
	l.wall = hasMonotonic | uint64(sec)<<nsecShift | uint64(wall.Nanosecond())
	l.ext = int64(mono)
	return t
}

// Base is a wall reading split once into what New computes from it, for At: the simulator
// reads each node's clock from one base hundreds of thousands of times a run.
type Base struct {
	t    time.Time
	sec  int64 // t's seconds since 1885-01-01
	nsec int64
	loc  *time.Location // as t holds it (nil for UTC)
}

// NewBase prepares t for At.
func NewBase(t time.Time) Base {
	return Base{t: t, sec: t.Unix() - epoch1885, nsec: int64(t.Nanosecond()), loc: (*layout)(unsafe.Pointer(&t)).loc}
}

// At is New(b's reading + d, mono), the same value, without the work of time.Time's Add and
// Unix.
func (b *Base) At(d, mono time.Duration) time.Time {
	sec := b.sec + int64(d/time.Second)
	nsec := b.nsec + int64(d%time.Second)
	if nsec < 0 {
		nsec += int64(time.Second)
		sec--
	} else if nsec >= int64(time.Second) {
		nsec -= int64(time.Second)
		sec++
	}
	if sec < 0 || sec >= 1<<33 {
		return New(b.t.Add(d), mono)
	}
	var t time.Time
	l := (*layout)(unsafe.Pointer(&t))
	l.wall = hasMonotonic | uint64(sec)<<nsecShift | uint64(nsec)
	l.ext = int64(mono)
	l.loc = b.loc
	return t
}

// Of returns t's monotonic reading, and false when it has none.
func Of(t time.Time) (time.Duration, bool) {
	l := (*layout)(unsafe.Pointer(&t))
	if l.wall&hasMonotonic == 0 {
		return 0, false
	}
	return time.Duration(l.ext), true
}

// Check reports whether New and Of work as the time package reads its values: Equal and Sub
// between two readings use the monotonic ones, Round(0) and UnixNano the wall one.
func Check() error { return checked }

var checked = check()

func check() error {
	if unsafe.Sizeof(time.Time{}) != unsafe.Sizeof(layout{}) {
		return fmt.Errorf("monotime: time.Time changed layout")
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 7, time.UTC)
	a := New(base, time.Second)
	b := New(base.Add(time.Hour), 3*time.Second) // the wall jumped an hour, 2s passed
	mono, ok := Of(a)
	switch {
	case !a.Equal(New(base.Add(time.Minute), time.Second)),
		b.Sub(a) != 2*time.Second,
		b.Round(0).Sub(a.Round(0)) != time.Hour,
		a.UnixNano() != base.UnixNano(),
		a.Location() != time.UTC,
		!ok || mono != time.Second:
		return fmt.Errorf("monotime: time.Time's monotonic reading does not work as expected (%v, %v)", a, b)
	}
	return nil
}
