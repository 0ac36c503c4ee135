package promreg

import (
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
