package determinism_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// wants reads the `// want "what"` comments of the fixture files in dir: line -> what.
func wants(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	asm, _ := filepath.Glob(filepath.Join(dir, "*.s"))
	files = append(files, asm...)
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s: %v", dir, err)
	}
	re := regexp.MustCompile(`// want "([^"]+)"`)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := re.FindStringSubmatch(line); m != nil {
				out[fmt.Sprintf("%s:%d", filepath.Base(f), i+1)] = m[1]
			}
		}
	}
	return out
}

// TestScannerFindsEveryForbiddenUse: every line of testdata/bad marked `// want "..."` is
// flagged with a finding naming that, nothing else there is, and testdata/good is clean.
func TestScannerFindsEveryForbiddenUse(t *testing.T) {
	rep, err := determinism.Scan(".", fixtureRule, "./testdata/bad", "./testdata/good", "./testdata/optout")
	if err != nil {
		t.Fatal(err)
	}
	want := wants(t, filepath.Join("testdata", "bad"))
	got := map[string]string{}
	for _, f := range rep.Findings {
		if filepath.Base(filepath.Dir(f.Pos.Filename)) != "bad" {
			t.Errorf("finding outside the bad fixture: %s", f)
			continue
		}
		got[fmt.Sprintf("%s:%d", filepath.Base(f.Pos.Filename), f.Pos.Line)] += f.What + ";"
	}
	for at, what := range want {
		if !strings.Contains(got[at], what) {
			t.Errorf("%s: want a finding about %s, got %q", at, what, got[at])
		}
	}
	for at, what := range got {
		if _, ok := want[at]; !ok {
			t.Errorf("unexpected finding %s: %s", at, what)
		}
	}
	if len(want) < 30 {
		t.Errorf("only %d marked lines in the bad fixture: the want comments were not read", len(want))
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
