// Command list prints what make test-long runs, from the repository's root: `list packages` the
// packages that hold long tests (./dir, space-separated), `list run` a -run pattern naming every
// long test (a test that calls testlong.Skip or testlong.Count), `list` both with each test's smoke.
//
// determinism: outside the simulator (a test tool: reads the source tree)
package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/queryflux/queryflux/internal/testlong"
)

func main() {
	longs, err := testlong.Find(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlong:", err)
		os.Exit(1)
	}
	if len(longs) == 0 {
		fmt.Fprintln(os.Stderr, "testlong: no long tests found (run from the repository's root)")
		os.Exit(1)
	}
	what := ""
	if len(os.Args) > 1 {
		what = os.Args[1]
	}
	var dirs, names []string
	seenDir, seenName := map[string]bool{}, map[string]bool{}
	for _, l := range longs {
		if !seenDir[l.Dir] {
			seenDir[l.Dir] = true
			dirs = append(dirs, "./"+l.Dir)
		}
		if !seenName[l.Test] {
			seenName[l.Test] = true
			names = append(names, regexp.QuoteMeta(l.Test))
		}
	}
	switch what {
	case "packages":
		fmt.Println(strings.Join(dirs, " "))
	case "run":
		fmt.Printf("^(%s)$\n", strings.Join(names, "|"))
	case "":
		for _, l := range longs {
			smoke := ""
			if l.Smoke != "" {
				smoke = " (make test: " + l.Smoke + ")"
			}
			fmt.Printf("%s %s %s%s\n", l.Pos, l.Test, l.Call, smoke)
		}
	default:
		fmt.Fprintf(os.Stderr, "testlong list: unknown argument %q (want packages, run or nothing)\n", what)
		os.Exit(2)
	}
}
