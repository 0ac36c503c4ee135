package env

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A Loop runs a node's periodic duties (heartbeats, probes, health checks, lease renewals) in
// one task instead of a task each: it sleeps until the earliest duty is due or one is woken,
// and runs what is due. A duty that waits (a round trip) runs as a task of its own while it
// runs, so a slow duty never delays another: each keeps its own period and failure handling,
// as it had in a task of its own, while the tasks that sit parked between runs are one per
// node instead of one per duty (a simulated fleet of thousands pays a stack for each).
//
// Add the duties, then Run the loop in a task (Env.Go). It uses only the Env.
type Loop struct {
	e      Env
	wake   Signal // a duty was woken, or a blocking run ended due before the loop's timer
	duties []*Duty

	// seen is, for each duty, what the loop's task last saw of it: when take would next run it
	// by the clock (zero: only when woken), or that the loop must ask the duty itself (take)
	// because a blocking run of it is under way or the loop has not seen it yet. What it saw
	// stays true until a Wake (only a blocking run's end changes a duty otherwise, and the loop
	// asks a duty while its run is under way), so while no Wake came since the loop looked
	// (wakes still seenWakes), a duty seen due later than now, or only when woken, is not
	// asked: a loop that wakes every probe interval asked each of its duties each time, a lock
	// and a cache miss apiece, about 3 % of a simulated 1,000-worker fleet's CPU.
	seen      []seenDuty
	seenWakes uint64
	wakes     atomic.Uint64 // Wake calls of the loop's duties

	mu sync.Mutex
	// aim is when the loop's pending timer fires while it waits for one; zero while it runs
	// its duties or waits without a timer. A blocking run that ends due no sooner than aim
	// leaves the loop asleep: that timer wakes it in time (a fleet's blocking runs end by the
	// thousand per virtual second, and the loop had nothing to do at most of those wake-ups).
	aim time.Time
}

// seenDuty is what the loop's task knows of a duty without asking it.
type seenDuty struct {
	next  time.Time // when take would run it by the clock; zero: only when woken
	ask   bool      // a blocking run is under way, or the loop has not seen the duty yet
	timed bool      // Duty.Timed, which never changes
}

// Duty is one job of a Loop. Set the exported fields, then Add it to one loop. Wake may be
// called at any time, before the loop runs too.
type Duty struct {
	// Name names the task of a blocking run.
	Name string
	// Run does the job and returns when it is next due; the zero time means only when woken.
	// due is when this run was due (for a run that Wake asked for: when the loop ran it).
	Run func(ctx context.Context, due time.Time) (next time.Time)
	// Blocks says Run waits (round trips, sleeps): each run is a task of its own, one at a
	// time, and the loop goes on meanwhile. Otherwise Run runs in the loop's task and must not
	// wait.
	Blocks bool
	// Quick, for a blocking duty, runs first in the loop's task and must not wait: ok means
	// this run had nothing to wait for and is over (next as Run's), and no task is started for
	// it. (Most of a lease keeper's runs find nothing to renew.)
	Quick func(ctx context.Context, due time.Time) (next time.Time, ok bool)
	// Timed says the duty measures how late the loop's timer wakes (the self-health probe): it
	// runs only when the timer fires (never on another duty's wake-up), and its due is the time
	// that timer was set for (it may have been set for another duty), so now minus due is how
	// late the timer woke. A timed duty cannot block.
	Timed bool
	// First is how long after the loop starts the duty first runs (0: at once). With
	// WhenWoken it first runs when woken.
	First     time.Duration
	WhenWoken bool
	// Stop, if set, runs in the loop's task once the loop's context ends.
	Stop func(ctx context.Context)

	mu      sync.Mutex
	loop    *Loop
	due     time.Time // zero: not scheduled
	woken   bool
	running bool // a blocking run is under way

	task   func(ctx context.Context) // a blocking run's task, made once
	runDue time.Time                 // the due of the blocking run under way
}

// NewLoop returns a loop with no duties.
func NewLoop(e Env) *Loop { return &Loop{e: e, wake: e.NewSignal()} }

// StartLoop runs duties in a loop of their own, a task named name, until ctx ends.
func StartLoop(ctx context.Context, e Env, name string, duties ...*Duty) {
	l := NewLoop(e)
	l.Add(duties...)
	e.Go(ctx, name, l.Run)
}

// Add adds duties to the loop. Call it before Run; a duty belongs to one loop.
func (l *Loop) Add(duties ...*Duty) {
	for _, d := range duties {
		if d.Timed && d.Blocks {
			panic(fmt.Sprintf("env: duty %q is timed and blocking: a timed duty runs in the loop", d.Name))
		}
		d.mu.Lock()
		owner := d.loop
		d.loop = l
		d.mu.Unlock()
		if owner != nil {
			panic(fmt.Sprintf("env: duty %q added to a second loop", d.Name))
		}
		if d.Blocks {
			d.task = func(ctx context.Context) {
				d.mu.Lock()
				due := d.runDue
				d.mu.Unlock()
				next := d.Run(ctx, due)
				if woken := d.done(next); woken || l.sleepsPast(next) {
					l.wake.Notify()
				}
			}
		}
		l.duties = append(l.duties, d)
		l.seen = append(l.seen, seenDuty{ask: true, timed: d.Timed})
	}
}

// Wake makes the duty run as soon as it can: at once, or when its blocking run under way ends.
// A nil duty ignores it.
func (d *Duty) Wake() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.woken = true
	l := d.loop
	d.mu.Unlock()
	if l != nil {
		l.wakes.Add(1) // before the signal: the loop it wakes asks every duty again
		l.wake.Notify()
	}
}

// Run runs the duties until ctx ends, then their Stop functions, in the order they were added.
func (l *Loop) Run(ctx context.Context) {
	start := l.e.Now()
	for _, d := range l.duties {
		d.mu.Lock()
		if !d.WhenWoken {
			d.due = start.Add(d.First)
		}
		d.mu.Unlock()
	}
	t := loopTimer{e: l.e}
	var fired time.Time // when the timer that woke the loop was set for; zero: no timer did
	for ctx.Err() == nil {
		seen := l.wake.Seq()
		l.setAim(time.Time{})
		next := l.runDue(ctx, fired)
		fired = t.wait(ctx, l, seen, next)
	}
	t.stop()
	for _, d := range l.duties {
		if d.Stop != nil {
			d.Stop(ctx)
		}
	}
}

// runDue runs every duty that is due or woken (a timed one only when a timer set for fired
// woke the loop), and returns when the next one not running is due (zero: none is). The clock
// is read again after a run in the loop's task (a run takes time; a blocking one runs in a
// task of its own).
func (l *Loop) runDue(ctx context.Context, fired time.Time) time.Time {
	var next time.Time
	now := l.e.Now()
	wakes := l.wakes.Load()
	trust := wakes == l.seenWakes // no duty was woken since the loop last looked
	l.seenWakes = wakes
	for i, d := range l.duties {
		sd := &l.seen[i]
		at := sd.next
		// What take would answer without asking: not to run it (due only when woken, not due
		// yet, or a timed duty that no timer woke the loop for), next due at at.
		if !trust || sd.ask || !(at.IsZero() || now.Before(at) || (sd.timed && fired.IsZero())) {
			due, ok, next, busy := d.take(now, fired)
			at = next
			if ok {
				var inLoop bool
				at, inLoop, busy = l.run(ctx, d, due)
				if inLoop {
					now = l.e.Now()
					// A run may wake a duty: ask the ones after it, as before there was seen.
					trust = trust && l.wakes.Load() == wakes
				}
			}
			sd.next, sd.ask = at, busy
		}
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// run runs d, due at due, and returns when the loop must next run it by the clock (zero while
// a blocking run is under way: its end wakes the loop if need be), whether it ran in the
// loop's task, and whether it started a blocking run.
func (l *Loop) run(ctx context.Context, d *Duty, due time.Time) (next time.Time, inLoop, started bool) {
	if d.Blocks {
		if d.Quick == nil {
			l.e.Go(ctx, d.Name, d.task)
			return time.Time{}, false, true
		}
		next, ok := d.Quick(ctx, due)
		if !ok {
			l.e.Go(ctx, d.Name, d.task)
			return time.Time{}, true, true
		}
		d.done(next)
		return next, true, false
	}
	next = d.Run(ctx, due)
	d.done(next)
	return next, true, false
}

// take reports whether d runs now, and when that run was due; it marks a blocking run under way.
// When d does not run, next is when the loop must next run it by the clock: zero while a
// blocking run is under way (busy) or nothing is scheduled. (A Wake wakes the loop itself, and
// so does a blocking run's end that is next due before the loop's timer.)
func (d *Duty) take(now, fired time.Time) (due time.Time, run bool, next time.Time, busy bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	due = d.due
	switch {
	case d.running:
		return time.Time{}, false, time.Time{}, true
	case d.woken:
		due = now
	case due.IsZero() || now.Before(due) || (d.Timed && fired.IsZero()):
		return time.Time{}, false, d.due, false
	case d.Timed:
		due = fired
	}
	d.woken, d.due, d.running, d.runDue = false, time.Time{}, d.Blocks, due
	return due, true, time.Time{}, false
}

// done records the end of a run and when the duty is next due; woken says it was woken
// meanwhile (it runs again at once).
func (d *Duty) done(next time.Time) (woken bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.running, d.due = false, next
	return d.woken
}

// setAim publishes when the loop's timer fires (zero: it is awake, or waits without a timer).
func (l *Loop) setAim(at time.Time) {
	l.mu.Lock()
	l.aim = at
	l.mu.Unlock()
}

// sleepsPast reports whether the loop, asleep, would miss a duty next due at next (zero: only
// when woken): it waits without a timer, or its timer fires after next.
func (l *Loop) sleepsPast(next time.Time) bool {
	if next.IsZero() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.aim.IsZero() || next.Before(l.aim)
}

// loopTimer is the loop's one pending deadline. It is kept across wake-ups while the earliest
// due time stays the same, so a timed duty's lateness is measured from the timer armed for it
// (a wake-up by another duty does not re-arm it), and a wake-up costs no new timer.
type loopTimer struct {
	e      Env
	ctx    context.Context // nil: none armed
	cancel context.CancelFunc
	aim    time.Time
	// spare is the last timer context, ended, for an Env that re-arms one in place (rearmer).
	spare       context.Context
	spareCancel context.CancelFunc
}

// rearmer is an Env that can make an ended context of its WithTimeout, which nothing else holds,
// WithTimeout(parent, d) again in place (the simulator's: a fleet's loops re-arm their timers
// tens of thousands of times per virtual second). False: it did nothing.
type rearmer interface {
	Rearm(ctx, parent context.Context, d time.Duration) bool
}

// wait waits until the loop's signal moves past seen or the timer aimed at next fires; when the
// timer fired it returns the time the timer was set for (else zero). A pending timer aimed at
// next is kept,
// and so is one aimed at an earlier instant when next is already past: that timer has not fired
// yet, and a timed duty due meanwhile measures how late it fires. But a pending timer aimed
// later than a past next is not kept: a duty came due while the loop ran the others (a run
// takes time), and must run at once, not when a later duty's timer fires.
func (t *loopTimer) wait(ctx context.Context, l *Loop, seen uint64, next time.Time) time.Time {
	now := t.e.Now()
	switch {
	case next.IsZero():
		t.stop()
	case t.ctx != nil && (next.Equal(t.aim) || (!next.After(now) && t.aim.Before(next))):
	default:
		t.stop()
		t.arm(ctx, next.Sub(now))
		t.aim = next
	}
	wctx := ctx
	if t.ctx != nil {
		wctx = t.ctx
		l.setAim(t.aim)
	}
	if l.wake.Wait(wctx, seen) == nil || ctx.Err() != nil {
		return time.Time{}
	}
	aim := t.aim
	t.stop()
	return aim
}

// arm sets a timer context that ends after d: the spare one again if the Env can, else a new one.
func (t *loopTimer) arm(ctx context.Context, d time.Duration) {
	if r, ok := t.e.(rearmer); ok && t.spare != nil && r.Rearm(t.spare, ctx, d) {
		t.ctx, t.cancel = t.spare, t.spareCancel
	} else {
		t.ctx, t.cancel = t.e.WithTimeout(ctx, d)
	}
	t.spare, t.spareCancel = nil, nil
}

// stop ends the armed timer context and keeps it as the spare.
func (t *loopTimer) stop() {
	if t.cancel != nil {
		t.cancel()
		t.spare, t.spareCancel = t.ctx, t.cancel
	}
	t.ctx, t.cancel = nil, nil
}
