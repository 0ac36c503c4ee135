package config

import (
	"slices"
	"testing"
)

// TestCoordinationWeightsAreValidated: weights must be 1 to 100 and need the ordered queue.
func TestCoordinationWeightsAreValidated(t *testing.T) {
	ok := mustParse(t, "queryflux: {role: controlPlane, coordination: {queue: ordered, weights: {w-1: 3, w-2: 100}}}\n")
	if got := ok.QueryFlux.Coordination.Weights; got["w-1"] != 3 || got["w-2"] != 100 {
		t.Fatalf("weights parsed as %v", got)
	}
	if p := paths(Validate(ok)); slices.ContainsFunc(p, func(s string) bool { return len(s) > 30 && s[:30] == "queryflux.coordination.weights" }) {
		t.Fatalf("valid weights rejected: %v", p)
	}
	bad := mustParse(t, "queryflux: {role: controlPlane, coordination: {queue: ordered, weights: {w-1: 0, w-2: 101, w-3: 2}}}\n")
	got := paths(Validate(bad))
	for _, p := range []string{"queryflux.coordination.weights.w-1", "queryflux.coordination.weights.w-2"} {
		if !slices.Contains(got, p) {
			t.Errorf("missing error at %s; got %v", p, got)
		}
	}
	if slices.Contains(got, "queryflux.coordination.weights.w-3") {
		t.Errorf("weight 2 rejected: %v", got)
	}
	retry := mustParse(t, "queryflux: {role: controlPlane, coordination: {queue: retry, weights: {w-1: 2}}}\n")
	if !slices.Contains(paths(Validate(retry)), "queryflux.coordination.weights") {
		t.Errorf("weights with queue: retry accepted: %v", paths(Validate(retry)))
	}
	Clone(ok).QueryFlux.Coordination.Weights["w-1"] = 7
	if ok.QueryFlux.Coordination.Weights["w-1"] != 3 {
		t.Error("Clone shares the weights map")
	}
}
