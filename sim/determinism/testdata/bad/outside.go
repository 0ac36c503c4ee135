package bad

import (
	"context"
	"time"

	"github.com/queryflux/queryflux/sim/determinism/testdata/outside"
)

// Calls into a package outside the simulator count by what they reach.
func Outside(ctx context.Context, m map[string]int) {
	_ = outside.Now()                         // want "outside.Now is outside the simulator and reaches time.Now"
	_ = outside.Indirect()                    // want "reaches time.Now"
	_ = outside.Wall()                        // want "outside.Wall is outside"
	_ = outside.Seed()                        // want "outside.Seed is outside"
	_ = outside.Booted()                      // want "outside.Booted is outside"
	outside.Ticker{}.Tick()                   // want "outside.Ticker.Tick is outside"
	var c outside.Clock = outside.RealClock{} // want "outside.RealClock is outside"
	_ = c.Now()
	_ = outside.Keys(m)      // want "range over a map"
	outside.Pong(2)          // want "outside.Pong is outside"
	outside.Ping(2)          // want "outside.Ping is outside"
	_ = outside.Connect(ctx) // want "not reviewed"
	f := outside.Now         // want "outside.Now is outside"
	_ = f
	var t time.Time = outside.Clock(nil).Now()
	_ = t
}
