package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, margin string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "queryflux.yaml")
	err := os.WriteFile(p, []byte(`queryflux:
  role: worker
  controlPlane: {url: "http://cp:9000", secret: "s"}
  coordination: {mode: controlPlane, leaseTtlSecs: 20, driftMarginSecs: `+margin+`}
clusters:
  - {name: pg, engine: postgres, endpoint: "db:5432", maxRunningQueries: 2}
clusterGroups:
  - {name: g, members: [pg], capacityWaitTimeoutSecs: 5}
routingFallback: g
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A CI acts on the exit status and reads the JUnit file.
func TestCheckExitStatusAndJUnit(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "junit.xml")
	var out bytes.Buffer
	err := runCheck(&out, writeConfig(t, "1"), checkFlags{checks: 2, seed: 1, maxDrift: 0.05, junit: junit})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitCheckFailed {
		t.Fatalf("a too-small drift margin: %v, want exit %d\n%s", err, exitCheckFailed, out.String())
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Failures int `xml:"failures,attr"`
		Tests    int `xml:"tests,attr"`
	}
	if err := xml.Unmarshal(b, &suite); err != nil || suite.Failures < 1 || suite.Tests < 3 {
		t.Fatalf("junit: %+v %v\n%s", suite, err, b)
	}
	if !strings.Contains(out.String(), "FAIL") || !strings.Contains(out.String(), "driftMarginSecs 1 is too small") {
		t.Fatalf("report does not say why:\n%s", out.String())
	}

	err = runCheck(&out, filepath.Join(t.TempDir(), "missing.yaml"), checkFlags{checks: 1})
	if !errors.As(err, &ee) || ee.code != exitBadInput {
		t.Fatalf("a missing config: %v, want exit %d", err, exitBadInput)
	}
}
