package querytest

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// A serving daemon gives the garbage collector its headroom floor (serveGCFloor, 32 MB): with a
// live heap of a few MB its GOGC is above 100, so a cycle waits for 32 MB of allocation, not
// for as much as the live heap. GOGC=100 here would be the collector marking every MB or so
// (16 % of a Trino SELECT 1's instructions: RESULTS.md, session 33, trino).
func TestServingDaemonHasItsGCFloor(t *testing.T) {
	admin := daemontest.FreeAddrs(t, 1)[0]
	cfg := daemontest.WriteFile(t, "standalone.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
`, admin, adminToken))
	startDaemon(t, nil, []string{admin}, "--config", cfg)
	metrics := daemontest.Get(t, "http://"+admin+"/metrics", adminToken)
	gauge := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(metrics)
		if m == nil {
			t.Fatalf("no %s in /metrics", name)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	live, gogc := gauge("go_memstats_heap_alloc_bytes"), gauge("go_gc_gogc_percent")
	if live > 16<<20 {
		t.Skipf("a heap of %.0f bytes at boot: the floor may rightly leave GOGC alone", live)
	}
	if gogc <= 100 {
		t.Fatalf("GOGC %v with a heap of %.0f bytes: no headroom floor", gogc, live)
	}
}
