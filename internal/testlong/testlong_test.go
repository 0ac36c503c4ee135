package testlong

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "pgregory.net/rapid" // its -rapid.checks flag, which RapidChecks sets
)

// TestFindNamesTheCallingTest: a call inside a subtest counts for its top-level test, under
// any import name; a call from a helper is refused (make test-long runs tests by name).
func TestFindNamesTheCallingTest(t *testing.T) {
	got, err := Find("testdata/tree")
	if err == nil || !strings.Contains(err.Error(), "b/b_test.go:9: testlong.Skip in helper, not in a top-level Test function") {
		t.Fatalf("Find: err %v, want the helper's call refused", err)
	}
	want := []Long{
		{Dir: "a", Test: "TestDraws", Call: "Count", Pos: "a/a_test.go:15"},
		{Dir: "a", Test: "TestLong", Call: "Skip", Smoke: "TestSmoke", Pos: "a/a_test.go:12"},
	}
	if len(got) != len(want) {
		t.Fatalf("Find: %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Find[%d]: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestEveryLongTestNamesASmoke: over the repository, every testlong.Skip names a test (of its own
// package, or dir.TestX of another) that exists and is not long itself, so make test keeps a
// smoke of what it moved out.
func TestEveryLongTestNamesASmoke(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	longs, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	skipped := map[string]bool{}
	for _, l := range longs {
		if l.Call == "Skip" {
			skipped[l.Dir+"."+l.Test] = true
		}
	}
	for _, l := range longs {
		if l.Call != "Skip" {
			continue
		}
		dir, name := l.Dir, l.Smoke
		if i := strings.LastIndex(name, "."); i >= 0 {
			dir, name = name[:i], name[i+1:]
		}
		if skipped[dir+"."+name] {
			t.Errorf("%s: %s's smoke %s is long itself", l.Pos, l.Test, l.Smoke)
			continue
		}
		if !declaresTest(t, filepath.Join(root, filepath.FromSlash(dir)), name) {
			t.Errorf("%s: %s's smoke %s is not a test of %s", l.Pos, l.Test, name, dir)
		}
	}
}

func declaresTest(t *testing.T, dir, name string) bool {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(name) + `\(t \*testing\.T\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if re.Match(b) {
			return true
		}
	}
	return false
}

func TestSkipAndCountFollowTheSwitch(t *testing.T) {
	t.Setenv(Env, "")
	if Enabled() || Count(3, 30) != 3 {
		t.Fatalf("%s unset: Enabled %v, Count %d; want false, 3", Env, Enabled(), Count(3, 30))
	}
	t.Run("skips", func(t *testing.T) {
		Skip(t, "TestX")
		t.Fatal("Skip did not skip with the switch off")
	})
	t.Setenv(Env, "1")
	if !Enabled() || Count(3, 30) != 30 {
		t.Fatalf("%s=1: Enabled %v, Count %d; want true, 30", Env, Enabled(), Count(3, 30))
	}
	ran := false
	t.Run("runs", func(t *testing.T) {
		Skip(t, "TestX")
		ran = true
	})
	if !ran {
		t.Fatal("Skip skipped with the switch on")
	}
}

func TestSampleSpansTheTableInMakeTest(t *testing.T) {
	t.Setenv(Env, "")
	var got []int
	for i := range 7 {
		if Sample(i, 3) {
			got = append(got, i)
		}
	}
	if fmt.Sprint(got) != "[0 3 6]" {
		t.Fatalf("Sample(i, 3) in make test ran %v, want [0 3 6]", got)
	}
	t.Setenv(Env, "1")
	for i := range 7 {
		if !Sample(i, 3) {
			t.Fatalf("Sample(%d, 3) under test-long: false", i)
		}
	}
}

func TestRapidChecksFollowsTheSwitch(t *testing.T) {
	f := flag.Lookup("rapid.checks")
	for _, c := range []struct {
		env  string
		want string
	}{{"", "7"}, {"1", "70"}} {
		t.Setenv(Env, c.env)
		t.Run("env="+c.env, func(t *testing.T) {
			RapidChecks(t, 7, 70)
			if got := f.Value.String(); got != c.want {
				t.Fatalf("%s=%q: rapid.checks %s, want %s", Env, c.env, got, c.want)
			}
		})
		if got := f.Value.String(); got != f.DefValue {
			t.Fatalf("after the test: rapid.checks %s, want it restored to %s", got, f.DefValue)
		}
	}
}

// childChecks is set in the re-run test binary of TestRapidChecksLeavesAGivenFlag: the
// -rapid.checks its command line gave.
const childChecks = "QUERYFLUX_TESTLONG_GIVEN_CHECKS"

// TestRapidChecksLeavesAGivenFlag re-runs this test binary with -rapid.checks on its command
// line, its default value (100) among them: RapidChecks leaves what was given, in make test and
// in make test-long.
func TestRapidChecksLeavesAGivenFlag(t *testing.T) {
	if want := os.Getenv(childChecks); want != "" {
		RapidChecks(t, 7, 70)
		if got := flag.Lookup("rapid.checks").Value.String(); got != want {
			t.Fatalf("-rapid.checks=%s given, %s=%q: rapid.checks %s", want, Env, os.Getenv(Env), got)
		}
		return
	}
	for _, given := range []string{"3", "100"} {
		for _, env := range []string{"", "1"} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestRapidChecksLeavesAGivenFlag$", "-rapid.checks="+given)
			cmd.Env = append(os.Environ(), childChecks+"="+given, Env+"="+env)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("-rapid.checks=%s %s=%q: %v\n%s", given, Env, env, err, out)
			}
		}
	}
}
