// Package planning is Studio's Planning page's server side: a small `qfsim plan` sweep (package
// plan) of a built-in or uploaded scenario, run on the node one job at a time, its progress
// polled and its plot (plan.Plan.SVG) and knee shown.
//
// determinism: outside the simulator (runs simulations in a goroutine of its own, for a browser)
package planning

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/plan"
	"github.com/queryflux/queryflux/scenarios"
)

// Paths, under wherever the handler is mounted (Studio: /studio/api/plan).
const (
	PathScenarios = "/scenarios" // GET: the built-in scenarios that can be planned
	PathJobs      = "/jobs"      // POST PlanRequest: start a job; GET: the last one; GET /jobs/{id}, /jobs/{id}/plot.svg
)

const (
	planUploadMax = 64 << 10
	planRunsMax   = 12 // sweep points × seeds
	planSeedsMax  = 3
	// planWorkSecondsMax bounds a job's simulated work: workers × virtual seconds, summed over its
	// runs (plan-leases.yaml swept over two caps with one seed is 720).
	planWorkSecondsMax = 4000
)

// PlanRequest starts a job: a built-in scenario by name, or an uploaded one (YAML), swept over
// one or two axes in qfsim plan's --sweep syntax.
type PlanRequest struct {
	Scenario string   `json:"scenario,omitempty"`
	YAML     string   `json:"yaml,omitempty"`
	Sweep    []string `json:"sweep"`
	Seeds    int      `json:"seeds,omitempty"` // default 1
}

// PlanJob is a job as the page polls it.
type PlanJob struct {
	ID       string     `json:"id"`
	Scenario string     `json:"scenario"`
	State    string     `json:"state"` // running, done or failed
	Done     int        `json:"done"`  // runs finished
	Total    int        `json:"total"`
	Started  time.Time  `json:"started"`
	Ended    time.Time  `json:"ended,omitzero"`
	Error    string     `json:"error,omitempty"`
	Plan     *plan.Plan `json:"plan,omitempty"`
	Table    string     `json:"table,omitempty"` // qfsim plan's text table
}

// PlanScenario is a built-in scenario the page offers.
type PlanScenario struct {
	Name      string   `json:"name"`
	About     string   `json:"about"` // the file's opening comment
	Workers   int      `json:"workers"`
	Duration  string   `json:"duration"`
	Clusters  []string `json:"clusters"`
	Objective string   `json:"objective,omitempty"`
}

// New returns the planning handler; now is the clock of the jobs' start and end times.
func New(now func() time.Time) http.Handler { return &planner{now: now} }

// planner holds the one job (running or the last finished).
type planner struct {
	now    func() time.Time
	mu     sync.Mutex
	job    *PlanJob
	svg    string
	once   sync.Once
	list   []PlanScenario
	byName map[string][]byte
}

func (p *planner) builtins() ([]PlanScenario, map[string][]byte) {
	p.once.Do(func() {
		p.byName = map[string][]byte{}
		names, _ := fs.Glob(scenarios.Files, "*.yaml")
		for _, file := range names {
			data, err := fs.ReadFile(scenarios.Files, file)
			if err != nil {
				continue
			}
			sc, err := scenarios.Parse(file, data)
			if err != nil || sc.Workload == nil || sc.Workload.Replay != "" {
				continue
			}
			ps := PlanScenario{Name: sc.Name, About: openingComment(data), Workers: workersOf(sc), Duration: sc.Duration.String()}
			for _, c := range sc.Workload.Clusters {
				ps.Clusters = append(ps.Clusters, c.Name)
			}
			if o := sc.Workload.Objective; o.QueueP99 > 0 {
				ps.Objective = "queue p99 ≤ " + o.QueueP99.String()
			}
			p.list = append(p.list, ps)
			p.byName[sc.Name] = data
		}
	})
	return p.list, p.byName
}

// openingComment is a scenario file's first comment block, as one paragraph.
func openingComment(data []byte) string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		text, ok := strings.CutPrefix(strings.TrimSpace(line), "#")
		if !ok {
			break
		}
		out = append(out, strings.TrimSpace(text))
	}
	return strings.Join(out, " ")
}

func workersOf(sc *scenarios.Scenario) int {
	if sc.Workload != nil && sc.Workload.Workers > 0 {
		return sc.Workload.Workers
	}
	return sc.Workers()
}

func (p *planner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == PathScenarios && r.Method == http.MethodGet:
		list, _ := p.builtins()
		workerapi.WriteJSON(w, http.StatusOK, "application/json", list)
	case path == PathJobs && r.Method == http.MethodPost:
		p.start(w, r)
	case path == PathJobs && r.Method == http.MethodGet: // the last job, or null
		p.mu.Lock()
		var job *PlanJob
		if p.job != nil {
			j := *p.job
			job = &j
		}
		p.mu.Unlock()
		workerapi.WriteJSON(w, http.StatusOK, "application/json", job)
	case strings.HasPrefix(path, PathJobs+"/") && r.Method == http.MethodGet:
		id, plot := strings.CutSuffix(strings.TrimPrefix(path, PathJobs+"/"), "/plot.svg")
		p.show(w, id, plot)
	default:
		workerapi.WriteError(w, http.StatusNotFound, r.Method+" "+path+": no such planning endpoint", "")
	}
}

// start checks the request and starts its job, unless one runs.
func (p *planner) start(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, planUploadMax+4<<10))
	var req PlanRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		workerapi.WriteError(w, http.StatusBadRequest, "plan request: want JSON {scenario or yaml, sweep: [...], seeds}", "")
		return
	}
	sc, axes, seeds, field, err := p.check(req)
	if err != nil {
		workerapi.WriteError(w, http.StatusBadRequest, err.Error(), field)
		return
	}
	runs := seeds
	for _, a := range axes {
		runs *= len(a.Values)
	}
	job := &PlanJob{ID: rand.Text()[:16], Scenario: sc.Name, State: "running", Total: runs, Started: p.now()}
	p.mu.Lock()
	if p.job != nil && p.job.State == "running" {
		running := p.job.Scenario
		p.mu.Unlock()
		workerapi.WriteError(w, http.StatusConflict, "a planning job runs already ("+running+"): one at a time, wait for it to end", "")
		return
	}
	p.job, p.svg = job, ""
	answer := *job
	p.mu.Unlock()
	go p.run(job.ID, sc, axes, seeds)
	workerapi.WriteJSON(w, http.StatusAccepted, "application/json", answer)
}

// check parses the scenario and the sweep and refuses what is not small.
func (p *planner) check(req PlanRequest) (*scenarios.Scenario, []plan.Axis, int, string, error) {
	var sc *scenarios.Scenario
	var err error
	switch {
	case (req.Scenario == "") == (req.YAML == ""):
		return nil, nil, 0, "scenario", fmt.Errorf("name a built-in scenario or upload one, not both or neither")
	case req.Scenario != "":
		_, byName := p.builtins()
		data, ok := byName[req.Scenario]
		if !ok {
			return nil, nil, 0, "scenario", fmt.Errorf("no built-in scenario %q that can be planned", req.Scenario)
		}
		sc, err = scenarios.Parse(req.Scenario+".yaml", data)
	default:
		if len(req.YAML) > planUploadMax {
			return nil, nil, 0, "yaml", fmt.Errorf("the uploaded scenario is over %d KiB", planUploadMax>>10)
		}
		// A replay names a file on the server: refused before the scenario is parsed (which reads it).
		var probe struct {
			Workload struct {
				Replay string `yaml:"replay"`
			} `yaml:"workload"`
		}
		if yaml.Unmarshal([]byte(req.YAML), &probe) == nil && probe.Workload.Replay != "" {
			return nil, nil, 0, "yaml", fmt.Errorf("workload.replay: an uploaded scenario cannot replay a file on the server")
		}
		sc, err = scenarios.Parse("uploaded.yaml", []byte(req.YAML))
	}
	if err != nil {
		return nil, nil, 0, "yaml", err
	}
	if sc.Workload == nil {
		return nil, nil, 0, "yaml", fmt.Errorf("%s has no workload: section to plan", sc.Name)
	}
	if sc.Workload.Replay != "" {
		return nil, nil, 0, "yaml", fmt.Errorf("workload.replay: a scenario replaying a file cannot be planned here")
	}
	if len(req.Sweep) == 0 || len(req.Sweep) > 2 {
		return nil, nil, 0, "sweep", fmt.Errorf("one or two sweeps (workers=FROM..TO[:STEP], cap=V1,V2,...), got %d", len(req.Sweep))
	}
	seeds := req.Seeds
	if seeds == 0 {
		seeds = 1
	}
	if seeds < 1 || seeds > planSeedsMax {
		return nil, nil, 0, "seeds", fmt.Errorf("seeds %d: 1 to %d here (qfsim plan runs more)", seeds, planSeedsMax)
	}
	var axes []plan.Axis
	runs, work := seeds, float64(seeds)*sc.Duration.Seconds()
	workers := []int{workersOf(sc)}
	for _, s := range req.Sweep {
		a, err := plan.ParseSweep(s)
		if err != nil {
			return nil, nil, 0, "sweep", err
		}
		axes = append(axes, a)
		runs *= len(a.Values)
		if a.Name == "workers" {
			workers = a.Values
		} else {
			work *= float64(len(a.Values))
		}
	}
	sum := 0
	for _, n := range workers {
		sum += n
	}
	work *= float64(sum)
	if runs > planRunsMax || work > planWorkSecondsMax {
		return nil, nil, 0, "sweep", fmt.Errorf("sweep too big for the server: %d runs and %.0f worker-seconds simulated, the limits are %d runs and %d (fewer points, seeds or workers; or run qfsim plan)",
			runs, work, planRunsMax, planWorkSecondsMax)
	}
	return sc, axes, seeds, "", nil
}

// run is the job's goroutine: planning is CPU work outside the simulator's world.
func (p *planner) run(id string, sc *scenarios.Scenario, axes []plan.Axis, seeds int) {
	o := plan.Options{Seeds: seeds, Parallel: 1, Progress: func(done, total int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.job != nil && p.job.ID == id {
			p.job.Done, p.job.Total = done, total
		}
	}}
	if sc.Workload.ControlPlane == nil {
		o.Calibration = plan.BuiltinCalibration()
	}
	pl, err := runPlan(sc, axes, o)
	var svg, table string
	if err == nil {
		var t strings.Builder
		pl.WriteTable(&t)
		svg, table = pl.SVG(), t.String()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.job == nil || p.job.ID != id {
		return
	}
	p.job.Ended = p.now()
	if err != nil {
		p.job.State, p.job.Error = "failed", err.Error()
		return
	}
	p.job.State, p.job.Plan, p.job.Table, p.svg = "done", pl, table, svg
}

// runPlan is plan.Run, with a panic in a simulation answered as the job's error.
func runPlan(sc *scenarios.Scenario, axes []plan.Axis, o plan.Options) (pl *plan.Plan, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the simulation failed: %v", v)
		}
	}()
	return plan.Run(sc, axes, o)
}

func (p *planner) show(w http.ResponseWriter, id string, plot bool) {
	p.mu.Lock()
	var job PlanJob
	var svg string
	found := p.job != nil && p.job.ID == id
	if found {
		job, svg = *p.job, p.svg
	}
	p.mu.Unlock()
	switch {
	case !found:
		workerapi.WriteError(w, http.StatusNotFound, "no planning job "+id+" (only the last one is kept)", "")
	case !plot:
		workerapi.WriteJSON(w, http.StatusOK, "application/json", job)
	case svg == "":
		workerapi.WriteError(w, http.StatusNotFound, "job "+id+" has no plot ("+job.State+")", "")
	default:
		w.Header().Set("Content-Type", "image/svg+xml")
		_, _ = io.WriteString(w, svg)
	}
}
