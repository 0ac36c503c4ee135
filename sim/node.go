package sim

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/queryflux/queryflux/node/env"
)

// Factory builds a node's role each time the node boots (at AddNode and at every Restart). It
// runs inside a task of the node, so it may block. Memory it allocates is lost on crash; durable
// stores are whatever its closure keeps. A nil factory, or a nil handler, makes a node that
// accepts no requests (an observer for probes).
type Factory func(n *Node) http.Handler

// Node is one simulated process: its tasks, its Env, its HTTP handler and its clock.
type Node struct {
	s *Sim
	// clock: node time = base + (global - since) * rate. Next to s: Now reads them all, for
	// thousands of nodes in turn, so they share a cache line.
	clockBase  time.Duration
	clockSince time.Duration
	rate       float64
	// starve is how long the node waits for the CPU (SetStarve): every wake-up of its tasks
	// from outside the node is held this long (held, in the order they were woken).
	starve   time.Duration
	wallStep time.Duration // the wall reading's steps (StepWall), not the monotonic one's
	// read is the clock's last reading, returned again while global virtual time stands still:
	// 78 % of a 1,000-worker run's 303,000 readings are of the instant the node last read.
	// SetClock and StepWall forget it.
	read clockReading

	name    string
	factory Factory
	env     *nodeEnv
	client  *http.Client
	addr    string // remoteAddr, built once

	up       bool
	stopping bool   // Shutdown called: no new requests, crash at the end of the grace
	inc      uint64 // incarnation, bumped by Restart
	ctx      *simCtx
	handler  http.Handler
	tasks    map[uint64]*task
	held     []*task
}

// Clock drift bounds: a node's clock never runs slower than MinRate or faster than MaxRate, and
// never sits further than MaxOffset from global virtual time when an offset is applied.
const (
	MinRate   = 0.5
	MaxRate   = 2.0
	MaxOffset = 24 * time.Hour
)

// AddNode adds a node named name and boots it (factory runs as the node's first task).
// Names are the hosts of simnet URLs: http://NAME/path.
func (s *Sim) AddNode(name string, factory Factory) *Node {
	if _, dup := s.byName[name]; dup {
		panic(fmt.Sprintf("sim: node %q added twice", name))
	}
	if name == "" {
		panic("sim: empty node name")
	}
	n := &Node{s: s, name: name, factory: factory, tasks: map[uint64]*task{}, rate: 1}
	n.env = newNodeEnv(n)
	n.client = &http.Client{Transport: &transport{n: n}}
	s.nodes = append(s.nodes, n)
	s.byName[name] = n
	s.mixStrings(evFault, "add", name)
	n.boot()
	return n
}

// Node returns the node named name, or nil.
func (s *Sim) Node(name string) *Node { return s.byName[name] }

// Nodes returns every node in the order they were added.
func (s *Sim) Nodes() []*Node { return slices.Clone(s.nodes) }

func (n *Node) boot() {
	n.up, n.stopping = true, false
	n.ctx = n.s.newCtx(context.Background())
	n.handler = nil
	if n.factory == nil {
		return
	}
	inc := n.inc
	n.spawn("boot", func() {
		h := n.factory(n)
		if n.inc == inc && n.up && !n.stopping {
			n.handler = h
		}
	})
}

// Name is the node's name (its host in simnet URLs).
func (n *Node) Name() string { return n.name }

// remoteAddr is what handlers see as the RemoteAddr of the node's requests.
func (n *Node) remoteAddr() string {
	if n.addr == "" {
		n.addr = n.name + ":1"
	}
	return n.addr
}

// Env is the node's Env. It stays the same object across restarts.
func (n *Node) Env() env.Env { return n.env }

// Client is an *http.Client whose transport is simnet, with no Timeout (deadlines come from
// Env contexts).
func (n *Node) Client() *http.Client { return n.client }

// Transport is the node's simnet RoundTripper.
func (n *Node) Transport() http.RoundTripper { return n.client.Transport }

// Ctx is the node's lifetime context, cancelled when the node crashes. A restart makes a new one.
func (n *Node) Ctx() context.Context { return n.ctx }

// Up reports whether the node is running.
func (n *Node) Up() bool { return n.up }

// Incarnation counts restarts (0 for the first boot).
func (n *Node) Incarnation() uint64 { return n.inc }

// Sim is the world the node lives in.
func (n *Node) Sim() *Sim { return n.s }

// Crash ends the node: its lifetime context is cancelled, every task unwinds (blocked tasks wake
// and a sentinel panic unwinds their stacks; defers run), requests being handled get a connection
// reset, and the handler is unreachable until Restart.
func (n *Node) Crash() {
	if !n.up {
		return
	}
	s := n.s
	s.mixStrings(evFault, "crash", n.name)
	n.env.log().Warn("sim: node crashed")
	n.up = false
	n.handler = nil
	n.ctx.cancel(context.Canceled)
	ids := make([]uint64, 0, len(n.tasks))
	for id := range n.tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if t := n.tasks[id]; t != nil {
			s.kill(t)
		}
	}
	s.net.nodeCrashed(n)
	if cur := s.current; cur != nil && cur.node == n {
		panic(errKilled)
	}
}

// Shutdown stops the node gracefully: it stops accepting requests and its lifetime context is
// cancelled, so its tasks can finish (flush, deregister); whatever still runs after grace is
// ended by a Crash. The node is down (restartable) from then on.
func (n *Node) Shutdown(grace time.Duration) {
	if !n.up || n.stopping {
		return
	}
	s := n.s
	s.mixStrings(evFault, "shutdown", n.name, grace.String())
	n.env.log().Warn("sim: node shutting down", "grace", grace)
	n.stopping = true
	n.handler = nil
	n.ctx.cancel(context.Canceled)
	inc := n.inc
	s.At(s.now+grace, func() {
		if n.inc == inc {
			n.Crash()
		}
	})
}

// Restart boots a crashed node again: the factory runs once more with fresh memory. A node in
// the middle of a Shutdown is ended at once and booted; a running node is left alone.
func (n *Node) Restart() {
	if n.up && n.stopping {
		n.Crash()
	}
	if n.up {
		return
	}
	n.s.mixStrings(evFault, "restart", n.name)
	n.inc++
	n.boot()
	n.env.log().Warn("sim: node restarted")
}

// SetClock sets the node's drift: offset is added to its clock now, and from now on its clock
// advances rate times as fast as global virtual time. Both are bounded (MinRate..MaxRate,
// |offset| <= MaxOffset).
func (n *Node) SetClock(offset time.Duration, rate float64) error {
	if rate < MinRate || rate > MaxRate || math.IsNaN(rate) {
		return fmt.Errorf("sim: clock rate %v for %s outside [%v, %v]", rate, n.name, MinRate, MaxRate)
	}
	if offset > MaxOffset || offset < -MaxOffset {
		return fmt.Errorf("sim: clock offset %v for %s beyond ±%v", offset, n.name, MaxOffset)
	}
	n.s.mixStrings(evFault, "clock", n.name, offset.String(), fmt.Sprint(rate))
	n.clockBase = n.localElapsed() + offset
	n.clockSince = n.s.now
	n.rate = rate
	n.read = clockReading{}
	return nil
}

// SetStarve makes the node a CPU-starved (or stopped) process: from now on every wake-up of
// one of its tasks from outside the node (a timer, a context's deadline, a message's arrival,
// a request's handler, a signal from another node) runs d late; what a running task of the
// node wakes or starts runs in its turn, as a process that has the CPU runs its own work. The
// node's clock and its timers' due instants do not move: a process that gets the CPU back sees
// every overdue timer at once. Zero ends it: every wake-up held runs at once. Another d holds
// each held wake-up until d after it came due (at once if that is past).
func (n *Node) SetStarve(d time.Duration) {
	if d < 0 {
		d = 0
	}
	s := n.s
	s.mixStrings(evFault, "starve", n.name, d.String())
	n.starve = d
	if len(n.held) == 0 {
		return
	}
	for _, t := range slices.Clone(n.held) {
		if at := t.heldAt + d; at > s.now {
			s.armHold(t, at)
		} else {
			s.release(t)
		}
	}
}

// Starve is the node's starvation (SetStarve), zero when it has the CPU.
func (n *Node) Starve() time.Duration { return n.starve }

// hold keeps t, woken from outside its starved node, off the runnable tasks until the
// starvation's delay has passed (or it ends).
func (n *Node) hold(t *task) {
	s := n.s
	t.state = taskHeld
	t.heldAt = s.now
	n.held = append(n.held, t)
	s.mix(evHold, t.id, uint64(s.now+n.starve))
	s.armHold(t, s.now+n.starve)
}

// localElapsed is the node's clock reading minus Start.
func (n *Node) localElapsed() time.Duration {
	if n.rate == 1 {
		return n.clockBase + (n.s.now - n.clockSince)
	}
	return n.clockBase + time.Duration(float64(n.s.now-n.clockSince)*n.rate)
}

// now is the node's clock: the wall reading (drift and steps) carrying the monotonic one
// (drift only), as Go's time.Now does (clock.go).
func (n *Node) now() time.Time {
	if r := &n.read; r.ok && r.at == n.s.now {
		return r.t
	}
	mono := n.localElapsed()
	t := n.s.start.At(mono+n.wallStep, mono)
	n.read = clockReading{at: n.s.now, t: t, ok: true}
	return t
}

// clockReading is a node's clock read at global virtual instant at.
type clockReading struct {
	at time.Duration
	t  time.Time
	ok bool
}

// globalAt converts a node-local duration from now into the global virtual instant its timer
// is due at. A starved node's timer comes due then too; the task it wakes is held (hold).
func (n *Node) globalAt(d time.Duration) time.Duration {
	g := d
	if n.rate != 1 {
		g = time.Duration(math.Ceil(float64(d) / n.rate))
	}
	return n.s.now + g
}

// spawn starts fn as a task of the node's current incarnation. No-op on a down node.
func (n *Node) spawn(name string, fn func()) *task {
	if !n.up {
		return nil
	}
	return n.s.newTask(n, name, fn)
}
