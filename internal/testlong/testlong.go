// Package testlong is the project's one switch for long tests. `make test` runs every package's
// tests with a smoke of every capability; a test (or the long part of one) that takes long calls
// Skip, naming the test that keeps its capability covered in `make test`, and runs only under
// `make test-long` (QUERYFLUX_TEST_LONG=1). Count, Sample and RapidChecks give a test a small
// seed count, every nth case of its table, or few rapid draws in `make test` and all of them in
// `make test-long`. Find lists the long tests (make test-long's -run).
//
// determinism: outside the simulator (test-only: reads the environment and the source tree)
package testlong

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// Env turns the long tests on when it is "1" (make test-long sets it).
const Env = "QUERYFLUX_TEST_LONG"

// Enabled reports whether the long tests run.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Skip skips t unless the long tests run. smoke is the test that covers the same capability in
// `make test`: a test of the same package ("TestX") or of another, by its directory from the
// repository's root ("fleettest.TestX"). internal/testlong's own test checks that it exists and
// is not long itself, so that no capability loses all its coverage in make test.
func Skip(t testing.TB, smoke string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("long test: runs in make test-long (%s=1); %s covers it in make test", Env, smoke)
	}
}

// Count is short in `make test` and long under `make test-long`: the number of seeds, rapid
// draws or rounds a test runs.
func Count(short, long int) int {
	if Enabled() {
		return long
	}
	return short
}

// Sample reports whether case i of a table runs: every case under `make test-long`, every nth
// (the first, the n+1st, ...) in `make test`, so the short run still spans the table.
func Sample(i, n int) bool {
	return Enabled() || n <= 1 || i%n == 0
}

// RapidChecks makes the rapid.Check calls of t draw short cases in `make test` and long under
// `make test-long`, unless the command line gave -rapid.checks. Not for parallel tests: rapid
// reads one flag for the process.
func RapidChecks(t testing.TB, short, long int) {
	t.Helper()
	f := flag.Lookup("rapid.checks")
	if f == nil {
		t.Fatal("testlong.RapidChecks: no -rapid.checks flag (the test does not import rapid)")
	}
	given := false
	flag.Visit(func(g *flag.Flag) { given = given || g == f })
	if given {
		return // given on the command line, its default value (-rapid.checks=100) too
	}
	old := f.Value.String()
	if err := f.Value.Set(strconv.Itoa(Count(short, long))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}
