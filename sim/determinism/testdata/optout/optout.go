// Package optout is a listener.
//
// determinism: outside the simulator (fixture: a network listener)
package optout

import "time"

func Now() time.Time { return time.Now() }
