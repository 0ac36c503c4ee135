package capacity

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
)

// countingLocks counts the sweep lock's takings (one per round) and the terms asked; past
// stopAfter it ends the sweeper's context, so a sweeper that never waits stops all the same.
type countingLocks struct {
	*Memory
	rounds    int
	ttls      map[time.Duration]int
	stopAfter int
	stop      context.CancelFunc
}

func (c *countingLocks) AcquireSweepLock(ctx context.Context, name, owner string, ttl time.Duration, now time.Time) (SweepLock, error) {
	c.rounds++
	c.ttls[ttl]++
	if c.rounds >= c.stopAfter {
		c.stop()
	}
	return c.Memory.AcquireSweepLock(ctx, name, owner, ttl, now)
}

// TestSweeperRoundsEveryFiveSecondsByDefault: a sweeper given no interval (Every 0 or below)
// sweeps every 5 s (jittered by a tenth), taking the sweep lock for two intervals; one given an
// interval sweeps at that one. Not: a loop with no wait (the s39 mutants 16, 18 and 19 of the
// default), nor the default where an interval is given.
func TestSweeperRoundsEveryFiveSecondsByDefault(t *testing.T) {
	for _, c := range []struct {
		every, want time.Duration
	}{{0, 5 * time.Second}, {-time.Second, 5 * time.Second}, {2 * time.Second, 2 * time.Second}} {
		s := sim.New(sim.Opts{Seed: 1})
		n := s.AddNode("cp", nil)
		m := NewMemory()
		locks := &countingLocks{Memory: m, ttls: map[time.Duration]int{}, stopAfter: 1000}
		sw := &Sweeper{Env: n.Env(), Store: m, Locks: locks, Owner: "cp", Every: c.every}
		s.Spawn(n, "test", func() {
			ctx, cancel := n.Env().WithTimeout(context.Background(), time.Minute)
			locks.stop = cancel
			sw.Run(ctx)
			cancel()
		})
		if err := s.Run(time.Hour); err != nil {
			t.Fatal(err)
		}
		// A minute at want +-10%: between 60/(1.1 want) and 60/(0.9 want) rounds, plus the first.
		lo, hi := int(time.Minute/(c.want*11/10)), int(time.Minute/(c.want*9/10))+1
		if locks.rounds < lo || locks.rounds > hi {
			t.Errorf("Every %v: %d rounds in a minute; want %d to %d (one every %v)", c.every, locks.rounds, lo, hi, c.want)
		}
		if len(locks.ttls) != 1 || locks.ttls[2*c.want] == 0 {
			t.Errorf("Every %v: the sweep lock taken for %v; want %v each round", c.every, locks.ttls, 2*c.want)
		}
	}
}
