package scenarios_test

import (
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
