package chaos

// drift and clockStep on real daemons: every daemon of a file with such events starts with
// QUERYFLUX_TEST_CLOCK_FILE naming its own file (node/env's test clock hook, which the Real
// Env's clock follows); an event rewrites the node's file. drift {offset, rate} shifts both of
// the node's clock readings by offset from that moment and runs the clock at rate (sleeps and
// timeouts taken through the Env last d/rate), as the simulator's SetClock; clockStep {by}
// moves the wall reading only, as an NTP step (the simulator's StepWall). What a daemon
// times outside its Env (the HTTP server's and the database driver's own timeouts) keeps
// real time.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/scenarios"
)

func hasClockEvents(sc *scenarios.Scenario) bool { return hasEvent(sc, "drift", "clockStep") }

// hasEvent reports whether the timeline has an event of one of kinds.
func hasEvent(sc *scenarios.Scenario, kinds ...string) bool {
	for _, ev := range sc.Timeline {
		if slices.Contains(kinds, ev.Kind) {
			return true
		}
	}
	return false
}

// clocks are the nodes' clock faults as last written.
type clocks struct {
	mu     sync.Mutex
	faults map[string]env.ClockFault
}

func (r *runner) clockFile(node string) string { return filepath.Join(r.dir, "clock-"+node) }

// clockEnv is the environment a daemon starts with (nil: no clock events in the file).
func (r *runner) clockEnv(node string) []string {
	if r.clock == nil {
		return nil
	}
	return []string{env.TestClockFileEnv + "=" + r.clockFile(node)}
}

// shiftClock changes node's fault and writes its file (whole, by rename: the daemon never
// reads half a line).
func (r *runner) shiftClock(node string, change func(f *env.ClockFault, now time.Time)) error {
	c := r.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.faults[node]
	if !ok {
		f = env.ClockFault{Rate: 1, Since: time.Now()}
	}
	change(&f, time.Now())
	c.faults[node] = f
	path := r.clockFile(node)
	if err := os.WriteFile(path+".tmp", []byte(f.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// planClock maps drift and clockStep onto the nodes' clock files.
func planClock(sc *scenarios.Scenario, ev *scenarios.Event, st step) (step, string) {
	var a struct {
		Node   string        `yaml:"node"`
		Offset time.Duration `yaml:"offset"`
		Rate   float64       `yaml:"rate"`
		By     time.Duration `yaml:"by"`
	}
	if err := ev.Params.Decode(&a); err != nil {
		return st, err.Error()
	}
	names, err := sc.Resolve(a.Node)
	if err != nil {
		return st, err.Error()
	}
	for _, n := range names {
		if s, _ := sc.Spec(n); s.Role != "worker" && s.Role != "controlplane" {
			return st, fmt.Sprintf("%s on %s: only daemons have clocks in chaos", ev.Kind, n)
		}
	}
	if ev.Kind == "drift" && a.Rate == 0 {
		a.Rate = 1
	}
	st.do = func(r *runner) error {
		for _, n := range names {
			err := r.shiftClock(n, func(f *env.ClockFault, now time.Time) {
				if ev.Kind == "clockStep" {
					f.WallStep += r.scale(a.By)
					return
				}
				f.Offset, f.Since, f.Rate = f.At(now)+r.scale(a.Offset), now, a.Rate
			})
			if err != nil {
				return fmt.Errorf("%s on %s: %w", ev.Kind, n, err)
			}
		}
		return nil
	}
	return st, ""
}
