package scenarios

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/sim"
	"github.com/queryflux/queryflux/sim/workload"
)

type pingsCheck struct {
	nodes []string
	minOK int
}

func parsePings(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Node  string `yaml:"node"`
		MinOK int    `yaml:"minOK"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	names, err := sc.Resolve(c.Node)
	if err != nil {
		return nil, p.Errorf("node: %v", err)
	}
	return &pingsCheck{nodes: names, minOK: c.MinOK}, nil
}

func (c *pingsCheck) Start(w *World) {}

func (c *pingsCheck) Result(w *World) (bool, string) {
	var parts []string
	pass := true
	for _, name := range c.nodes {
		st, _ := w.Role(name).(*workload.PingStats)
		if st == nil {
			return false, name + " is not a pingpong node"
		}
		if st.OK < c.minOK {
			pass = false
		}
		parts = append(parts, fmt.Sprintf("%s ok=%d failed=%d", name, st.OK, st.Failed))
	}
	return pass, fmt.Sprintf("want >= %d ok each: %s", c.minOK, strings.Join(parts, ", "))
}

// Window is when a polling check looks, and what it demands:
// sometime (the state is seen at least once), always (at every look), never, or end (at the
// last look).
type Window struct {
	From time.Duration `yaml:"from"`
	To   time.Duration `yaml:"to"`
	Mode string        `yaml:"mode"`
}

func (win *Window) validate(sc *Scenario, p Params) error {
	if win.Mode == "" {
		win.Mode = "sometime"
	}
	if !slices.Contains([]string{"sometime", "always", "never", "end"}, win.Mode) {
		return p.Errorf("mode %q: one of sometime, always, never, end", win.Mode)
	}
	if win.To == 0 {
		win.To = sc.Duration
	}
	if win.From > win.To || win.To > sc.Duration {
		return p.Errorf("window [%v, %v] is not inside the scenario's [0, %v]", win.From, win.To, sc.Duration)
	}
	return nil
}

// Probe reads one node's value for a polling check; ok false means it cannot be observed now
// (the node or the observer is down) and the look is skipped.
type Probe func(w *World, node string) (value string, ok bool)

// StateCheck polls Probe for each node every CheckEvery inside Window and compares with Want.
// Later kinds build on it: NewStateCheck(names, want, window, probe).
type StateCheck struct {
	what  string
	names []string
	want  string
	win   Window
	probe Probe

	hits, looks map[string]int
	first, last map[string]string
}

// NewStateCheck returns a polling check of probe == want over win for names.
func NewStateCheck(what string, names []string, want string, win Window, probe Probe) *StateCheck {
	return &StateCheck{what: what, names: names, want: want, win: win, probe: probe,
		hits: map[string]int{}, looks: map[string]int{}, first: map[string]string{}, last: map[string]string{}}
}

func (c *StateCheck) Start(w *World) {
	w.Every(c.win.From, c.win.To, w.Scenario.CheckEvery, func() {
		now := w.Sim.Elapsed()
		for _, name := range c.names {
			v, ok := c.probe(w, name)
			if !ok {
				continue
			}
			c.looks[name]++
			if c.last[name] != v { // a change of the observed state is part of the trace
				w.Sim.Record(c.what, name+"="+v)
			}
			c.last[name] = v
			if v == c.want {
				c.hits[name]++
				if _, seen := c.first[name]; !seen {
					c.first[name] = now.String()
				}
			}
		}
	})
}

// WindowPass is a polled check's verdict for one name over its window: hits of looks matched,
// and lastMatches says whether the last look did. chaos reads the same checks from daemons.
func WindowPass(mode string, hits, looks int, lastMatches bool) bool {
	switch mode {
	case "sometime":
		return hits > 0
	case "always":
		return looks > 0 && hits == looks
	case "never":
		return hits == 0
	case "end":
		return looks > 0 && lastMatches
	}
	return false
}

func (c *StateCheck) Result(w *World) (bool, string) {
	pass := true
	var parts []string
	for _, name := range c.names {
		hits, looks := c.hits[name], c.looks[name]
		pass = pass && WindowPass(c.win.Mode, hits, looks, c.last[name] == c.want)
		desc := fmt.Sprintf("%s: %d/%d looks %s", name, hits, looks, c.want)
		if f, seen := c.first[name]; seen {
			desc += " (first at " + f + ")"
		}
		desc += ", last " + c.last[name]
		parts = append(parts, desc)
	}
	return pass, fmt.Sprintf("%s %s %q in [%v, %v]: %s", c.what, c.win.Mode, c.want, c.win.From, c.win.To, strings.Join(parts, "; "))
}

// pingpongRole is a node that pings its peers (the simulator's own smoke test).
func pingpongRole(w *World, spec NodeSpec) (sim.Factory, error) {
	peers := spec.Peers
	if len(peers) == 0 {
		for _, s := range w.Scenario.Nodes() {
			if s.Role == "pingpong" && s.Name != spec.Name {
				peers = append(peers, s.Name)
			}
		}
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("pingpong node %s has no peers", spec.Name)
	}
	st := w.Durable("pingpong/"+spec.Name, func() any { return &workload.PingStats{} }).(*workload.PingStats)
	ping := workload.PingNode(peers, st)
	return func(n *sim.Node) http.Handler {
		w.SetRole(n.Name(), st)
		return ping(n)
	}, nil
}
