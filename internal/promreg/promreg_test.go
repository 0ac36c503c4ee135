package promreg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newCounter(help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "promreg_test_total", Help: help}, []string{"kind"})
}

// A second registration of the same series returns the first collector, so both owners count
// on the one series the registry exports.
func TestRegisterReusesTheFirstCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := Register(reg, newCounter("h"))
	second := Register(reg, newCounter("h"))
	if first != second {
		t.Fatal("the second registration got its own collector")
	}
	first.WithLabelValues("a").Inc()
	second.WithLabelValues("a").Inc()
	if got := testutil.ToFloat64(first.WithLabelValues("a")); got != 2 {
		t.Fatalf("the shared series counts %v, want 2", got)
	}
	if n, err := testutil.GatherAndCount(reg, "promreg_test_total"); err != nil || n != 1 {
		t.Fatalf("registry exports %d series (%v), want 1", n, err)
	}
}

func TestRegisterWithoutRegistryKeepsTheCollector(t *testing.T) {
	c := newCounter("h")
	if got := Register(nil, c); got != c {
		t.Fatal("a nil registry did not hand the collector back")
	}
}

// The same name with another help string is a programming error, not a series to reuse.
func TestRegisterPanicsOnAConflictingSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	Register(reg, newCounter("h"))
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "promreg_test_total") {
			t.Fatalf("recovered %v, want a panic naming the series", r)
		}
	}()
	Register(reg, newCounter("other help"))
}

type setKey struct{}

type otherKey struct{}

// On a shared registry a metric set is built once and every caller gets that one, until the
// registry is forgotten; on any other registry each caller builds its own.
func TestOnceBuildsOncePerSharedRegistry(t *testing.T) {
	builds := 0
	build := func(reg prometheus.Registerer) func() *prometheus.CounterVec {
		return func() *prometheus.CounterVec { builds++; return Register(reg, newCounter("h")) }
	}
	reg := prometheus.NewRegistry()
	Share(reg)
	first := Once(reg, setKey{}, build(reg))
	second := Once(reg, setKey{}, build(reg))
	if builds != 1 || first != second {
		t.Fatalf("shared registry: %d builds, same set %v; want 1 build and one set", builds, first == second)
	}
	Once(reg, otherKey{}, func() int { builds++; return 1 })
	if builds != 2 {
		t.Fatalf("another key got the first key's set (%d builds, want 2)", builds)
	}
	Forget(reg)
	Once(reg, setKey{}, build(reg))
	if builds != 3 {
		t.Fatalf("a forgotten registry still kept its set (%d builds, want 3)", builds)
	}
	if _, kept := shared.sets[reg]; kept {
		t.Fatal("Forget left the registry in the table")
	}

	unshared := prometheus.NewRegistry()
	Once(unshared, setKey{}, build(unshared))
	Once(unshared, setKey{}, build(unshared))
	Once(nil, setKey{}, build(nil))
	if builds != 6 {
		t.Fatalf("unshared and nil registries: %d builds, want 6 (one per call)", builds)
	}
}

// A key asked for with another type than it was built as is a programming error.
func TestOnceRefusesAKeyOfAnotherType(t *testing.T) {
	reg := prometheus.NewRegistry()
	Share(reg)
	defer Forget(reg)
	Once(reg, setKey{}, func() int { return 1 })
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "promreg.setKey") {
			t.Fatalf("recovered %v, want a panic naming the key", r)
		}
	}()
	Once(reg, setKey{}, func() string { return "x" })
}
