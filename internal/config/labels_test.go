package config

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestParseLabelNamesTheBadLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"zone", `label "zone": want key=value`},
		{"=eu-1", `label key ""`},
		{"zo ne=eu-1", `label key "zo ne"`},
		{"zone=eu 1", `label zone: value "eu 1"`},
		{"zone=-eu", `label zone: value "-eu"`},
		{strings.Repeat("k", 64) + "=v", "1..63"},
	} {
		if _, _, err := ParseLabel(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLabel(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	for _, in := range []string{"zone=eu-1", "team=", "topology.kubernetes.io/zone=eu-west-1a"} {
		if _, _, err := ParseLabel(in); err != nil {
			t.Errorf("ParseLabel(%q): %v", in, err)
		}
	}
}

func TestSelectorsAndLabelsAreValidated(t *testing.T) {
	cfg := mustParse(t, `
queryflux: {labels: {"zone": "eu 1"}}
clusters:
  - {name: a, engine: sim, maxRunningQueries: 1, workerSelector: {"bad key": x}}
clusterGroups:
  - {name: g, members: [a], workerSelector: {zone: "eu/1/"}}
routingFallback: g
`)
	got := paths(Validate(cfg))
	for _, want := range []string{"queryflux.labels.zone", `clusters[0].workerSelector["bad key"]`, "clusterGroups[0].workerSelector.zone"} {
		if !slices.Contains(got, want) {
			t.Errorf("no error at %s; errors at %v", want, got)
		}
	}
}

func TestWithheldGroupsAreKnownNames(t *testing.T) {
	src := `
clusters: [{name: a, engine: sim, maxRunningQueries: 1}]
clusterGroups: [{name: g, members: [a]}]
routers: [{type: header, headerName: x, headerValue: eu, group: eu}]
routingFallback: g
`
	if errs := Validate(mustParse(t, src)); !slices.Contains(paths(errs), "routers[0].group") {
		t.Fatalf("a router naming an undefined group passed: %v", errs)
	}
	cfg := mustParse(t, src)
	cfg.WithheldGroups = []WithheldGroup{{Name: "eu", WorkerSelector: map[string]string{"zone": "eu-1"}}}
	if errs := Validate(cfg); len(errs) > 0 {
		t.Fatalf("a router naming a withheld group: %v", errs)
	}
}

// Selects is subset inclusion: adding labels never makes a worker ineligible, and a selector
// built from a worker's own labels always selects it.
func TestSelectsIsSubsetInclusion(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.MapOf(rapid.SampledFrom([]string{"zone", "team", "tier"}), rapid.SampledFrom([]string{"a", "b"}))
		labels, selector, extra := gen.Draw(t, "labels"), gen.Draw(t, "selector"), gen.Draw(t, "extra")
		want := true
		for k, v := range selector {
			if labels[k] != v {
				want = false
			}
			if _, ok := labels[k]; !ok {
				want = false
			}
		}
		if Selects(selector, labels) != want {
			t.Fatalf("Selects(%v, %v) = %v", selector, labels, !want)
		}
		if !Selects(labels, labels) {
			t.Fatal("labels do not select themselves")
		}
		more := map[string]string{}
		for k, v := range extra {
			more[k] = v
		}
		for k, v := range labels {
			more[k] = v
		}
		if want && !Selects(selector, more) {
			t.Fatalf("more labels %v made the worker ineligible for %v", more, selector)
		}
	})
}

func TestPreferredWorkerIsValidated(t *testing.T) {
	cfg := mustParse(t, `
clusters:
  - {name: a, engine: sim, maxRunningQueries: 1}
clusterGroups:
  - {name: off, members: [a], cache: {preferredWorker: true}}
  - {name: slow, members: [a], cache: {enabled: true, ttlSecs: 60, maxBytes: 1000, preferredWorker: true, preferredWorkerTimeoutMs: 60001}}
  - {name: neg, members: [a], cache: {enabled: true, ttlSecs: 60, maxBytes: 1000, preferredWorkerTimeoutMs: -1}}
  - {name: ok, members: [a], cache: {enabled: true, ttlSecs: 60, maxBytes: 1000, preferredWorker: true, preferredWorkerTimeoutMs: 250}}
routingFallback: ok
`)
	errs := Validate(cfg)
	got := paths(errs)
	want := []string{"clusterGroups[0].cache.preferredWorker", "clusterGroups[1].cache.preferredWorkerTimeoutMs", "clusterGroups[2].cache.preferredWorkerTimeoutMs"}
	if !slices.Equal(got, want) {
		t.Fatalf("errors at %v, want %v (%v)", got, want, errs)
	}
	if !strings.Contains(errs[0].Error(), "needs cache.enabled") {
		t.Fatalf("the error does not say what is missing: %v", errs[0])
	}
}
