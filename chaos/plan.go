package chaos

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/queryflux/queryflux/scenarios"
)

// Event kinds with a real implementation, and why the others have none.
// starve is approximated: SIGSTOP for the delay, SIGCONT for a quarter of it, repeated.
var unsupportedEvents = map[string]string{}

// step is one timeline entry mapped to real processes and proxies.
type step struct {
	at   time.Duration // scenario time
	what string
	do   func(r *runner) error
	ev   *scenarios.Event // the timeline event it plays (nil for a check's probe)
}

// planEvent maps a timeline event, or says why chaos cannot run it.
func planEvent(sc *scenarios.Scenario, ev *scenarios.Event) (step, string) {
	st := step{at: ev.At, what: fmt.Sprintf("%s@%v", ev.Kind, ev.At), ev: ev}
	if why, ok := unsupportedEvents[ev.Kind]; ok {
		return st, why
	}
	switch ev.Kind {
	case "crash", "restart":
		names, why := resolveParam(sc, ev.Params)
		if why != "" {
			return st, why
		}
		crash := ev.Kind == "crash"
		st.do = func(r *runner) error {
			for _, n := range names {
				p := r.procs[n]
				if r.wl != nil {
					r.wl.crashed(n) // first: its clients see the kill at once
				}
				p.kill()
				if !crash && r.cfg != nil {
					if s, _ := r.sc.Spec(n); s.Role == "worker" {
						if err := r.cfg.restarting(n); err != nil {
							return err
						}
					}
				}
				if !crash {
					if err := p.start(); err != nil {
						return err
					}
				}
			}
			return nil
		}
	case "stop":
		var args struct {
			Node  string        `yaml:"node"`
			Grace time.Duration `yaml:"grace"`
		}
		if err := ev.Params.Decode(&args); err != nil {
			return st, err.Error()
		}
		names, err := sc.Resolve(args.Node)
		if err != nil {
			return st, err.Error()
		}
		st.do = func(r *runner) error {
			for _, n := range names {
				p := r.procs[n]
				p.signal(syscall.SIGTERM, true)
				r.after(r.scale(args.Grace), func() { p.kill() })
			}
			return nil
		}
	case "starve":
		var args struct {
			Node  string        `yaml:"node"`
			Delay time.Duration `yaml:"delay"`
			For   time.Duration `yaml:"for"`
		}
		if err := ev.Params.Decode(&args); err != nil {
			return st, err.Error()
		}
		names, err := sc.Resolve(args.Node)
		if err != nil {
			return st, err.Error()
		}
		if args.For <= 0 {
			return st, "starve without `for` (an endless SIGSTOP cycle) is not supported in chaos"
		}
		st.do = func(r *runner) error {
			for _, n := range names {
				r.starve(r.procs[n], r.scale(args.Delay), r.scale(args.For))
			}
			return nil
		}
	case "revokeLeases":
		return planRevokeLeases(sc, ev, st)
	case "registerAs":
		return planRegisterAs(sc, ev, st)
	case "relabel":
		return planRelabel(sc, ev, st)
	case "drift", "clockStep":
		return planClock(sc, ev, st)
	case "partition", "heal", "link", "hold", "release":
		return planLink(sc, ev, st)
	case "configEdit":
		return planConfigEdit(sc, ev, st)
	case "configSet", "configBad", "configHang":
		if sc.Config != nil && (ev.Kind != "configSet" || !hasCluster(ev)) {
			return planConfigEvent(sc, ev, st)
		}
		return planCapSet(sc, ev, st)
	default:
		return st, fmt.Sprintf("event kind %q is not supported in chaos", ev.Kind)
	}
	return st, ""
}

func resolveParam(sc *scenarios.Scenario, p scenarios.Params) ([]string, string) {
	var target string
	if err := p.Decode(&target); err != nil {
		return nil, err.Error()
	}
	names, err := sc.Resolve(target)
	if err != nil {
		return nil, err.Error()
	}
	return names, ""
}

// direction is one proxied direction: a worker's link, up (worker→control plane) or down.
type direction struct {
	worker string
	up     bool
}

// planLink maps partition, heal, link, hold and release events onto the proxies: only a
// worker's link to its own control plane is proxied. Hold and release set the direction's
// qffault toxic (netfault.go), as does a link's drop.
func planLink(sc *scenarios.Scenario, ev *scenarios.Event, st step) (step, string) {
	var lp struct {
		scenarios.LinkParams `yaml:",inline"`
		Latency              *scenarios.Latency `yaml:"latency"`
		Drop                 float64            `yaml:"drop"`
	}
	if err := ev.Params.Decode(&lp); err != nil {
		return st, err.Error()
	}
	if ev.Kind != "link" && (lp.Latency != nil || lp.Drop != 0) {
		return st, "latency/drop only on link events"
	}
	if lp.Drop < 0 || lp.Drop > 1 {
		return st, fmt.Sprintf("drop %v: must be in [0, 1]", lp.Drop)
	}
	var dirs []direction
	var peerDirs [][2]string // worker → worker directions (peerlink.go)
	healAll := ev.Kind == "heal" && lp.From == "" && lp.To == ""
	if healAll {
		for _, s := range sc.Nodes() {
			if s.Role == "worker" {
				dirs = append(dirs, direction{s.Name, true}, direction{s.Name, false})
			}
		}
	} else {
		from, err := sc.Resolve(lp.From)
		if err != nil {
			return st, "from: " + err.Error()
		}
		to, err := sc.Resolve(lp.To)
		if err != nil {
			return st, "to: " + err.Error()
		}
		for _, a := range from {
			for _, b := range to {
				if a == b {
					continue
				}
				pairs := [][2]string{{a, b}}
				if !lp.OneWay {
					pairs = append(pairs, [2]string{b, a})
				}
				for _, pr := range pairs {
					if isWorker(sc, pr[0]) && isWorker(sc, pr[1]) {
						if ev.Kind != "partition" && ev.Kind != "heal" {
							return st, fmt.Sprintf("link %s→%s: between workers chaos cuts and heals (partition, heal), no %s", pr[0], pr[1], ev.Kind)
						}
						peerDirs = append(peerDirs, pr)
						continue
					}
					d, ok := proxied(sc, pr[0], pr[1])
					if !ok {
						return st, fmt.Sprintf("link %s→%s is not proxied in chaos (only a worker's links to its control plane and to other workers are)", pr[0], pr[1])
					}
					if !slices.Contains(dirs, d) {
						dirs = append(dirs, d)
					}
				}
			}
		}
	}
	lat, jit := time.Duration(0), time.Duration(0)
	if l := lp.Latency; l != nil {
		switch l.Dist {
		case "fixed":
			lat = l.Min
		case "uniform":
			lat, jit = (l.Min+l.Max)/2, (l.Max-l.Min)/2
		default:
			return st, fmt.Sprintf("latency dist %q is not supported in chaos (fixed or uniform)", l.Dist)
		}
	}
	kind := ev.Kind
	st.do = func(r *runner) error {
		if healAll && r.peers != nil {
			r.peers.healAll()
		}
		for _, pr := range peerDirs {
			r.peers.set(pr[0], pr[1], kind == "partition")
		}
		touched := map[string]bool{}
		for _, d := range dirs {
			l := r.links[d.worker]
			l.mu.Lock()
			switch kind {
			case "partition", "heal":
				cut := kind == "partition"
				if d.up {
					l.cutUp = cut
				} else {
					l.cutDown = cut
				}
			case "link":
				if d.up {
					l.latUp, l.jitUp = r.scale(lat), r.scale(jit)
				} else {
					l.latDown, l.jitDown = r.scale(lat), r.scale(jit)
				}
				l.fault(d.up).setDrop(lp.Drop)
			case "hold", "release":
				l.fault(d.up).setHeld(kind == "hold")
			}
			l.mu.Unlock()
			touched[d.worker] = true
		}
		for w := range touched {
			if err := r.links[w].apply(); err != nil {
				return err
			}
		}
		return nil
	}
	return st, ""
}

func isWorker(sc *scenarios.Scenario, name string) bool {
	s, _ := sc.Spec(name)
	return s.Role == "worker"
}

// hasPeerFaults reports whether the timeline cuts a link between two workers.
func hasPeerFaults(sc *scenarios.Scenario) bool {
	for _, ev := range sc.Timeline {
		if ev.Kind != "partition" {
			continue
		}
		var lp scenarios.LinkParams
		if ev.Params.Decode(&lp) != nil {
			continue
		}
		from, _ := sc.Resolve(lp.From)
		to, _ := sc.Resolve(lp.To)
		for _, a := range from {
			for _, b := range to {
				if a != b && isWorker(sc, a) && isWorker(sc, b) {
					return true
				}
			}
		}
	}
	return false
}

func proxied(sc *scenarios.Scenario, from, to string) (direction, bool) {
	role := func(n string) string { s, _ := sc.Spec(n); return s.Role }
	switch {
	case role(from) == "worker" && sc.ControlPlaneOf(from) == to:
		return direction{from, true}, true
	case role(to) == "worker" && sc.ControlPlaneOf(to) == from:
		return direction{to, false}, true
	}
	return direction{}, false
}

// hasCluster reports whether a configSet names a workload cluster.
func hasCluster(ev *scenarios.Event) bool {
	var a struct {
		Cluster string `yaml:"cluster"`
	}
	return ev.Params.Decode(&a) == nil && a.Cluster != ""
}
