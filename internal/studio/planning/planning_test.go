package planning

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func call(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}

// TestPlanningJobs: the built-in scenarios with a workload are offered; a sweep that is too big,
// malformed, or an upload replaying a server file is refused with what was wrong; a small sweep
// runs as the one job, a second is refused while it runs, and the finished job has its plot
// and knee.
func TestPlanningJobs(t *testing.T) {
	h := New(time.Now)
	code, body := call(t, h, "GET", PathScenarios, "")
	var list []PlanScenario
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("scenarios: %d %s", code, body)
	}
	names := map[string]bool{}
	for _, sc := range list {
		names[sc.Name] = true
	}
	if !names["plan-leases"] || names["pingpong"] || names["history-replay"] {
		t.Fatalf("offered: %v, want plan-leases and no scenario without a workload", names)
	}
	for _, bad := range []struct{ body, want string }{
		{`{"scenario":"plan-fleet","sweep":["cap=1,2"]}`, "too big"},
		{`{"scenario":"plan-leases","sweep":["cap=1..30"],"seeds":3}`, "too big"},
		{`{"scenario":"plan-leases","sweep":["nodes=1..3"]}`, "NAME is workers, cap or cap.CLUSTER"},
		{`{"scenario":"plan-leases","sweep":["cap=1,2"],"seeds":9}`, "seeds 9"},
		{`{"scenario":"nope","sweep":["cap=1"]}`, `no built-in scenario \"nope\"`},
		{`{"yaml":"duration: 5s\nworkload: {replay: /etc/passwd}\n","sweep":["cap=1"]}`, "cannot replay a file"},
		{`{"yaml":"duration: 5s\n","sweep":["cap=1"]}`, "no workload"},
		{`{"sweep":["cap=1"]}`, "built-in scenario or upload one"},
	} {
		if code, body := call(t, h, "POST", PathJobs, bad.body); code != 400 || !strings.Contains(body, bad.want) {
			t.Errorf("POST %s: %d %s, want 400 naming %q", bad.body, code, body, bad.want)
		}
	}

	code, body = call(t, h, "POST", PathJobs, `{"scenario":"plan-leases","sweep":["cap=1,6"]}`)
	var job PlanJob
	if code != 202 || json.Unmarshal([]byte(body), &job) != nil || job.State != "running" || job.Total != 2 {
		t.Fatalf("start: %d %s", code, body)
	}
	if code, body := call(t, h, "POST", PathJobs, `{"scenario":"plan-leases","sweep":["cap=2"]}`); code != 409 || !strings.Contains(body, "one at a time") {
		t.Fatalf("a second job while one runs: %d %s, want 409", code, body)
	}
	deadline := time.Now().Add(5 * time.Minute) // a safety net on a loaded machine, not a measure
	for job.State == "running" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		_, body = call(t, h, "GET", PathJobs+"/"+job.ID, "")
		if err := json.Unmarshal([]byte(body), &job); err != nil {
			t.Fatal(body)
		}
	}
	if job.State != "done" || job.Done != 2 || job.Plan == nil || len(job.Plan.Points) != 2 || len(job.Plan.Knees) != 1 || !strings.Contains(job.Table, "knee") {
		t.Fatalf("finished job: %s", body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", PathJobs+"/"+job.ID+"/plot.svg", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(rec.Body.String(), "<svg") {
		t.Fatalf("plot: %d %q %.80s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	if code, _ := call(t, h, "GET", PathJobs+"/other", ""); code != 404 {
		t.Fatalf("an unknown job: %d, want 404", code)
	}
}
