package sim

// A node's clock reads like Go's: time.Now() carries a wall reading and a monotonic one, and
// Sub, Before, After and Equal between two readings of one process use the monotonic one, so a
// wall-clock step (NTP, an operator) does not move durations measured inside the process. What
// leaves the process (a timestamp in a database, on the wire, after UTC(), Round(0) or
// Truncate) keeps the wall reading only. Drift (SetClock) moves both readings; StepWall moves the
// wall reading alone.
//
// time.Time has no constructor for a chosen monotonic reading, so monoTime writes the fields
// itself (checked against the time package's own behaviour once, at start).

import (
	"fmt"
	"time"
	"unsafe"
)

// timeLayout mirrors time.Time: with the hasMonotonic bit set, wall holds 33 bits of seconds
// since 1885-01-01 and 30 bits of nanoseconds, and ext the monotonic reading in nanoseconds.
type timeLayout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

const (
	hasMonotonic = 1 << 63
	nsecShift    = 30
)

var epoch1885 = time.Date(1885, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// monoTime returns wall carrying the monotonic reading mono (wall's own location kept).
func monoTime(wall time.Time, mono time.Duration) time.Time {
	sec := wall.Unix() - epoch1885
	if sec < 0 || sec >= 1<<33 {
		return wall // outside what a monotonic-carrying Time can hold: the wall reading only
	}
	t := wall
	l := (*timeLayout)(unsafe.Pointer(&t))
	l.wall = hasMonotonic | uint64(sec)<<nsecShift | uint64(wall.Nanosecond())
	l.ext = int64(mono)
	return t
}

func init() {
	if unsafe.Sizeof(time.Time{}) != unsafe.Sizeof(timeLayout{}) {
		panic("sim: time.Time changed layout; update sim/clock.go")
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 7, time.UTC)
	a := monoTime(base, time.Second)
	b := monoTime(base.Add(time.Hour), 3*time.Second) // the wall jumped an hour, 2s passed
	switch {
	case !a.Equal(monoTime(base.Add(time.Minute), time.Second)),
		b.Sub(a) != 2*time.Second,
		b.Round(0).Sub(a.Round(0)) != time.Hour+0,
		a.UnixNano() != base.UnixNano(),
		a.Location() != time.UTC:
		panic(fmt.Sprintf("sim: time.Time's monotonic reading does not work as expected (%v, %v); update sim/clock.go", a, b))
	}
}

// StepWall steps the node's wall clock by d (an NTP step, an operator's date -s), leaving its
// monotonic clock alone: durations measured inside the node do not see it, timestamps it
// writes or compares with other machines' do. |total step| <= MaxOffset.
func (n *Node) StepWall(d time.Duration) error {
	step := n.wallStep + d
	if step > MaxOffset || step < -MaxOffset {
		return fmt.Errorf("sim: wall clock of %s stepped %v in all, beyond ±%v", n.name, step, MaxOffset)
	}
	n.s.mixStrings(evFault, "wall-step", n.name, d.String())
	n.wallStep = step
	return nil
}
