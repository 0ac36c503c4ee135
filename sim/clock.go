package sim

// A node's clock reads like Go's: time.Now() carries a wall reading and a monotonic one, and
// Sub, Before, After and Equal between two readings of one process use the monotonic one, so a
// wall-clock step (NTP, an operator) does not move durations measured inside the process. What
// leaves the process (a timestamp in a database, on the wire, after UTC(), Round(0) or
// Truncate) keeps the wall reading only. Drift (SetClock) moves both readings; StepWall moves the
// wall reading alone.
//
// time.Time has no constructor for a chosen monotonic reading: internal/monotime builds them.

import (
	"fmt"
	"time"

	"github.com/queryflux/queryflux/internal/monotime"
)

func init() {
	if err := monotime.Check(); err != nil {
		panic(fmt.Sprintf("sim: %v; the node clocks cannot carry a monotonic reading", err))
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
	n.read = clockReading{}
	return nil
}
