package mysqlengine

import (
	"context"
	"sync/atomic"
)

// slots bounds the connections an engine uses at once (Config.MaxConns). Taking a slot
// without waiting and giving one back are an atomic each: the event loop takes one and gives
// it back at every relayed statement, where a buffered channel's send and receive (a lock
// each) were ~300 instructions (callgrind, session 32). Only a taker that waits (a goroutine
// opening a connection) sleeps, on freed.
//
// No give-back is missed by a waiter: a waiter counts itself in waiting before it tries again,
// and a give-back frees its slot before it reads waiting (both sequentially consistent
// atomics), so either the waiter's try sees the slot or the give-back sees the waiter and
// leaves a token in freed. One token stands for any number of give-backs: a waiter that takes
// a slot after a wake-up passes the token on while others wait and slots are free.
type slots struct {
	used    atomic.Int64
	max     int64
	waiting atomic.Int64
	freed   chan struct{} // capacity 1: a slot was given back while someone waited
	// beforeSleep, when set (tests), runs when a waiter found no slot, before it sleeps.
	beforeSleep func()
	// wanted, when set, runs once per waiter that found no slot, after it counted itself in
	// waiting and before it sleeps: the engine asks its clients for the connections they
	// hold idle (loophold.go).
	wanted func()
}

func newSlots(n int) *slots { return &slots{max: int64(n), freed: make(chan struct{}, 1)} }

// tryTake takes a slot if one is free.
func (s *slots) tryTake() bool {
	for {
		n := s.used.Load()
		if n >= s.max {
			return false
		}
		if s.used.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// take takes a slot, waiting for one until ctx ends.
func (s *slots) take(ctx context.Context) error {
	if s.tryTake() {
		return nil
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	for asked := false; ; asked = true {
		if s.tryTake() {
			s.passOn()
			return nil
		}
		if s.wanted != nil && !asked {
			s.wanted()
		}
		if s.beforeSleep != nil {
			s.beforeSleep()
		}
		select {
		case <-s.freed:
		case <-ctx.Done():
			s.passOn() // a token this waiter took may have been another's
			return ctx.Err()
		}
	}
}

// give gives a slot back.
func (s *slots) give() {
	if s.used.Add(-1) < 0 {
		panic("mysqlengine: a connection slot given back twice")
	}
	if s.waiting.Load() > 0 {
		s.wake()
	}
}

// passOn wakes another waiter when slots are free (the caller, a waiter, still counts in
// waiting).
func (s *slots) passOn() {
	if s.waiting.Load() > 1 && s.used.Load() < s.max {
		s.wake()
	}
}

func (s *slots) wake() {
	select {
	case s.freed <- struct{}{}:
	default: // a token is there already
	}
}

// inUse is the number of slots taken.
func (s *slots) inUse() int { return int(s.used.Load()) }
