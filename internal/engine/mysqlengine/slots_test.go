package mysqlengine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Goroutines taking and giving back an engine's connection slots, some waiting (take), some
// not (tryTake), some giving up while they wait: never more than max slots taken at once, and
// every waiter that does not give up gets one. A give-back that missed a waiter (no token
// left, or one token for two give-backs not passed on) leaves it asleep with slots free.
func TestSlotsBoundAndWakeEveryWaiter(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		max := rapid.IntRange(1, 4).Draw(rt, "max")
		s := newSlots(max)
		workers := rapid.IntRange(2, 12).Draw(rt, "workers")
		rounds := rapid.IntRange(1, 200).Draw(rt, "rounds")
		kinds := rapid.SliceOfN(rapid.IntRange(0, 2), workers, workers).Draw(rt, "kinds")
		var held, most, got atomic.Int64
		hold := func() {
			n := held.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			runtime.Gosched()
			held.Add(-1)
			s.give()
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					switch kinds[w] {
					case 0: // waits as long as it takes
						if err := s.take(context.Background()); err != nil {
							panic(err)
						}
						got.Add(1)
						hold()
					case 1: // does not wait
						if s.tryTake() {
							hold()
						}
					case 2: // waits a little, then gives up
						ctx, cancel := context.WithTimeout(context.Background(), 50*time.Microsecond)
						if s.take(ctx) == nil {
							hold()
						}
						cancel()
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			rt.Fatalf("waiters still asleep after 20s with %d of %d slots taken", s.inUse(), max)
		}
		if most.Load() > int64(max) {
			rt.Fatalf("%d slots held at once, max %d", most.Load(), max)
		}
		if s.inUse() != 0 {
			rt.Fatalf("%d slots taken after every give-back", s.inUse())
		}
	})
}

// Two waiters about to sleep, two slots given back before either sleeps: the one token both
// give-backs leave must wake both (the waiter that takes a slot passes it on).
func TestSlotsTwoGiveBacksWakeTwoWaiters(t *testing.T) {
	s := newSlots(2)
	s.tryTake()
	s.tryTake()
	var arrived sync.WaitGroup
	arrived.Add(2)
	gate := make(chan struct{})
	var once [2]sync.Once
	var n atomic.Int32
	s.beforeSleep = func() {
		if i := n.Add(1) - 1; i < 2 { // each waiter's first time only
			once[i].Do(func() { arrived.Done(); <-gate })
		}
	}
	woke := make(chan struct{}, 2)
	for range 2 {
		go func() {
			if s.take(context.Background()) == nil {
				woke <- struct{}{}
			}
		}()
	}
	arrived.Wait()
	s.give()
	s.give() // no waiter sleeps yet: one token for both
	close(gate)
	for i := range 2 {
		select {
		case <-woke:
		case <-time.After(10 * time.Second):
			t.Fatalf("waiter %d still asleep with %d of 2 slots taken", i+1, s.inUse())
		}
	}
}
