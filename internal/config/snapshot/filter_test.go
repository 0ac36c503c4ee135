package snapshot

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

const selectorYAML = `
clusters:
  - {name: pg-eu, engine: postgres, endpoint: "eu:5432", maxRunningQueries: 1,
     credentials: {user: u, password: eu-s3cret}, workerSelector: {zone: eu-1}}
  - {name: pg-us, engine: postgres, endpoint: "us:5432", maxRunningQueries: 1,
     credentials: {user: u, password: us-s3cret}, workerSelector: {zone: us-1}}
  - {name: pg-any, engine: postgres, endpoint: "any:5432", maxRunningQueries: 1,
     credentials: {user: u, password: any-s3cret}}
clusterGroups:
  - {name: eu, members: [pg-eu, pg-any], strategy: weighted, weights: {pg-eu: 2, pg-any: 1}}
  - {name: us, members: [pg-us]}
  - {name: bi, members: [pg-any], workerSelector: {team: bi}}
  - {name: all, members: [pg-any]}
routers:
  - {type: header, headerName: x-group, headerValueToGroup: {eu: eu, us: us, bi: bi}}
routingFallback: all
`

func selectorSnapshot(t *testing.T) *WorkerSnapshotV1 {
	t.Helper()
	cfg, err := config.Parse([]byte(selectorYAML))
	if err != nil {
		t.Fatal(err)
	}
	config.ApplyDefaults(cfg)
	return build(t, cfg, Embedded)
}

func groupNames(s *WorkerSnapshotV1) []string {
	var out []string
	for _, g := range s.ClusterGroups {
		out = append(out, g.Name)
	}
	return out
}

// The wire form of a worker's snapshot holds no credentials, endpoints or members of the
// clusters its labels do not select, and its groups lose those members.
func TestForLeavesOutWhatTheLabelsDoNotSelect(t *testing.T) {
	full := selectorSnapshot(t)
	eu, err := full.For(map[string]string{"zone": "eu-1"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := Encode(eu)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"us-s3cret", "us:5432"} {
		if bytes.Contains(body, []byte(secret)) {
			t.Fatalf("the eu worker's snapshot holds %q: %s", secret, body)
		}
	}
	for _, want := range []string{"eu-s3cret", "any-s3cret"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Fatalf("the eu worker's snapshot lacks %q", want)
		}
	}
	if got := groupNames(eu); !slices.Equal(got, []string{"eu", "all"}) {
		t.Fatalf("groups %v", got)
	}
	var withheld []string
	for _, g := range eu.WithheldGroups {
		withheld = append(withheld, g.Name+config.FormatLabels(g.WorkerSelector))
	}
	if !slices.Equal(withheld, []string{"us{zone=us-1}", "bi{team=bi}"}) {
		t.Fatalf("withheld %v", withheld)
	}
	// Its configuration compiles, routers naming withheld groups included.
	cfg, err := eu.WorkerConfig(&config.QueryFlux{})
	if err == nil {
		err = config.Compile(cfg)
	}
	if err != nil {
		t.Fatalf("the filtered snapshot does not compile: %v", err)
	}
	// A worker with other labels gets another revision; the full snapshot's stays its own.
	us, err := full.For(map[string]string{"zone": "us-1", "team": "bi"})
	if err != nil {
		t.Fatal(err)
	}
	if us.Revision == eu.Revision || us.Revision == full.Revision {
		t.Fatal("filtered snapshots share a revision")
	}
	// eu keeps the member every worker may use, and only that member's weight.
	if got := groupNames(us); !slices.Equal(got, []string{"eu", "us", "bi", "all"}) {
		t.Fatalf("us groups %v", got)
	}
	if g := us.ClusterGroups[0]; !slices.Equal(g.Members, []string{"pg-any"}) || len(g.Weights) != 1 || g.Weights["pg-any"] != 1 {
		t.Fatalf("eu for a us worker: members %v weights %v", g.Members, g.Weights)
	}
	if full.ClusterGroups[0].Weights["pg-eu"] != 2 {
		t.Fatal("filtering changed the full snapshot")
	}
	// A group whose members the labels all refuse is withheld, naming what a worker would need.
	none, _ := full.For(map[string]string{"zone": "ap-1", "team": "bi"})
	if w := none.WithheldGroups; len(w) != 1 || w[0].Name != "us" || config.FormatLabels(w[0].WorkerSelector) != "{zone=us-1}" {
		t.Fatalf("withheld for an ap worker: %v", w)
	}
}

func TestForRevisionDependsOnlyOnVerdicts(t *testing.T) {
	full := selectorSnapshot(t)
	a, _ := full.For(map[string]string{"zone": "eu-1", "host": "a"})
	b, _ := full.For(map[string]string{"zone": "eu-1", "host": "b"})
	if a.Revision != b.Revision {
		t.Fatal("two workers with the same selector verdicts got different snapshots")
	}
	if VerdictKey(full.Verdicts(map[string]string{"zone": "eu-1"})) == VerdictKey(full.Verdicts(map[string]string{"zone": "eu-1", "team": "bi"})) {
		t.Fatal("verdict keys ignore a selector")
	}
	if _, err := a.For(nil); err == nil {
		t.Fatal("filtering a filtered snapshot again")
	}
}

// A worker refuses a snapshot filtered for other labels: the one its peer serves, or its own
// from before a restart with new labels.
func TestCheckForRefusesAnotherWorkersSnapshot(t *testing.T) {
	full := selectorSnapshot(t)
	eu, _ := full.For(map[string]string{"zone": "eu-1"})
	if err := eu.CheckFor(map[string]string{"zone": "eu-1", "host": "x"}); err != nil {
		t.Fatalf("a worker with the same verdicts: %v", err)
	}
	for labels, want := range map[string]string{
		"zone=us-1": `snapshot holds cluster "pg-eu" for workers labelled {zone=eu-1}`,
		"team=bi":   "snapshot holds cluster",
	} {
		k, v, _ := strings.Cut(labels, "=")
		if err := eu.CheckFor(map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("labels %s: %v", labels, err)
		}
	}
	// Same clusters, but bi is withheld from the eu worker: an eu+bi worker must not take it.
	err := eu.CheckFor(map[string]string{"zone": "eu-1", "team": "bi"})
	if err == nil || !strings.Contains(err.Error(), "filtered for a worker that does not satisfy selector {team=bi}") {
		t.Fatalf("an eu+bi worker took the eu worker's snapshot: %v", err)
	}
	if err := full.CheckFor(map[string]string{"zone": "eu-1"}); err == nil {
		t.Fatal("an unfiltered snapshot with clusters for other workers passed")
	}
}
