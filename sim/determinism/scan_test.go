package determinism_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/sim/determinism"
)

// repoRoot walks up to the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// TestRoleCodeIsDeterministic is the contract's enforcement over node/... and internal/....
func TestRoleCodeIsDeterministic(t *testing.T) {
	rep, err := determinism.Scan(repoRoot(t), determinism.RepoRule, "./node/...", "./internal/...")
	if err != nil && rep == nil {
		t.Fatal(err)
	}
	for _, n := range rep.Notes {
		t.Log("note:", n)
	}
	t.Logf("scanned %d packages: %s", len(rep.Scanned), strings.Join(rep.Scanned, " "))
	for _, f := range rep.Findings {
		t.Errorf("%s", f)
	}
}

func fixtureRule(module, p string) (bool, bool) {
	return strings.Contains(p, "/testdata/"), !strings.HasSuffix(p, "/bad")
}

func TestScannerFindsEveryForbiddenUse(t *testing.T) {
	rep, err := determinism.Scan(".", fixtureRule, "./testdata/bad", "./testdata/good", "./testdata/optout")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		14: "time.Now", 15: "time.Sleep", 16: "context.WithTimeout", 18: "go statement",
		19: "select statement", 22: "channel receive", 23: "math/rand/v2.IntN", 24: "crypto/rand.Read",
		25: "range over a map", 28: "range over a channel", 42: "range over a map",
	}
	got := map[int]string{}
	for _, f := range rep.Findings {
		if !strings.HasSuffix(f.Pos.Filename, filepath.Join("bad", "bad.go")) {
			t.Errorf("finding outside the bad fixture: %s", f)
			continue
		}
		got[f.Pos.Line] += f.What + ";"
	}
	for line, what := range want {
		if !strings.Contains(got[line], what) {
			t.Errorf("bad.go:%d: want a finding about %s, got %q", line, what, got[line])
		}
	}
	for line, what := range got {
		if _, ok := want[line]; !ok {
			t.Errorf("unexpected finding bad.go:%d: %s", line, what)
		}
	}
	if len(rep.Notes) > 0 {
		t.Errorf("fixtures should type-check cleanly: %v", rep.Notes)
	}
}

func TestNodePackagesMayNotOptOut(t *testing.T) {
	rule := func(module, p string) (bool, bool) { return strings.HasSuffix(p, "/optout"), false }
	rep, err := determinism.Scan(".", rule, "./testdata/optout")
	if err != nil {
		t.Fatal(err)
	}
	var opt, now bool
	for _, f := range rep.Findings {
		opt = opt || strings.Contains(f.What, "may not opt out")
		now = now || strings.Contains(f.What, "time.Now")
	}
	if !opt || !now {
		t.Fatalf("findings %v: want the opt-out refused and time.Now reported", rep.Findings)
	}
}
