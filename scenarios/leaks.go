package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/proxy"
)

// LeakCheckName is the end-of-run oracle every run ends with: once the workload's clients have
// stopped and what they started has ended, no node's core holds an admission or a result
// stream open (proxy.Core.Unclosed, the invariants ledger), and no worker's lease guard counts
// a slot as taken (an idle lease kept for reuse is not taken).
const LeakCheckName = "nothing left open"

// settleMax bounds the virtual time the clients' queries get to end after the clients stop:
// a stopped client's query ends when its context does, at once in simulated time.
const settleMax = time.Minute

// stopLoad remembers how to stop one node's clients at the end of the run.
func (w *World) stopLoadWith(stop func()) { w.stopLoad = append(w.stopLoad, stop) }

// nothingLeftOpen stops every client, lets the simulation run until no core holds anything open
// (at most settleMax more), and names what is still open.
func nothingLeftOpen(w *World) CheckResult {
	for _, stop := range w.stopLoad {
		stop()
	}
	end := w.Sim.Elapsed() + settleMax
	open := unclosed(w)
	res := CheckResult{Name: LeakCheckName, Pass: true,
		Detail: fmt.Sprintf("every admission, result stream and leased slot ended (%d open when the clients stopped)", len(open))}
	for len(open) > 0 && w.Sim.Elapsed() < end {
		if err := w.Sim.Run(w.Sim.Elapsed() + time.Second); err != nil {
			return CheckResult{Name: LeakCheckName, Detail: "the run failed while the clients' queries ended: " + err.Error(), Kind: runKind(err, nil)}
		}
		open = unclosed(w)
	}
	if len(open) > 0 {
		res.Pass, res.Kind = false, "left open"
		res.Detail = fmt.Sprintf("%d still open %v after the clients stopped: %s", len(open), settleMax, strings.Join(open, "; "))
	}
	return res
}

// unclosed lists what the cores of the running nodes hold open, by node.
func unclosed(w *World) []string {
	var out []string
	for _, spec := range w.Scenario.Nodes() {
		core := coreOf(Assembled(w, spec.Name))
		if core == nil {
			continue
		}
		for _, u := range core.Unclosed() {
			out = append(out, spec.Name+": "+u)
		}
		out = append(out, takenSlots(w, spec.Name)...)
	}
	slices.Sort(out)
	return out
}

// takenSlots describes the slots node's lease guard counts as taken, by cluster.
func takenSlots(w *World, node string) []string {
	wk, ok := Assembled(w, node).(*assembly.Worker)
	if !ok || wk.Guard == nil || wk.Guard.Leases() == nil || w.Scenario.Workload == nil {
		return nil
	}
	g := wk.Guard.Leases()
	var out []string
	for _, c := range w.Scenario.Workload.Clusters {
		if n := g.Held(c.Name) - g.Idle(c.Name); n > 0 {
			out = append(out, fmt.Sprintf("%s: %d leased slots of %s taken", node, n, c.Name))
		}
		if n := g.Local(c.Name); n > 0 {
			out = append(out, fmt.Sprintf("%s: %d local slots of %s taken", node, n, c.Name))
		}
	}
	return out
}

func coreOf(role any) *proxy.Core {
	switch r := role.(type) {
	case *assembly.Worker:
		return r.Query.Node.Core()
	case *assembly.ControlPlane:
		return r.Query.Node.Core()
	}
	return nil
}
