package main

import (
	"maps"
	"strings"
	"testing"
)

func TestWorkerLabelsFlagsOverConfig(t *testing.T) {
	got, err := workerLabels(map[string]string{"zone": "eu-1", "tier": "gold"}, []string{"zone=eu-2", "team=bi"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"zone": "eu-2", "tier": "gold", "team": "bi"}; !maps.Equal(got, want) {
		t.Fatalf("labels %v, want %v", got, want)
	}
	if _, err := workerLabels(nil, []string{"team=bi", "zone=eu 1"}); err == nil || !strings.Contains(err.Error(), `--label: label zone: value "eu 1"`) {
		t.Fatalf("a bad --label: %v", err)
	}
}
