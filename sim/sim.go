// Package sim is the deterministic multi-node simulator: one runner, virtual time, coroutine tasks,
// a simulated network (simnet, net.go) and a running trace hash.
//
// Every task is a coroutine (iter.Pull). Exactly one task runs at a time; ties between runnable
// tasks are broken by the sim's seeded PCG, so seeds explore interleavings. When every task is
// blocked, virtual time jumps to the next timer. Each node gets an env.Env (env.go) whose clock is
// virtual (with bounded drift), whose contexts cancel synchronously inside the running task, and
// whose HTTP client delivers requests to other nodes' handlers through simnet.
//
// The trace hash sees every scheduling decision, message, fault and checked invariant, never wall
// time, pointers or map order: same seed, same binary, same hash, whatever GOMAXPROCS.
//
// This package may touch the real world only to print its buffered log and to measure wall time
// for reports (never fed into the hash).
package sim

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/queryflux/queryflux/internal/monotime"
)

// GCFloor is the headroom qfsim and BenchmarkPlanFleet give the garbage collector
// (gcfloor.Start): a cycle no sooner than 160 MB of allocation after the last, so a small live
// heap (a fleet booting) is not collected every few megabytes. Every byte of headroom is memory
// the process touches for the first time; with 4 KB pages each first touch was a page fault on
// the runner's thread, and 32 MB ran fastest (RESULTS.md, "Simulator at 1,000 workers (#22,
// session 20)"). With the heap on huge pages (HugeHeap) the faults were few whatever the floor,
// and 64 MB ran about 13 % faster than 32 (fewer cycles, so fewer assists and write barriers):
// RESULTS.md, "Simulator at 1,000 workers (#22, 2026-12-04, session 22, sim)". At 160 MB a
// 1,000-worker plan-fleet run (141 MB allocated, about 35 MB live at its end) runs without a
// single cycle: no stop-the-world pauses, assists or write barriers on the runner's thread, for
// a higher peak (about 250 against 185 KB per worker): RESULTS.md, "Simulator at 1,000 workers (#22, 2026-12-04, session 23, sim)". A fleet
// whose live heap is above the floor (10,000 workers) keeps GOGC=100.
const GCFloor = 160 << 20

// HugeHeap is how much of its heap qfsim and BenchmarkPlanFleet advise for transparent huge
// pages at their start (hugeheap.Reserve; at most an eighth of the machine's memory, none under
// strict overcommit): enough for a 10,000-worker fleet's peak (about 1.1 GB). A 1,000-worker
// plan-fleet run took 31,000 page faults with 4 KB pages and 3,600-4,300 with huge pages, and
// about a fifth less CPU on the runner's thread: RESULTS.md, "Simulator at 1,000 workers (#22,
// 2026-12-04, session 22, sim)".
const HugeHeap = 2 << 30

// DefaultStart is the fixed instant virtual time starts at, so traces and logs are stable.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Opts configures a simulation.
type Opts struct {
	Seed uint64
	// Start is virtual time zero; zero means DefaultStart.
	Start time.Time
	// Verbose streams log lines to LogOut as they happen instead of only buffering them.
	Verbose bool
	// LogOut receives verbose lines (default os.Stderr).
	LogOut io.Writer
	// LogLines is how many recent log lines are kept for failure reports (default 2000).
	LogLines int
	// MaxStepsPerInstant fails the run as a livelock when this many scheduling decisions happen
	// without virtual time moving (default 5,000,000).
	MaxStepsPerInstant uint64
	// StallTimeout, if set, makes Run watch wall time: when no task switch happens for this long
	// (a task blocked outside the Env: a mutex held across an Env call, a channel receive, real
	// I/O), the process dies with the seed, the running task and every goroutine's stack, instead
	// of hanging. The watchdog never touches the world or the trace.
	StallTimeout time.Duration
	// Noise yields the Go scheduler a random number of times (0-3, drawn from the wall clock) at
	// every task switch. A deterministic run's trace does not change; code that escaped the
	// simulator (a goroutine, a real timer) gets other moments to run, so comparing a run with
	// noise to one without surfaces nondeterminism the scanner missed.
	Noise bool
}

// Sim is one simulated world. It is not safe for concurrent use: drive it from one goroutine.
type Sim struct {
	opts    Opts
	rng     *rand.Rand
	noise   *rand.Rand    // nil without Opts.Noise; never touches the world
	yields  uint64        // Go scheduler yields the noise made
	now     time.Duration // virtual time elapsed since opts.Start
	start   monotime.Base // opts.Start, for the node clocks' readings
	steps   uint64
	events  uint64
	nextID  uint64
	instant uint64 // steps since virtual time last moved

	runnable []*task
	timers   timerHeap
	timerSeq uint64
	current  *task
	coros    []*coro  // idle pooled coroutines
	free     []*task  // finished tasks, for newTask to reuse
	grown    []string // see GrownStacks

	progress atomic.Uint64        // task switches, for the watchdog
	running  atomic.Pointer[task] // the task last resumed, for the watchdog

	nodes  []*Node
	byName map[string]*Node
	net    *Net

	hash    *xxhash.Digest
	pending []byte // events not yet written to hash (mixed, see flushHash)
	failure error
	logs    *logRing
}

// New returns an empty world at virtual time zero.
func New(opts Opts) *Sim {
	if opts.Start.IsZero() {
		opts.Start = DefaultStart
	}
	if opts.LogOut == nil {
		opts.LogOut = os.Stderr
	}
	if opts.LogLines <= 0 {
		opts.LogLines = 2000
	}
	if opts.MaxStepsPerInstant == 0 {
		opts.MaxStepsPerInstant = 5_000_000
	}
	s := &Sim{
		opts:   opts,
		start:  monotime.NewBase(opts.Start),
		rng:    rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15)),
		byName: map[string]*Node{},
		hash:   xxhash.New(),
		logs:   newLogRing(opts.LogLines),
	}
	if opts.Noise {
		s.noise = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	}
	s.net = newNet(s)
	s.mix(evSeed, opts.Seed)
	return s
}

// NoiseYields is how often Opts.Noise yielded the Go scheduler so far.
func (s *Sim) NoiseYields() uint64 { return s.yields }

// Seed is the seed the world was built with.
func (s *Sim) Seed() uint64 { return s.opts.Seed }

// Now is the global virtual time (no drift).
func (s *Sim) Now() time.Time { return s.opts.Start.Add(s.now) }

// Elapsed is the virtual time since the start.
func (s *Sim) Elapsed() time.Duration { return s.now }

// Steps is the number of scheduling decisions so far.
func (s *Sim) Steps() uint64 { return s.steps }

// Events is the number of trace events (decisions, messages, faults, checks) so far.
func (s *Sim) Events() uint64 { return s.events }

// Net is the simulated network, where faults on links are set.
func (s *Sim) Net() *Net { return s.net }

// Rand is the sim's own random source (for fault drawing by scenarios). Using it changes the trace.
func (s *Sim) Rand() *rand.Rand { return s.rng }

// Err is the failure that stopped the run, if any.
func (s *Sim) Err() error { return s.failure }

// Fail stops the run with err (for checks that must halt the world). The seed is added.
func (s *Sim) Fail(err error) {
	if s.failure == nil {
		s.failure = fmt.Errorf("sim seed %d at %v (step %d): %w", s.opts.Seed, s.now, s.steps, err)
	}
}

// Logs returns the buffered recent log lines, oldest first.
func (s *Sim) Logs() []string { return s.logs.lines() }

// TraceHash is the running hash of everything that happened, as hex.
func (s *Sim) TraceHash() string {
	s.flushHash()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], s.hash.Sum64())
	return hex.EncodeToString(b[:])
}

// Record feeds a named fact (an invariant checked, a scenario event) into the trace hash.
func (s *Sim) Record(kind, detail string) {
	s.mixStrings(evRecord, kind, detail)
}

// At runs fn in the runner (not in a task: it must not block) when virtual time reaches
// start+at. Use it for fault timelines. A time in the past runs at the next step.
func (s *Sim) At(at time.Duration, fn func()) {
	if at < s.now {
		at = s.now
	}
	s.addTimer(at, fn)
}

// Spawn starts fn as a task on node (for probes and checks that need to block or call HTTP).
func (s *Sim) Spawn(node *Node, name string, fn func()) {
	node.spawn(name, fn)
}

// Run runs the world until virtual time start+until, until nothing is left to do, or until a
// task fails. It returns the failure, which names the seed.
func (s *Sim) Run(until time.Duration) error {
	if s.opts.StallTimeout > 0 {
		stop := s.watchdog(s.opts.StallTimeout)
		defer stop()
	}
	for s.now <= until && s.failure == nil {
		if !s.step(until) {
			break
		}
	}
	if s.failure == nil && s.now < until {
		s.now = until
	}
	return s.failure
}

// Step makes one scheduling decision (moving virtual time to the next timer first when nothing is
// runnable). It returns false when nothing is left to do or the run has failed.
func (s *Sim) Step() bool { return s.step(1<<63 - 1) }

func (s *Sim) step(limit time.Duration) bool {
	if s.failure != nil {
		return false
	}
	if len(s.runnable) == 0 {
		if !s.fireTimers(limit) {
			return false
		}
		if len(s.runnable) == 0 {
			return s.failure == nil
		}
	}
	i := 0
	if len(s.runnable) > 1 {
		i = s.rng.IntN(len(s.runnable))
	}
	t := s.runnable[i]
	last := len(s.runnable) - 1
	s.runnable[i] = s.runnable[last]
	s.runnable[last] = nil
	s.runnable = s.runnable[:last]
	s.steps++
	s.instant++
	if s.instant > s.opts.MaxStepsPerInstant {
		s.Fail(fmt.Errorf("livelock: %d steps without virtual time moving (last task %q on %s)", s.instant, t.name, t.node.name))
		return false
	}
	s.mix(evRun, t.id)
	if s.noise != nil {
		for range s.noise.IntN(4) {
			runtime.Gosched()
			s.yields++
		}
	}
	s.resume(t)
	return s.failure == nil
}

// fireTimers moves virtual time to the earliest live timer (not past limit) and fires every
// timer due at that instant. It returns false if there is none before limit.
func (s *Sim) fireTimers(limit time.Duration) bool {
	next := s.timers.first()
	if next == nil {
		return false
	}
	at := next.at
	if at > limit {
		return false
	}
	if at > s.now {
		s.now = at
		s.instant = 0
		s.mix(evTime, uint64(at))
	}
	for s.failure == nil {
		if e := s.timers.first(); e == nil || e.at > s.now {
			break
		}
		s.fire(s.timers.pop())
	}
	return true
}

// fire runs a timer's callback in the runner; a panic there (a fault action or check that
// misbehaves) fails the run instead of the process.
func (s *Sim) fire(tm *timer) {
	if t := tm.t; t != nil {
		t.timer = nil
		if t.state == taskHeld {
			s.release(t)
		} else {
			s.wake(t, tm.gen)
		}
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.Fail(fmt.Errorf("runner callback panicked: %v\n%s", r, debug.Stack()))
		}
	}()
	switch {
	case tm.msg != nil:
		tm.msg.arrive()
	case tm.ctx != nil:
		tm.ctx.timer = nil
		tm.ctx.cancel(context.DeadlineExceeded)
	default:
		tm.fn()
	}
}

// ---- tasks ----

type taskState uint8

const (
	taskRunnable taskState = iota
	taskRunning
	taskParked
	taskHeld // woken, waiting for its starved node's CPU (Node.hold)
	taskDone
)

type task struct {
	id     uint64
	name   string
	node   *Node
	inc    uint64 // node incarnation the task belongs to
	state  taskState
	gen    uint64        // bumped on every park; stale wakes carry an older gen
	heldAt time.Duration // when a held task was woken (its node starved)
	killed bool
	exited bool // fn returned or unwound

	fn func()
	// Or, for a task started by Env.Go, its function and context (no closure over the two:
	// a fleet starts tens of thousands of tasks).
	ctxFn func(context.Context)
	ctx   context.Context
	// Or, for a handler task, the exchange it serves (no closure over it: one per request).
	serves *exchange
	co     *coro // nil until first resumed

	waits []*waiter
	timer *timer

	// Reused by every wait: a task waits on at most one timer and, almost always, at most two
	// lists at a time, and every one of them is unlinked (clearWaits) before the next wait.
	sleepTimer timer
	waitSlots  [2]waiter
}

// errKilled unwinds a task of a crashed node. The task wrapper recovers it.
type killedSentinel struct{}

var errKilled = &killedSentinel{}

// coro is a pooled coroutine: it runs one task's fn after another, so a goroutine's grown stack
// is reused instead of regrown for every short task (handlers, mostly). A new one grows its
// stack to 8 KB before its first task (growStack).
type coro struct {
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	t     *task
	// top is an address in the coroutine's first frame on the 8 KB stack growStack gave it;
	// grown is set once a task outgrew that stack (the runtime moved it to a larger one).
	top   uintptr
	grown bool
}

func (s *Sim) newCoro() *coro {
	c := &coro{}
	body := func(yield func(struct{}) bool) {
		c.yield = yield
		growStack(0)
		var mark byte
		c.top = uintptr(unsafe.Pointer(&mark))
		for {
			s.runTask(c.t)
			s.noteStack(c, uintptr(unsafe.Pointer(&mark)))
			c.t.exited = true
			if !yield(struct{}{}) {
				return
			}
		}
	}
	c.next, c.stop = iter.Pull(iter.Seq[struct{}](body))
	return c
}

// growStack's frame is large enough that calling it on a new coroutine, whose stack is the
// runtime's starting size (2 KB, or about the average stack the collector last scanned), grows
// that stack to 8 KB at once while it holds only the coroutine's first few frames: the runtime
// grows a stack to fit the frame that overflows it, in one copy. On 8 KB it fits and costs
// nothing. A fleet's long-lived tasks (a worker's config sync and duty loop, the control plane's
// long-poll handlers, the workload's arrivals) took new coroutines at boot and grew them 2 -> 4
// -> 8 KB deep in their work, each growth a copy of the whole stack frame by frame (about 8 % of
// the instructions of a 1,000-worker plan-fleet run, 7,900 growths; with it 2,000): RESULTS.md,
// "Simulator at 1,000 workers (#22, 2026-12-04, session 23, sim)".
//
//go:noinline
func growStack(i int) byte {
	var frame [5 << 10]byte
	return frame[i]
}

// noteStack records c's task in GrownStacks if c's stack no longer holds here, an address in
// the task's frames: a stack the runtime moved is a new block, so none of its addresses lies
// within the 8 KB below the old top. (A collection shrinking a stack moves it too: GrownStacks
// says which tasks grew stacks only in a run that collects nothing.)
func (s *Sim) noteStack(c *coro, here uintptr) {
	if !c.grown && c.top-here >= coroStackBytes {
		c.grown = true
		s.grown = append(s.grown, c.t.name)
	}
}

// coroStackBytes is the stack a coroutine starts its tasks on (growStack).
const coroStackBytes = 8 << 10

// GrownStacks names, one per coroutine, the tasks whose frames outgrew the 8 KB stack the
// coroutine started with, in the order seen: each growth is a copy of the whole stack, and the
// larger stack stays for every task the coroutine runs after. Only meaningful in a run that
// collects nothing (see noteStack).
func (s *Sim) GrownStacks() []string { return s.grown }

func (s *Sim) runTask(t *task) {
	defer func() {
		r := recover()
		if r == nil || r == errKilled {
			return
		}
		s.Fail(fmt.Errorf("task %q on node %s panicked: %v\n%s", t.name, t.node.name, r, debug.Stack()))
	}()
	if t.ctxFn != nil {
		t.ctxFn(t.ctx)
		return
	}
	if t.serves != nil {
		s.net.serve(t.serves)
		return
	}
	t.fn()
}

func (s *Sim) newTask(node *Node, name string, fn func()) *task {
	s.nextID++
	var t *task
	if n := len(s.free); n > 0 {
		// A finished task's struct, reused: a fleet starts tens of thousands of short tasks
		// (handlers, queries, duty runs). Its gen goes on from where it was, so a wake-up
		// still addressed to the finished task (an old gen) never wakes this one; a timer it
		// left in the heap carries an older seq, and it left no wait list behind (finish).
		t = s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		*t = task{gen: t.gen, waits: t.waits[:0]}
	} else {
		t = &task{}
	}
	t.id, t.name, t.node, t.inc, t.fn = s.nextID, name, node, node.inc, fn
	node.tasks[t.id] = t
	s.mixStrings(evSpawn, node.name, name)
	s.ready(t)
	return t
}

func (s *Sim) resume(t *task) {
	if s.opts.StallTimeout > 0 {
		s.progress.Add(1)
		s.running.Store(t)
	}
	if t.co == nil {
		if n := len(s.coros); n > 0 {
			t.co = s.coros[n-1]
			s.coros = s.coros[:n-1]
		} else {
			t.co = s.newCoro()
		}
		t.co.t = t
	}
	prev := s.current
	t.state = taskRunning
	s.current = t
	t.co.next()
	s.current = prev
	if t.exited {
		s.finish(t)
	}
}

func (s *Sim) finish(t *task) {
	t.state = taskDone
	t.clearWaits(s)
	delete(t.node.tasks, t.id)
	if c := t.co; c != nil {
		t.co = nil
		c.t = nil
		s.coros = append(s.coros, c)
	}
	t.fn, t.ctxFn, t.ctx, t.serves = nil, nil, nil, nil
	s.free = append(s.free, t)
}

// park suspends the running task until something wakes it with its current gen.
func (s *Sim) park(t *task) {
	if s.current != t {
		panic(fmt.Sprintf("sim: task %q parked while not running", t.name))
	}
	t.state = taskParked
	var here byte
	s.noteStack(t.co, uintptr(unsafe.Pointer(&here)))
	if !t.co.yield(struct{}{}) || t.killed {
		panic(errKilled)
	}
}

// prepare starts a new wait for t: registrations made after it carry the returned gen.
func (t *task) prepare() uint64 {
	t.gen++
	return t.gen
}

func (s *Sim) wake(t *task, gen uint64) {
	if t.state != taskParked || t.gen != gen {
		return
	}
	t.clearWaits(s)
	s.ready(t)
}

// ready makes t runnable, unless its node is starved and t is woken from outside the node (by
// the runner or another node's task): then the node holds it (hold).
func (s *Sim) ready(t *task) {
	if n := t.node; n.starve > 0 && (s.current == nil || s.current.node != n) {
		n.hold(t)
		return
	}
	t.state = taskRunnable
	s.runnable = append(s.runnable, t)
}

// armHold (re)arms held t's timer: it runs at global virtual time at.
func (s *Sim) armHold(t *task, at time.Duration) {
	if t.timer != nil {
		s.timers.remove(t.timer)
	}
	s.timerSeq++
	tm := &t.sleepTimer
	*tm = timer{at: at, seq: s.timerSeq, t: t, gen: t.gen}
	s.timers.push(tm)
	t.timer = tm
}

// release makes held t runnable: its node got the CPU.
func (s *Sim) release(t *task) {
	n := t.node
	if i := slices.Index(n.held, t); i >= 0 {
		n.held = slices.Delete(n.held, i, i+1)
	}
	if t.timer != nil {
		s.timers.remove(t.timer)
		t.timer = nil
	}
	t.state = taskRunnable
	s.runnable = append(s.runnable, t)
}

func (t *task) clearWaits(s *Sim) {
	for _, w := range t.waits {
		w.list.remove(w)
	}
	t.waits = t.waits[:0]
	if t.timer != nil {
		s.timers.remove(t.timer)
		t.timer = nil
	}
}

// sleepUntil arms t's wake-up timer at global virtual time at.
func (s *Sim) sleepUntil(t *task, gen uint64, at time.Duration) {
	if t.timer != nil {
		panic(fmt.Sprintf("sim: task %q armed a second wake-up timer", t.name))
	}
	s.timerSeq++
	tm := &t.sleepTimer // an entry it left in the heap carries an older seq: stale, skipped
	*tm = timer{at: at, seq: s.timerSeq, t: t, gen: gen}
	s.timers.push(tm)
	t.timer = tm
}

// waitOn registers t (with gen) on a wait list.
func (t *task) waitOn(l *wlist, gen uint64) {
	var w *waiter
	if n := len(t.waits); n < len(t.waitSlots) && t.waitSlots[n].list == nil {
		w = &t.waitSlots[n]
		*w = waiter{t: t, gen: gen}
	} else {
		w = &waiter{t: t, gen: gen}
	}
	l.push(w)
	t.waits = append(t.waits, w)
}

// kill unwinds t (its node crashed): a started task resumes and unwinds through a sentinel
// panic, running its defers now, inside the runner; a task never started just ends.
func (s *Sim) kill(t *task) {
	if t.state == taskDone {
		return
	}
	t.killed = true
	if t.state == taskRunning {
		return // it is the caller (a task crashing its own node): it unwinds on its next Env call
	}
	switch t.state {
	case taskRunnable:
		if i := slices.Index(s.runnable, t); i >= 0 {
			s.runnable = slices.Delete(s.runnable, i, i+1)
		}
	case taskHeld:
		if i := slices.Index(t.node.held, t); i >= 0 {
			t.node.held = slices.Delete(t.node.held, i, i+1)
		}
	}
	t.clearWaits(s)
	if t.co == nil {
		s.finish(t)
		return
	}
	s.resume(t)
	if !t.exited {
		panic(fmt.Sprintf("sim: killed task %q on %s did not unwind", t.name, t.node.name))
	}
}

// Close ends every task and frees the coroutines' goroutines. The world cannot run afterwards.
func (s *Sim) Close() {
	for _, n := range s.nodes {
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
	}
	for _, c := range s.coros {
		c.stop()
	}
	s.coros = nil
	s.runnable = nil
	s.timers = timerHeap{}
	if s.failure == nil {
		s.failure = errClosed
	}
}

var errClosed = fmt.Errorf("sim: closed")

// currentTask returns the running task for a blocking call named op, unwinding killed tasks.
func (s *Sim) currentTask(op string) *task {
	t := s.current
	if t == nil {
		panic(fmt.Sprintf("sim: %s called outside a simulated task (use Sim.Spawn or Env.Go)", op))
	}
	if t.killed {
		panic(errKilled)
	}
	return t
}

// ---- wait lists ----

type waiter struct {
	t          *task
	gen        uint64
	prev, next *waiter
	list       *wlist
}

type wlist struct{ head, tail *waiter }

func (l *wlist) push(w *waiter) {
	w.list = l
	w.prev = l.tail
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
}

func (l *wlist) remove(w *waiter) {
	if l == nil || w.list != l {
		return
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next, w.list = nil, nil, nil
}

// wakeAll wakes every waiter, in the order they started waiting.
func (s *Sim) wakeAll(l *wlist) {
	for l.head != nil {
		w := l.head
		l.remove(w)
		s.wake(w.t, w.gen)
	}
}

// ---- timers ----

// timer is one pending wake-up. Its heap entry carries (at, seq) inline, so ordering the heap
// never touches the timers themselves (they are scattered over the heap memory of thousands of
// tasks); removing a timer only marks it (seq 0), and its stale entry is skipped when it surfaces.
type timer struct {
	at  time.Duration
	seq uint64 // 0: not in the heap (fired or removed)
	fn  func() // a runner callback; or a task's wake-up:
	t   *task
	gen uint64
	ctx *simCtx  // or a context's deadline
	msg *message // or a message's arrival
}

type timerEntry struct {
	at  time.Duration
	seq uint64
	tm  *timer
}

// live reports whether the entry still stands for its timer (a reused or removed timer leaves
// entries with an older seq behind).
func (e *timerEntry) live() bool { return e.tm.seq == e.seq }

type timerHeap struct {
	h     []timerEntry
	stale int // entries whose timer was removed or reused
}

func (s *Sim) addTimer(at time.Duration, fn func()) *timer {
	s.timerSeq++
	tm := &timer{at: at, seq: s.timerSeq, fn: fn}
	s.timers.push(tm)
	return tm
}

// len is the number of entries, stale ones included.
func (h *timerHeap) len() int { return len(h.h) }

// first drops stale entries from the top and returns the earliest live timer's entry, or nil.
func (h *timerHeap) first() *timerEntry {
	for len(h.h) > 0 {
		if e := &h.h[0]; e.live() {
			return e
		}
		h.popEntry()
		h.stale--
	}
	return nil
}

func (h *timerHeap) push(tm *timer) {
	if tm.seq == 0 {
		panic("sim: timer pushed without a sequence number")
	}
	h.h = append(h.h, timerEntry{at: tm.at, seq: tm.seq, tm: tm})
	h.up(len(h.h) - 1)
}

// pop removes and returns the earliest live timer; call first before.
func (h *timerHeap) pop() *timer {
	tm := h.popEntry().tm
	tm.seq = 0
	return tm
}

func (h *timerHeap) popEntry() timerEntry {
	e := h.h[0]
	n := len(h.h) - 1
	h.h[0] = h.h[n]
	h.h[n] = timerEntry{}
	h.h = h.h[:n]
	if n > 0 {
		h.down(0)
	}
	return e
}

// remove unschedules tm (no-op if it already fired or was removed).
func (h *timerHeap) remove(tm *timer) {
	if tm.seq == 0 {
		return
	}
	tm.seq = 0
	h.stale++
	if h.stale > 64 && h.stale*2 > len(h.h) {
		h.compact()
	}
}

// compact drops every stale entry and rebuilds the heap. Live timers keep their (at, seq) keys,
// a total order, so the order they fire in does not depend on the heap's shape.
func (h *timerHeap) compact() {
	kept := h.h[:0]
	for _, e := range h.h {
		if e.live() {
			kept = append(kept, e)
		}
	}
	clear(h.h[len(kept):])
	h.h = kept
	h.stale = 0
	for i := (len(h.h) - 2) / heapArity; i >= 0 && len(h.h) > 1; i-- { // (-2)/4 is 0: an empty heap has no node to sink
		h.down(i)
	}
}

func (h *timerHeap) less(i, j int) bool { return entryBefore(&h.h[i], &h.h[j]) }

// entryBefore is the heap's order: by instant, then by sequence number (unique to each push),
// a total order.
func entryBefore(a, b *timerEntry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// The heap is 4-ary: half the depth of a binary heap, and a node's children share a cache line
// or two, which matters with thousands of timers.
const heapArity = 4

func (h *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / heapArity
		if !h.less(i, p) {
			return
		}
		h.h[i], h.h[p] = h.h[p], h.h[i]
		i = p
	}
}

// down sinks the entry at i. It moves a hole instead of swapping (the entry is written once,
// where it stops) and compares each node's children through one slice of them: the same moves
// as swapping, so the same heap, with less of the work (the pops were 3.4 % of a 1,000-worker
// run's instructions).
func (h *timerHeap) down(i int) {
	hh := h.h
	n := len(hh)
	x := hh[i]
	for {
		l := heapArity*i + 1
		if l >= n {
			break
		}
		var m int
		var mk *timerEntry
		if l+heapArity <= n { // four children, as nearly every node above the last level has
			k := (*[heapArity]timerEntry)(hh[l : l+heapArity])
			a, b := 0, 2
			if entryBefore(&k[1], &k[0]) {
				a = 1
			}
			if entryBefore(&k[3], &k[2]) {
				b = 3
			}
			if entryBefore(&k[b], &k[a]) {
				a = b
			}
			m, mk = l+a, &k[a]
		} else {
			kids := hh[l:n]
			m, mk = l, &kids[0]
			for c := 1; c < len(kids); c++ {
				if entryBefore(&kids[c], mk) {
					m, mk = l+c, &kids[c]
				}
			}
		}
		if !entryBefore(mk, &x) {
			break
		}
		hh[i] = *mk
		i = m
	}
	hh[i] = x
}

// ---- trace hash ----

const (
	evSeed byte = iota + 1
	evRun
	evTime
	evSpawn
	evMsg
	evDrop
	evFault
	evRecord
	evReply
	evHold
)

// mix and mixStrings append an event's bytes to pending, which goes to the digest a few KB at
// a time: the digest of the same bytes, written in fewer, larger pieces (an event is 10-40
// bytes, and the digest's Write had a cost of its own for each: 210,000 a 1,000-worker run).
func (s *Sim) mix(kind byte, vals ...uint64) {
	s.events++
	b := append(s.pending, kind)
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	s.pending = b
	if len(b) >= hashBatch {
		s.flushHash()
	}
}

func (s *Sim) mixStrings(kind byte, strs ...string) {
	s.events++
	b := append(s.pending, kind)
	for _, str := range strs {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(str)))
		b = append(b, str...)
	}
	s.pending = b
	if len(b) >= hashBatch {
		s.flushHash()
	}
}

// hashBatch is how many bytes of events mix keeps before writing them to the digest.
const hashBatch = 4096

// flushHash writes the pending events to the digest.
func (s *Sim) flushHash() {
	_, _ = s.hash.Write(s.pending)
	s.pending = s.pending[:0]
}

// watchdog kills the process when Run stops making progress for d of wall time.
func (s *Sim) watchdog(d time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(d / 4)
		defer tick.Stop()
		last, since := s.progress.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if p := s.progress.Load(); p != last {
					last, since = p, now
					continue
				}
				if now.Sub(since) < d {
					continue
				}
				who := "the runner (a runner callback)"
				if t := s.running.Load(); t != nil {
					who = fmt.Sprintf("task %q on node %s", t.name, t.node.name)
				}
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				fmt.Fprintf(os.Stderr, "sim seed %d: no progress for %v of wall time; %s is blocked outside the Env "+
					"(a mutex held across an Env call, a channel receive, real I/O?)\n%s\n", s.opts.Seed, d, who, buf)
				panic(fmt.Sprintf("sim seed %d stalled in %s", s.opts.Seed, who))
			}
		}
	}()
	return func() { close(done) }
}
