package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// declaredMetrics reads every metric the daemon registers, with its label names, from the
// source (Name: "queryflux_..." in a prometheus *Opts literal, then its []string of labels).
func declaredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	decl := regexp.MustCompile(`Name:\s*"(queryflux_[a-z_]+)"[^{}]*\}(?:\s*,\s*\[\]string\{([^}]*)\})?`)
	out := map[string][]string{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			var labels []string
			for _, l := range strings.Split(m[2], ",") {
				if l = strings.Trim(strings.TrimSpace(l), `"`); l != "" {
					labels = append(labels, l)
				}
			}
			out[m[1]] = labels
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found only %d metrics in the source: the scan is broken", len(out))
	}
	return out
}

var (
	metricRef  = regexp.MustCompile(`\b(queryflux_[a-z_]+)(\{[^}]*\})?`)
	matcherKey = regexp.MustCompile(`([a-zA-Z_]+)\s*(?:=~|!=|!~|=)`)
	byClause   = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)
)

// checkExpr fails for a metric the daemon does not register, and for a label that none of the
// expression's metrics has (le, instance and job come from Prometheus itself).
func checkExpr(t *testing.T, where, expr string, declared map[string][]string) {
	t.Helper()
	refs := metricRef.FindAllStringSubmatch(expr, -1)
	if len(refs) == 0 {
		t.Errorf("%s: no queryflux metric in %q", where, expr)
	}
	var all []string
	for _, r := range refs {
		name := r[1]
		if _, ok := declared[name]; !ok {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, cut := strings.CutSuffix(name, suffix); cut {
					if _, ok := declared[base]; ok {
						name = base
					}
				}
			}
		}
		labels, ok := declared[name]
		if !ok {
			t.Errorf("%s: metric %s is not registered by the daemon", where, r[1])
			continue
		}
		all = append(all, labels...)
		for _, k := range matcherKey.FindAllStringSubmatch(r[2], -1) {
			if !slices.Contains(labels, k[1]) {
				t.Errorf("%s: %s has no label %q (it has %v)", where, name, k[1], labels)
			}
		}
	}
	for _, by := range byClause.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(by[1], ",") {
			l = strings.TrimSpace(l)
			if l != "" && l != "le" && l != "instance" && l != "job" && !slices.Contains(all, l) {
				t.Errorf("%s: grouping by %q, which none of its metrics has", where, l)
			}
		}
	}
}

func TestAlertRulesUseRealMetrics(t *testing.T) {
	declared := declaredMetrics(t)
	b, err := os.ReadFile("observability/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for,omitempty"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &rules); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			checkExpr(t, r.Alert, r.Expr, declared)
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["runbook"] == "" {
				t.Errorf("%s: needs a severity, a summary and a runbook", r.Alert)
			}
		}
	}
	if n < 8 {
		t.Fatalf("only %d alert rules", n)
	}
}

func TestDashboardUsesRealMetrics(t *testing.T) {
	declared := declaredMetrics(t)
	b, err := os.ReadFile("observability/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	if len(dash.Panels) < 8 {
		t.Fatalf("only %d panels", len(dash.Panels))
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			checkExpr(t, p.Title, tg.Expr, declared)
		}
	}
}

// The check itself must catch a wrong label (an alert on a label the metric lacks fires never).
func TestCheckExprCatchesAWrongLabel(t *testing.T) {
	ft := &testing.T{}
	checkExpr(ft, "probe", `increase(queryflux_controlplane_worker_transitions_total{to="evicted"}[5m])`,
		map[string][]string{"queryflux_controlplane_worker_transitions_total": {"state"}})
	if !ft.Failed() {
		t.Fatal("a label the metric does not have was accepted")
	}
}

// promtool (Debian's prometheus package, installed by make test-deps) parses and checks the rules.
func TestPromtoolChecksRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (make test-deps installs Debian's prometheus package)")
	}
	out, err := exec.Command(promtool, "check", "rules", "observability/alerts.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
