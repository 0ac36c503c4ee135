package scenarios

// The workload's checks: leasesWithinCap (the control plane's view: leases held <= cap after
// every grant), engineWithinCap (the engines' view: queries executing on a cluster <= cap at
// every change), and served (the workload got through).

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

type capOracle struct {
	what string
	get  func(*WorkloadStats) (int, map[string]int)
}

func parseCapOracle(get func(*WorkloadStats) (int, map[string]int), what string) CheckKind {
	return func(sc *Scenario, p Params) (Check, error) {
		var none struct{}
		if err := p.Decode(&none); err != nil {
			return nil, err
		}
		if sc.Workload == nil {
			return nil, p.Errorf("this check needs a workload: section")
		}
		return &capOracle{what: what, get: get}, nil
	}
}

func (c *capOracle) Start(w *World) {}

func (c *capOracle) Result(w *World) (bool, string) {
	st := WorkloadOf(w)
	n, peaks := c.get(st)
	var parts []string
	for _, cl := range w.Scenario.Workload.Clusters {
		parts = append(parts, fmt.Sprintf("%s max %d/%d", cl.Name, peaks[cl.Name], cl.Cap))
	}
	detail := fmt.Sprintf("%s within cap at every instant: %s", c.what, strings.Join(parts, ", "))
	if n > 0 {
		var first []string
		for _, v := range st.FirstViolations {
			if strings.Contains(v, c.what) {
				first = append(first, v)
			}
		}
		return false, fmt.Sprintf("%d violations; %s; first: %s", n, detail, strings.Join(first, " | "))
	}
	return true, detail
}

// served: the workload got through: at least minAdmitted grants, queue p99 at most maxQueueP99,
// every listed worker admitted at least once (minPerWorker), and, when maxLeaseLost is set, at
// most that many queries ended because their capacity lease was lost after they were admitted.
type served struct {
	minAdmitted, minPerWorker int
	maxQueueP99               time.Duration
	maxLeaseLost              *int
}

func parseServed(sc *Scenario, p Params) (Check, error) {
	var c struct {
		MinAdmitted  int           `yaml:"minAdmitted"`
		MinPerWorker int           `yaml:"minPerWorker"`
		MaxQueueP99  time.Duration `yaml:"maxQueueP99"`
		MaxLeaseLost *int          `yaml:"maxLeaseLost"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if sc.Workload == nil {
		return nil, p.Errorf("served needs a workload: section")
	}
	return &served{minAdmitted: c.MinAdmitted, minPerWorker: c.MinPerWorker, maxQueueP99: c.MaxQueueP99, maxLeaseLost: c.MaxLeaseLost}, nil
}

func (c *served) Start(w *World) {}

func (c *served) Result(w *World) (bool, string) {
	st := WorkloadOf(w)
	s := st.Summary(w.Scenario)
	pass := s.Admitted >= c.minAdmitted && (c.maxQueueP99 == 0 || s.QueueP99Ms <= float64(c.maxQueueP99.Milliseconds()))
	var starved []string
	for name, aw := range s.PerWorker {
		if aw[0] < c.minPerWorker {
			starved = append(starved, name)
		}
	}
	sort.Strings(starved)
	if len(starved) > 0 {
		pass = false
	}
	detail := s.String()
	if len(starved) > 0 {
		detail += fmt.Sprintf("; admitted < %d on %s", c.minPerWorker, strings.Join(starved, " "))
	}
	if c.maxLeaseLost != nil {
		lost := 0
		for _, wl := range st.Workers { //determinism:ok a sum is the same in any order
			lost += wl.LeaseLost
		}
		pass = pass && lost <= *c.maxLeaseLost
		detail += fmt.Sprintf("; %d ended by a lost lease (at most %d)", lost, *c.maxLeaseLost)
	}
	return pass, detail
}
