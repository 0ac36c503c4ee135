package scenarios_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/scenarios"
)

// TestConfigChecksCanFail: without the fault, the checks that describe its effect fail, so
// passing scenarios mean something.
func TestConfigChecksCanFail(t *testing.T) {
	for file, cut := range map[string]string{
		"config-hang.yaml":           "  - {at: 10s, configHang: {for: 40s}}\n",
		"config-peer-bootstrap.yaml": "  - {at: 10s, crash: cp-1}\n",
		"config-bad.yaml":            "  - {at: 20s, configBad: {}}\n",
		"config-last-good.yaml":      "lastGood: true, ",
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), cut) {
			t.Fatalf("%s: no line %q", file, cut)
		}
		sc, err := scenarios.Parse(file, []byte(strings.Replace(string(b), cut, "", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if res := scenarios.Run(sc, 1, scenarios.RunOpts{}); res.Pass() {
			t.Errorf("%s passes without %q", file, strings.TrimSpace(cut))
		} else {
			for _, c := range res.Checks {
				if !c.Pass {
					t.Logf("%s without the fault: %s: %s", file, c.Name, c.Detail)
				}
			}
		}
	}
}

// The workers' retry after a failed poll is the binary's queryflux.controlPlane.retryMaxSecs,
// read from the configuration the simulator builds as serve does: with retryMax 2s a worker
// takes an edit made at its control plane's return after a long outage within seconds; with the
// binary's default (30 s) its backoff has grown past the return, and it does not.
func TestConfigRetryMaxIsTheBinarysSetting(t *testing.T) {
	const file = `duration: 60s
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 120s, requestTimeout: 1s}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 2}]
config: {cap: 2, pollTimeout: 5s%s}
timeline:
  - {at: 5s, crash: cp-1}
  - {at: 40s, restart: cp-1}
  - {at: 40s, configSet: {cap: 3}}
checks:
  - configStatus: {worker: workers, cap: 3, from: 46s, to: 50s, mode: always}
`
	for _, tc := range []struct {
		retryMax string
		pass     bool
	}{{", retryMax: 2s", true}, {"", false}} {
		sc, err := scenarios.Parse("retry.yaml", []byte(fmt.Sprintf(file, tc.retryMax)))
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(1); seed <= 3; seed++ {
			if res := scenarios.Run(sc, seed, scenarios.RunOpts{}); res.Pass() != tc.pass {
				t.Errorf("config {%s} seed %d: pass %v, want %v: %+v", strings.TrimPrefix(tc.retryMax, ", "), seed, res.Pass(), tc.pass, res.Checks)
			}
		}
	}
}
