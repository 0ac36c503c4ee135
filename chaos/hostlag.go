package chaos

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// A real run shares its host with whatever else runs there. A check whose verdict rests on how
// late a daemon's timers fire (a worker judges its own health by its probe's wake-up lag) then
// says as much about the host as about the fleet: a worker on a host at load 30 woke 134 ms late
// against a threshold of 62.5 ms and, rightly, marked itself unhealthy. So the runner times its
// own wake-ups all through the run. Nobody starves the runner on purpose, so its lateness is the
// host's, and every daemon suffers it on top of the scenario's faults; when it exceeds what a
// check's states tolerate inside that check's window, the check is INCONCLUSIVE, never PASS or
// FAIL (hostVerdict). The simulator has no such thing: its time is virtual.
//
// /proc/pressure/cpu says how much of the time something waited for a CPU, not how late a
// timer fires, which is what the thresholds are about; so the runner measures that directly.

// lagTick is how often the runner wakes to time itself: much finer than any probe interval
// a scenario scales down to, so a stall that delays a daemon's probe shows in some wake-up.
const lagTick = 10 * time.Millisecond

// lagFloor is the lateness below which a wake-up is counted but not kept (timer slack, not the
// host): every budget a check carries is well above it.
const lagFloor = 5 * time.Millisecond

type lagSample struct {
	at  time.Time     // when the late wake-up came
	lag time.Duration // how late it came
}

// hostLag times the runner's own wake-ups from start to stop.
type hostLag struct {
	stop, done chan struct{}
	once       sync.Once

	mu      sync.Mutex
	wakeups int
	late    []lagSample            // wake-ups later than lagFloor, in order
	starved map[string][]lagSample // node -> each run between a starve's stops: when, how long
	// daemons are the lags the workers reported of their own health probes, later than
	// lagFloor (daemonReported): a daemon the host kept waiting while the runner was on time.
	daemons    []daemonLag
	lastBeatOf map[string]time.Time // worker -> the heartbeat its last report came with
}

// daemonLag is a lag a worker reported of its own timer (its health probe's last wake-up),
// seen by the runner at `at`.
type daemonLag struct {
	node string
	lagSample
}

// daemonReported records the probe lag a worker's heartbeat (sent at beat, by its control
// plane's stamp) reported, seen at now; each heartbeat once.
func (h *hostLag) daemonReported(node string, beat time.Time, lag time.Duration, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastBeatOf == nil {
		h.lastBeatOf = map[string]time.Time{}
	}
	if beat.Equal(h.lastBeatOf[node]) {
		return
	}
	h.lastBeatOf[node] = beat
	if lag > lagFloor {
		h.daemons = append(h.daemons, daemonLag{node, lagSample{now, lag}})
	}
}

// worstDaemon is the largest lag a worker reported that the runner saw inside [from, to]
// (zero if none).
func (h *hostLag) worstDaemon(from, to time.Time) (worst daemonLag) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.daemons {
		if !d.at.Before(from) && !d.at.Add(-d.lag).After(to) && d.lag > worst.lag {
			worst = d
		}
	}
	return worst
}

// daemonLagCounts reports whether the workers' own probe lags are the host's: not in a file
// that starves a worker (its probes are late on purpose) or moves a clock (its probe's lag is
// measured on it).
func (r *runner) daemonLagCounts() bool {
	return !hasEvent(r.sc, "starve") && !hasClockEvents(r.sc)
}

func startHostLag() *hostLag {
	h := &hostLag{stop: make(chan struct{}), done: make(chan struct{})}
	go h.loop()
	return h
}

func (h *hostLag) loop() {
	defer close(h.done)
	t := time.NewTimer(lagTick)
	defer t.Stop()
	due := time.Now().Add(lagTick)
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		h.record(now, now.Sub(due))
		due = now.Add(lagTick)
		t.Reset(lagTick)
	}
}

func (h *hostLag) record(at time.Time, lag time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wakeups++
	if lag > lagFloor {
		h.late = append(h.late, lagSample{at, lag})
	}
}

// starveRan records that a starved node ran for ran from at, between two of the starve's stops.
func (h *hostLag) starveRan(node string, at time.Time, ran time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.starved == nil {
		h.starved = map[string][]lagSample{}
	}
	h.starved[node] = append(h.starved[node], lagSample{at, ran})
}

// longestStarveRun is the longest run of one of nodes between a starve's stops, within
// [from, to] (zero if none).
func (h *hostLag) longestStarveRun(nodes []string, from, to time.Time) (node string, longest lagSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range nodes {
		for _, s := range h.starved[n] {
			if !s.at.Before(from) && !s.at.After(to) && s.lag > longest.lag {
				node, longest = n, s
			}
		}
	}
	return node, longest
}

// lost is how long the runner's timer was late inside [from, to]: the part of each late
// wake-up's wait (from when it was due to when it came) that falls inside.
func (h *hostLag) lost(from, to time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var sum time.Duration
	for _, s := range h.late {
		start, end := s.at.Add(-s.lag), s.at
		if start.Before(from) {
			start = from
		}
		if end.After(to) {
			end = to
		}
		if end.After(start) {
			sum += end.Sub(start)
		}
	}
	return sum
}

// hostMetrics marks INCONCLUSIVE each disagreeing metric that has a window (o.windows: a wait
// after an event, which a timer's phase bounds) and agrees once the time the runner's own timer
// lost inside that window is taken off: real daemons take real time for what the scenario's
// scale multiplies, so on a late host the wait says more about the host than about the fleet.
func (r *runner) hostMetrics(ms []Metric, o *observer) {
	if r.lag == nil {
		return
	}
	bound := phaseBound(r.sc).Seconds()
	for i := range ms {
		m := &ms[i]
		if m.Agree || m.Missing != "" {
			continue
		}
		if r.wl != nil && isWorkloadMetric(m.Name) {
			// A figure of the whole workload (admissions, queue times, the engine's peak)
			// has no window to take lost time off: leases lost to a stall, and queries
			// re-admitted, change it. A stall over a workload check's budget makes it the
			// host's as much as the fleet's; the cap checks still judge the peak.
			end := r.t0.Add(r.scale(r.sc.Duration))
			if w := r.lag.worst(r.t0, end); w.lag > workloadLagBudget {
				m.Inconclusive = fmt.Sprintf("the host was late: the runner's own timer woke %v late at %v, over the %v a workload tolerates",
					w.lag.Round(time.Millisecond), r.sinceStart(w.at).Round(time.Millisecond), workloadLagBudget)
			} else if d := r.lag.worstDaemon(r.t0, end); d.lag > workloadLagBudget {
				m.Inconclusive = fmt.Sprintf("the host was late: %s reported its own health probe %v late (seen at %v), over the %v a workload tolerates",
					d.node, d.lag.Round(time.Millisecond), r.sinceStart(d.at).Round(time.Millisecond), workloadLagBudget)
			}
			continue
		}
		w, ok := o.windows[m.Name]
		if !ok {
			continue
		}
		lost := (time.Duration(float64(r.lag.lost(r.t0.Add(r.scale(w[0])), r.t0.Add(r.scale(w[1])))) / r.opts.TimeScale)).Seconds()
		without := m.Real - lost
		if without <= bound && m.Sim <= bound || math.Abs(without-m.Sim) <= Tolerance*m.Sim {
			m.Inconclusive = fmt.Sprintf("the host was late: the runner's own timer lost %.2fs (scenario time) in the wait; without it, %.2fs agrees", lost, without)
		}
	}
}

// worst is the latest wake-up whose wait overlaps [from, to] (zero if none).
func (h *hostLag) worst(from, to time.Time) (worst lagSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.late {
		if s.at.Before(from) || s.at.Add(-s.lag).After(to) {
			continue
		}
		if s.lag > worst.lag {
			worst = s
		}
	}
	return worst
}

// close stops the timing (again: nothing); the samples stay readable.
func (h *hostLag) close() {
	h.once.Do(func() { close(h.stop) })
	<-h.done
}

// lateRun finds flips wake-ups in a row later than over, each within every (plus its own
// lateness) of the one before, the last of them overlapping [from, to]: what makes a worker
// whose probe runs every `every` flip its health then (its next probe is due `every` after a
// late one woke). It returns the latest of them. flips 1 is one wake-up later than over.
func (h *hostLag) lateRun(from, to time.Time, over, every time.Duration, flips int) (worst lagSample, found bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var prev lagSample
	run := 0
	for _, s := range h.late {
		if s.lag <= over || s.at.Add(-s.lag).After(to) {
			continue
		}
		if run > 0 && s.at.Sub(prev.at) > every+s.lag+2*lagTick {
			run, worst = 0, lagSample{}
		}
		run++
		prev = s
		if s.lag > worst.lag {
			worst = s
		}
		if run >= max(flips, 1) && !s.at.Before(from) {
			return worst, true
		}
	}
	return lagSample{}, false
}

// HostLag is how late the runner's own timer wake-ups came during the real run (boot
// included): the host's scheduling lag, which every daemon's timers suffered too.
type HostLag struct {
	TickMs  float64 `json:"tick_ms"` // the runner woke this often
	Wakeups int     `json:"wakeups"`
	// Late counts the wake-ups later than 5 ms.
	Late  int     `json:"late"`
	MaxMs float64 `json:"max_ms"`
	// MaxAtSecs is the scenario time of the latest wake-up (negative: during the boot).
	MaxAtSecs float64 `json:"max_at_s"`
}

func (h HostLag) String() string {
	if h.Late == 0 {
		return fmt.Sprintf("the runner's timer, every %gms, never woke more than 5ms late (%d wake-ups)", h.TickMs, h.Wakeups)
	}
	return fmt.Sprintf("the runner's timer, every %gms, woke up to %.0fms late (at %.1fs); %d of %d wake-ups more than 5ms late",
		h.TickMs, h.MaxMs, h.MaxAtSecs, h.Late, h.Wakeups)
}

// summary is the whole run's lag, times relative to scenario time 0 at t0 (scale: the run's).
func (h *hostLag) summary(sinceStart func(time.Time) time.Duration) HostLag {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := HostLag{TickMs: float64(lagTick) / float64(time.Millisecond), Wakeups: h.wakeups, Late: len(h.late)}
	for _, l := range h.late {
		if ms := float64(l.lag) / float64(time.Millisecond); ms > s.MaxMs {
			s.MaxMs, s.MaxAtSecs = ms, sinceStart(l.at).Seconds()
		}
	}
	return s
}

// lagBudget is what a check's verdict tolerates of the host: unless daemon timers fire more
// than max late flips times in a row, every apart (real time), the states it reads in [from, to]
// (scenario time) are the fleet's doing. what names the setting; settle (real time) widens the
// window back by how long a late timer goes on showing in those states.
type lagBudget struct {
	max      time.Duration
	what     string
	flips    int
	every    time.Duration
	from, to time.Duration
	settle   time.Duration
	// starved are the nodes whose starve events the check reads: a starve is only a starve
	// while each run between its stops is shorter than every (a probe coming due in a run
	// would be on time), and the runner's own timer ends those runs.
	starved []string
	// daemons: one lag over max that a worker reported of its own probe counts too (flips 1).
	daemons bool
	// passHolds: a PASS stands on a late host, whose lag only ever works against it (it takes
	// health away, delays grants, reclaims and kills; it gives nothing).
	passHolds bool
}

// lagBound is a check whose verdict a late host can decide by itself.
type lagBound interface {
	lagBudget(r *runner) (lagBudget, bool)
}

// hostVerdict is v, or INCONCLUSIVE when the runner's own wake-ups came later than the check's
// budget inside its window, as often as it takes: then the host could have made the verdict
// either way (late health probes make a worker unhealthy; or, during a fault that should, it is
// unhealthy for the host's reason), so it is neither a pass nor a failure.
func (r *runner) hostVerdict(c realCheck, v Verdict) Verdict {
	lb, ok := c.(lagBound)
	if !ok || r.lag == nil {
		return v
	}
	b, ok := lb.lagBudget(r)
	if !ok || b.passHolds && v.Verdict == "PASS" {
		return v
	}
	from, to := r.t0.Add(r.scale(b.from)-b.settle), r.t0.Add(r.scale(b.to))
	if node, run := r.lag.longestStarveRun(b.starved, from, to); run.lag >= b.every && b.every > 0 {
		return Verdict{Name: v.Name, Verdict: "INCONCLUSIVE", Detail: fmt.Sprintf(
			"the host was late: the runner's timer ended a run of the starved %s %v after it began (at %v), not under a probe interval (%v), so a probe could come on time: the starve was not applied; the daemons' verdict was %s: %s",
			node, run.lag.Round(time.Millisecond), r.sinceStart(run.at).Round(time.Millisecond), b.every, v.Verdict, v.Detail)}
	}
	w, late := r.lag.lateRun(from, to, b.max, b.every, b.flips)
	if !late && b.daemons {
		// The runner was on time, but a worker may not have been (a busy host does not keep
		// every process waiting alike).
		if d := r.lag.worstDaemon(from, to); d.lag > b.max {
			return Verdict{Name: v.Name, Verdict: "INCONCLUSIVE", Detail: fmt.Sprintf(
				"the host was late: over the %v %s, %s reported its own health probe %v late (seen at %v); the daemons' verdict was %s: %s",
				b.max, b.what, d.node, d.lag.Round(time.Millisecond), r.sinceStart(d.at).Round(time.Millisecond), v.Verdict, v.Detail)}
		}
	}
	if !late {
		// A state wanted inside the window that came after it, later by no more than the
		// host lost meanwhile (a reaper that woke late evicts late), was delayed, not missed.
		if sc, ok := c.(*stateCheck); ok && v.Verdict == "FAIL" {
			if why, ok := sc.cameLate(r, from); ok {
				return Verdict{Name: v.Name, Verdict: "INCONCLUSIVE", Detail: fmt.Sprintf(
					"the host was late: %s; the daemons' verdict was %s: %s", why, v.Verdict, v.Detail)}
			}
		}
		return v
	}
	how := fmt.Sprintf("woke %v late at %v", w.lag.Round(time.Millisecond), r.sinceStart(w.at).Round(time.Millisecond))
	if b.flips > 1 {
		how = fmt.Sprintf("woke later than that %d times in a row, %v apart (the worst %v late, at %v)",
			b.flips, b.every, w.lag.Round(time.Millisecond), r.sinceStart(w.at).Round(time.Millisecond))
	}
	return Verdict{Name: v.Name, Verdict: "INCONCLUSIVE", Detail: fmt.Sprintf(
		"the host was late: over the %v %s, the runner's own timer %s; the daemons' verdict was %s: %s",
		b.max, b.what, how, v.Verdict, v.Detail)}
}
