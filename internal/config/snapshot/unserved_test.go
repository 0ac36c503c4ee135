package snapshot

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// A group is unserved exactly when it has a selector and no worker's filtered snapshot holds it.
func TestUnservedMatchesWhatWorkersAreSent(t *testing.T) {
	full := selectorSnapshot(t)
	if got := full.SelectorGroups(); !slices.Equal(got, []string{"eu", "us", "bi"}) {
		t.Fatalf("groups with a selector: %v", got)
	}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 4).Draw(t, "workers")
		var workers []map[string]string
		sent := map[string]bool{}
		for i := range n {
			labels := map[string]string{}
			if z := rapid.SampledFrom([]string{"", "eu-1", "us-1", "ap-1"}).Draw(t, "zone"); z != "" {
				labels["zone"] = z
			}
			if team := rapid.SampledFrom([]string{"", "bi", "ops"}).Draw(t, "team"); team != "" {
				labels["team"] = team
			}
			workers = append(workers, labels)
			snap, err := full.For(labels)
			if err != nil {
				t.Fatalf("worker %d: %v", i, err)
			}
			for _, g := range snap.ClusterGroups {
				sent[g.Name] = true
			}
		}
		var want []string
		for _, g := range full.SelectorGroups() {
			if !sent[g] {
				want = append(want, g)
			}
		}
		var got []string
		for _, w := range full.Unserved(workers) {
			got = append(got, w.Name)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("workers %v: unserved %v, want %v", workers, got, want)
		}
	})
}

func TestUnservedNamesTheSelectorNeeded(t *testing.T) {
	full := selectorSnapshot(t)
	got := full.Unserved([]map[string]string{{"zone": "eu-1"}})
	if len(got) != 2 || got[0].Name != "us" || got[0].WorkerSelector["zone"] != "us-1" ||
		got[1].Name != "bi" || got[1].WorkerSelector["team"] != "bi" {
		t.Fatalf("unserved with one eu-1 worker: %+v", got)
	}
}
