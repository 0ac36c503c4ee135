package chaos

import (
	"testing"
	"time"

	"github.com/queryflux/queryflux/scenarios"
)

// What the fleet does after an event is timed from when the real run applied it: a runner the
// host kept waiting heals a link, or edits the config, after the event's time, and the fleet's
// answer (a new session, the new cap on every worker) counts from then, as the simulator's
// counts from the event it applies on time. Without a record of the event's application, from
// the event's time.
func TestAfterEventMetricsCountFromTheEventsApplication(t *testing.T) {
	sc, err := scenarios.Parse("applied.yaml", []byte(`name: applied
duration: 20s
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 1}]
config: {cap: 2}
timeline:
  - {at: 4s, partition: {from: w-1, to: cp-1}}
  - {at: 8s, heal: {from: w-1, to: cp-1}}
  - {at: 9s, configSet: {cap: 4}}
`))
	if err != nil {
		t.Fatal(err)
	}
	heal, edit := sc.Timeline[1], sc.Timeline[2]
	o := newObserver()
	o.tokens["w-1"] = []time.Duration{time.Second, 8500 * time.Millisecond, 11 * time.Second}
	o.caps["w-1"] = []capAt{{0, 2}, {12 * time.Second, 4}}
	const (
		session = "w-1 new session after heal@8s"
		active  = mConfigActive + " (configSet@9s)"
	)
	onTime := headline(sc, o)
	if onTime[session] != 0.5 || onTime[active] != 3 {
		t.Fatalf("events applied on time: %s %v, %s %v; want 0.5 and 3", session, onTime[session], active, onTime[active])
	}
	o.applied = map[*scenarios.Event]time.Duration{heal: 9 * time.Second, edit: 10500 * time.Millisecond}
	late := headline(sc, o)
	if late[session] != 2 || late[active] != 1.5 {
		t.Fatalf("heal applied at 9s, the edit at 10.5s: %s %v, %s %v; want 2 (the session at 11s: the one at 8.5s came before the heal) and 1.5",
			session, late[session], active, late[active])
	}
}
