package sim

import (
	"context"
	"fmt"
	"time"
)

// simCtx is the sim's own context: cancellation is synchronous (children and waiters are
// cancelled and woken inside the call to cancel), and deadlines are virtual timers. It never
// starts a goroutine.
type simCtx struct {
	s        *Sim
	parent   context.Context // for Value and Deadline
	psim     *simCtx         // nearest sim ancestor, nil under Background
	done     chan struct{}   // made lazily by Done
	err      error
	deadline time.Time // node-local, zero if none
	timer    *timer
	// deadlineTimer is what timer points to for a deadline: one allocation less per context.
	deadlineTimer timer

	children   []*simCtx
	live       int // non-nil entries of children
	childIndex int // position in psim.children, -1 when detached
	waiters    wlist
}

type simCtxKey struct{}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *simCtx) Deadline() (time.Time, bool) {
	if !c.deadline.IsZero() {
		return c.deadline, true
	}
	return c.parent.Deadline()
}

func (c *simCtx) Done() <-chan struct{} {
	if c.done == nil {
		if c.err != nil {
			c.done = closedChan
		} else {
			c.done = make(chan struct{})
		}
	}
	return c.done
}

func (c *simCtx) Err() error { return c.err }

func (c *simCtx) Value(key any) any {
	if _, ok := key.(simCtxKey); ok {
		return c
	}
	return c.parent.Value(key)
}

func (c *simCtx) String() string { return "sim.Context" }

// cancel ends c and, synchronously, every descendant; it wakes every task waiting on them.
func (c *simCtx) cancel(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil && c.done != closedChan {
		close(c.done)
	}
	if c.timer != nil {
		c.s.timers.remove(c.timer)
		c.timer = nil
	}
	c.detach()
	kids := c.children
	c.children, c.live = nil, 0
	for _, k := range kids {
		if k != nil {
			k.childIndex = -1
			k.cancel(err)
		}
	}
	c.s.wakeAll(&c.waiters)
}

func (c *simCtx) detach() {
	p := c.psim
	if p == nil || c.childIndex < 0 {
		return
	}
	p.children[c.childIndex] = nil
	p.live--
	c.childIndex = -1
	// Compact once half the slots are holes, keeping order (it decides wake order on cancel).
	if p.live*2 < len(p.children) {
		kept := p.children[:0]
		for _, k := range p.children {
			if k != nil {
				k.childIndex = len(kept)
				kept = append(kept, k)
			}
		}
		for i := len(kept); i < len(p.children); i++ {
			p.children[i] = nil
		}
		p.children = kept
	}
}

// simCtxOf finds the sim context behind ctx. A nil result means ctx can never be cancelled
// (Background, TODO, WithoutCancel or values over them). A cancellable context that is not the
// sim's (context.WithCancel & co.) would be cancelled by a stdlib goroutine: that breaks
// determinism, so it is a contract violation.
func simCtxOf(ctx context.Context) *simCtx {
	if c, ok := ctx.(*simCtx); ok {
		return c
	}
	d := ctx.Done()
	if d == nil {
		return nil
	}
	c, _ := ctx.Value(simCtxKey{}).(*simCtx)
	if c == nil || c.Done() != d {
		panic(fmt.Sprintf("sim: context %v is cancellable but not made by Env.WithTimeout/WithCancel; "+
			"stdlib context.WithCancel/WithTimeout/WithDeadline cancel on their own goroutines and break "+
			"determinism (docs/architecture.md, \"The Env seam\")", ctx))
	}
	return c
}

// newCtx returns a child of parent, with no deadline.
func (s *Sim) newCtx(parent context.Context) *simCtx {
	c := &simCtx{}
	s.initCtx(c, parent)
	return c
}

// initCtx makes c a child of parent with no deadline: c is new, or an ended context that
// nothing holds any more (nodeEnv.Rearm).
func (s *Sim) initCtx(c *simCtx, parent context.Context) {
	if parent == nil {
		panic("sim: nil parent context")
	}
	*c = simCtx{s: s, parent: parent, psim: simCtxOf(parent), childIndex: -1}
	if c.psim != nil {
		if c.psim.err != nil {
			c.err = c.psim.err
			return
		}
		c.childIndex = len(c.psim.children)
		c.psim.children = append(c.psim.children, c)
		c.psim.live++
	}
}

func (c *simCtx) cancelFunc() context.CancelFunc {
	return func() { c.cancel(context.Canceled) }
}
