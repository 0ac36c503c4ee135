package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// configNeverHalfApplied on real daemons judges where each answered query ran: a worker whose
// reported revision routes gb to ga (members [a]) may not run a gb query on b. Around a switch
// either revision is allowed (the report trails the switch by up to a heartbeat and a look).
func TestConfigWholeCatchesAQueryRunWhereNoReportedRevisionRoutesIt(t *testing.T) {
	sc := load(t, "config-whole.yaml")
	spec := checkOfKind(t, sc, "configNeverHalfApplied")
	judge := func(landed ...landing) (bool, string) {
		ch, _, why := planCheck(sc, spec)
		if why != "" {
			t.Fatal(why)
		}
		before := map[string][]string{"ga": {"a"}, "gb": {"b"}}
		after := map[string][]string{"ga": {"a"}, "gb": {"a"}} // configEdit routes {gb: ga}
		for at := time.Second; at <= 75*time.Second; at += 100 * time.Millisecond {
			rev, routing := "r1aaaaaaaa", before
			if at >= 11*time.Second {
				rev, routing = "r2bbbbbbbb", after
			}
			ch.look(sc, &snapshot{t: at, cpUp: map[string]bool{"cp-1": true}, running: map[string]bool{"w-1": true, "w-2": true, "w-3": true},
				registry: map[string]map[string]workerapi.WorkerInfo{"cp-1": {
					"w-1": {Name: "w-1", Online: true, Revision: rev, Current: true},
					"w-2": {Name: "w-2", Online: true, Revision: rev, Current: true},
					"w-3": {Name: "w-3", Online: true, Revision: rev, Current: true},
				}}, routing: routing})
		}
		r := &runner{sc: sc, opts: Options{TimeScale: 1}, wl: &fleetWorkload{landed: landed}}
		return ch.result(r)
	}
	fine := []landing{
		{worker: "w-1", user: "gb", cluster: "b", from: 5 * time.Second, to: 7 * time.Second},
		{worker: "w-1", user: "gb", cluster: "b", from: 11500 * time.Millisecond, to: 13500 * time.Millisecond}, // sent as the report came
		{worker: "w-2", user: "gb", cluster: "a", from: 20 * time.Second, to: 22 * time.Second},
		{worker: "w-2", user: "ga", cluster: "a", from: 30 * time.Second, to: 32 * time.Second},
	}
	if pass, detail := judge(fine...); !pass || !strings.Contains(detail, "4 answered queries ran on a cluster the revision") {
		t.Fatalf("%v %s: want a pass judging all 4 queries", pass, detail)
	}
	half := landing{worker: "w-3", user: "gb", cluster: "b", from: 20 * time.Second, to: 22 * time.Second}
	pass, detail := judge(append(fine, half)...)
	if pass || !strings.Contains(detail, "half-applied: w-3's query as gb, sent at 20s, ran on cluster b; the revisions it reported then route gb to r2bbbbbb: [a]") {
		t.Fatalf("%v %s: want the gb query on b named half-applied", pass, detail)
	}
}

// While the control plane is down no look sees what a worker runs: a revision first seen after
// the outage may have run from the last look before it. A query answered during the outage, on
// a cluster only that revision routes it to, is no half-applied configuration; one answered
// before the last look that saw the old revision still is.
func TestConfigWholeCountsARevisionFromBeforeAnOutageOfItsControlPlane(t *testing.T) {
	sc := load(t, "config-whole.yaml")
	spec := checkOfKind(t, sc, "configNeverHalfApplied")
	judge := func(landed ...landing) (bool, string) {
		ch, _, why := planCheck(sc, spec)
		if why != "" {
			t.Fatal(why)
		}
		before := map[string][]string{"ga": {"a"}, "gb": {"a"}}
		after := map[string][]string{"ga": {"a"}, "gb": {"b"}}
		for at := time.Second; at <= 40*time.Second; at += 100 * time.Millisecond {
			rev, routing := "r1aaaaaaaa", before
			if at >= 30*time.Second {
				rev, routing = "r2bbbbbbbb", after
			}
			up := at < 20*time.Second || at >= 30*time.Second // killed at 20s, back at 30s
			ch.look(sc, &snapshot{t: at, cpUp: map[string]bool{"cp-1": up}, running: map[string]bool{"w-1": true},
				registry: map[string]map[string]workerapi.WorkerInfo{"cp-1": {
					"w-1": {Name: "w-1", Online: true, Revision: rev, Current: true},
				}}, routing: routing})
		}
		r := &runner{sc: sc, opts: Options{TimeScale: 1}, wl: &fleetWorkload{landed: landed}}
		return ch.result(r)
	}
	inOutage := landing{worker: "w-1", user: "gb", cluster: "b", from: 24 * time.Second, to: 25 * time.Second}
	if pass, detail := judge(inOutage); !pass || !strings.Contains(detail, "1 answered queries ran on a cluster the revision") {
		t.Fatalf("%v %s: want a pass judging the query answered during the outage", pass, detail)
	}
	before := landing{worker: "w-1", user: "gb", cluster: "b", from: 10 * time.Second, to: 11 * time.Second}
	if pass, detail := judge(inOutage, before); pass || !strings.Contains(detail, "half-applied: w-1's query as gb, sent at 10s, ran on cluster b") {
		t.Fatalf("%v %s: want the gb query on b before the outage named half-applied", pass, detail)
	}
}
