package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A file chaos cannot run is reported UNSUPPORTED (JSON names why) and fails the command,
// unless --skip-unsupported is given; a file that does not load fails it, and the others still run.
func TestChaosUnsupportedIsAVerdict(t *testing.T) {
	var out bytes.Buffer
	err := runChaos(context.Background(), &out, []string{"../../scenarios/pingpong.yaml"}, chaosFlags{timeScale: 0.1, json: true, bin: "/nonexistent"})
	if err != errChecksFailed {
		t.Fatalf("unsupported file: %v, want the command to fail\n%s", err, out.String())
	}
	out.Reset()
	err = runChaos(context.Background(), &out, []string{"../../scenarios/pingpong.yaml"}, chaosFlags{timeScale: 0.1, json: true, bin: "/nonexistent", skip: true})
	if err != nil {
		t.Fatalf("unsupported file with --skip-unsupported failed the command: %v\n%s", err, out.String())
	}
	var rep struct {
		Scenario    string   `json:"scenario"`
		Unsupported []string `json:"unsupported"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Scenario != "pingpong" || len(rep.Unsupported) == 0 {
		t.Fatalf("report %q: %v %+v", out.String(), err, rep)
	}

	out.Reset()
	err = runChaos(context.Background(), &out, []string{"../../scenarios/nope.yaml", "../../scenarios/pingpong.yaml"}, chaosFlags{timeScale: 0.1, bin: "/nonexistent"})
	if err != errChecksFailed || !strings.Contains(out.String(), "nope.yaml") || !strings.Contains(out.String(), "UNSUPPORTED in chaos") {
		t.Fatalf("missing file: %v\n%s", err, out.String())
	}
}
