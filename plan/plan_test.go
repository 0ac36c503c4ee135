package plan

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/scenarios"
)

func TestParseSweep(t *testing.T) {
	for in, want := range map[string][]int{
		"workers=10..50:20": {10, 30, 50},
		"workers=10..45:20": {10, 30, 45},
		"cap=1..3":          {1, 2, 3},
		"cap.c1=8,2,4":      {2, 4, 8},
	} {
		a, err := ParseSweep(in)
		if err != nil || !reflect.DeepEqual(a.Values, want) {
			t.Errorf("%s: %v %v, want %v", in, a.Values, err, want)
		}
	}
	for _, bad := range []string{"workers", "nodes=1..2", "cap=0..3", "cap=5..2", "cap=1..4:0", "cap=a,b"} {
		if _, err := ParseSweep(bad); err == nil || !strings.Contains(err.Error(), "--sweep") {
			t.Errorf("%s: want an error naming --sweep, got %v", bad, err)
		}
	}
}

func TestJainAndPercentile(t *testing.T) {
	if j := scenarios.JainIndex([]float64{1, 1, 1, 1}); j != 1 {
		t.Errorf("equal shares: %v", j)
	}
	if j := scenarios.JainIndex([]float64{1, 0, 0, 0}); math.Abs(j-0.25) > 1e-9 {
		t.Errorf("one takes all of 4: %v, want 0.25", j)
	}
	xs := []int64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	if p := scenarios.Percentile(xs, 0.5); p != 5 {
		t.Errorf("p50 %v", p)
	}
	if p := scenarios.Percentile(xs, 0.99); p != 10 {
		t.Errorf("p99 %v", p)
	}
}

func TestKnees(t *testing.T) {
	pt := func(k string, v int, ok bool) Point { return Point{Params: map[string]int{k: v}, MeetsObjective: ok} }
	pl := &Plan{Axes: []Axis{{Name: "cap", Values: []int{1, 2, 3, 4}}},
		Points: []Point{pt("cap", 1, false), pt("cap", 2, true), pt("cap", 3, false), pt("cap", 4, true)}}
	if k := knees(pl); k[0].Value != 4 {
		t.Errorf("cap knee %+v: the smallest cap from which all larger meet it is 4", k)
	}
	pl = &Plan{Axes: []Axis{{Name: "workers", Values: []int{10, 20, 30}}},
		Points: []Point{pt("workers", 10, true), pt("workers", 20, true), pt("workers", 30, false)}}
	if k := knees(pl); k[0].Value != 20 {
		t.Errorf("workers knee %+v, want 20", k)
	}
}

// TestPlanSweepsCaps runs a real sweep: more cap admits more and queues less, the knee meets
// the objective, and the page and plot are written.
func TestPlanSweepsCaps(t *testing.T) {
	sc, err := scenarios.Parse("tiny.yaml", []byte(`
duration: 20s
intervals: {heartbeat: 1s, staleAfter: 3s, evictGrace: 5s, requestTimeout: 1s}
fleet:
  controlPlanes: [{name: cp-1}]
  workers: [{prefix: w-, count: 4}]
workload:
  warmup: 2s
  clusters: [{name: c1, cap: 1, duration: {dist: exponential, mean: 200ms, max: 2s}}]
  groups: [{name: main, members: [c1], maxQueued: 50, waitTimeout: 5s}]
  arrivals: [{group: main, rate: 3, skew: 1}]
  objective: {queueP99: 500ms}
  controlPlane: {pool: 2, default: 1ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	axis, _ := ParseSweep("cap=1,8")
	pl, err := Run(sc, []Axis{axis}, Options{Seeds: 2, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := pl.Points[0], pl.Points[1]
	t.Logf("cap 1: %+v\ncap 8: %+v", lo, hi)
	if !(hi.AdmittedPerSec > lo.AdmittedPerSec && hi.QueueP99Ms < lo.QueueP99Ms && hi.DeniedPerSec < lo.DeniedPerSec) {
		t.Fatalf("cap 8 should admit more and queue less than cap 1")
	}
	if lo.Violations+hi.Violations != 0 || hi.CPRequestsPerSec <= 0 || hi.Fairness <= 0 {
		t.Fatalf("violations or missing rates: %+v %+v", lo, hi)
	}
	if len(pl.Knees) != 1 || pl.Knees[0].Value != 8 {
		t.Fatalf("knees %+v", pl.Knees)
	}
	dir := t.TempDir()
	if err := pl.Write(dir); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "plan.svg"))
	page, _ := os.ReadFile(filepath.Join(dir, "plan.html"))
	if !strings.Contains(string(svg), "<polyline") || !strings.Contains(string(page), `src="plan.svg"`) || !strings.Contains(string(page), "knee: cap = 8") {
		t.Fatalf("plot or page incomplete:\n%s", page)
	}
	if !strings.Contains(string(svg), "knee: cap=8") || !strings.Contains(string(svg), "<polygon") || !strings.Contains(string(svg), "cap (running queries per cluster)") {
		t.Fatalf("the plot lacks the knee, the seeds' band or the axis unit:\n%s", svg)
	}
	for _, p := range pl.Points {
		if r := p.Spread["queue_p99_ms"]; !(r[0] <= p.QueueP99Ms && p.QueueP99Ms <= r[1]) {
			t.Fatalf("cap %d: p99 mean %v outside its seeds' range %v", p.Params["cap"], p.QueueP99Ms, r)
		}
	}
}

// TestCensoredP99AndRoundAxes: a p99 at the wait timeout (queries gave up) is marked censored
// and drawn as such; ticks are round; Jain's index keeps its [0, 1] axis.
func TestCensoredP99AndRoundAxes(t *testing.T) {
	sc := &scenarios.Scenario{Duration: 10e9, Workload: &scenarios.Workload{Groups: []scenarios.WorkloadGroup{{Name: "g", WaitTimeout: 5e9}}}}
	res := func(p99 float64, timedOut int) *scenarios.Result {
		return &scenarios.Result{Workload: &scenarios.WorkloadSummary{QueueP99Ms: p99, TimedOut: timedOut, Fairness: 0.5}}
	}
	p := summarize(map[string]int{"cap": 3}, sc, []*scenarios.Result{res(1200, 0), res(5003, 4), res(2100, 0)})
	if !p.QueueP99Censored || p.Spread["queue_p99_ms"] != [2]float64{1200, 5003} {
		t.Fatalf("point %+v: want censored, p99 range [1200, 5003]", p)
	}
	if q := summarize(map[string]int{"cap": 3}, sc, []*scenarios.Result{res(1200, 0)}); q.QueueP99Censored {
		t.Fatal("a p99 under the timeout counted as censored")
	}
	for _, c := range [][2]float64{{0, 5003}, {1, 6}, {250, 1000}, {0, 0.93}, {100, 1000}, {0, 37.2}} {
		step, from, to := niceTicks(c[0], c[1])
		mant := step / math.Pow(10, math.Floor(math.Log10(step)))
		n := math.Round((to - from) / step)
		if !slices.Contains([]float64{1, 2, 2.5, 5}, math.Round(mant*10)/10) || from > c[0] || to < c[1] || n < 3 || n > 8 {
			t.Errorf("ticks for %v: step %v from %v to %v: want a round step, 3 to 8 ticks covering the range", c, step, from, to)
		}
	}
	pl := &Plan{Axes: []Axis{{Name: "cap", Values: []int{3}}}, Points: []Point{p}}
	svg := pl.SVG()
	if !strings.Contains(svg, "p99 at the wait timeout") || !strings.Contains(svg, `l5,9 l-10,0 z" fill="white"`) {
		t.Fatal("the censored p99 is not drawn as censored")
	}
	if !strings.Contains(svg, `>1</text>`) || strings.Contains(svg, `>1.2</text>`) {
		t.Fatal("the fairness axis does not stop at 1")
	}
}

func TestCalibrationFileLoads(t *testing.T) {
	c, err := scenarios.LoadCalibration("calibration.yaml")
	if err != nil || c.Pool != 10 || c.ServiceTimes["/worker/capacity/acquire"] <= 0 {
		t.Fatalf("%+v %v", c, err)
	}
	if b := BuiltinCalibration(); b.Pool != c.Pool || b.ServiceTimes["/worker/capacity/acquire"] != c.ServiceTimes["/worker/capacity/acquire"] {
		t.Fatalf("built-in calibration %+v differs from the file's %+v", b, c)
	}
}
