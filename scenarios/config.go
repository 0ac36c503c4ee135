package scenarios

// Config distribution in scenarios: with a `config:` section, every control plane serves a
// worker config snapshot built from the scenario's desired config (one sim cluster "c" whose
// cap the timeline edits) through the real ConfigServer, and every worker follows it with the
// real ConfigSync (peer bootstrap among the fleet's workers when the control plane is down).
// Events: configSet (edit the cap), configBad (publish a snapshot no worker can compile),
// configHang (snapshot builds hang). Check: configStatus (cap, source, staleness, rejection
// per worker, polled over a window).
//
// Not modelled: the worker's on-disk snapshot cache (a restarted worker has only its peers),
// and configs that drive the workload's proxy runtime (configs here carry the cap only).

import (
	"fmt"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/queryflux/queryflux/node/worker"
)

// ConfigSpec is the `config:` section.
type ConfigSpec struct {
	Cap          int           `yaml:"cap"`          // the initial cap of cluster c (default 1)
	PollTimeout  time.Duration `yaml:"pollTimeout"`  // workers' long poll (default 20s)
	BuildTimeout time.Duration `yaml:"buildTimeout"` // the control plane's snapshot build (default 10s)
	Peers        bool          `yaml:"peers"`        // bootstrap from the other workers while the control plane is down
	MaxAge       time.Duration `yaml:"maxAge"`       // oldest peer copy accepted (default 60s)
	RetryMax     time.Duration `yaml:"retryMax"`     // workers' longest wait between failed polls (queryflux.controlPlane.retryMaxSecs; default the binary's)
	LastGood     bool          `yaml:"lastGood"`     // workers keep their last good snapshot (a store surviving crashes)
	Zones        bool          `yaml:"zones"`        // groups g, eu and us, selected by zone labels; cap edits go to the us cluster (labels.go)
}

func (c *ConfigSpec) validate() error {
	if c.Cap == 0 {
		c.Cap = 1
	}
	if c.PollTimeout == 0 {
		c.PollTimeout = 20 * time.Second
	}
	if c.BuildTimeout == 0 {
		c.BuildTimeout = 10 * time.Second
	}
	if c.MaxAge == 0 {
		c.MaxAge = 60 * time.Second
	}
	if c.RetryMax < 0 {
		return fmt.Errorf("config.retryMax %v: must not be negative", c.RetryMax)
	}
	if c.Cap < 1 {
		return fmt.Errorf("config.cap %d: must be >= 1", c.Cap)
	}
	return nil
}

// configState is the desired config (it stands for the config store: it survives restarts).
type configState struct {
	cap       int           // -1: a config no worker can compile
	hangUntil time.Duration // builds before this virtual time hang
}

func configStateOf(w *World) *configState {
	return w.Durable("config/state", func() any { return &configState{cap: w.Scenario.Config.Cap} }).(*configState)
}

// configSyncOf is the running incarnation's ConfigSync of worker name (nil while down).
func configSyncOf(w *World, name string) (*worker.ConfigSync, *worker.Worker) {
	wk, _ := Assembled(w, name).(*assembly.Worker)
	if wk == nil {
		return nil, nil
	}
	return wk.Sync, wk.W
}

// configSnapshot builds the snapshot of cap c; a negative cap gives a snapshot whose fallback
// names no group (it passes the control plane, as a buggy compiler's would, and fails on workers).
func configSnapshot(c int, at time.Time, zones bool) (*snapshot.WorkerSnapshotV1, error) {
	if zones && c > 0 {
		return snapshot.Build(zonedConfig(c), snapshot.Options{ConfirmedAt: at})
	}
	capacity, fallback := c, "g"
	if c < 0 {
		capacity = 1
	}
	cfg := &config.Config{
		Clusters:        config.NamedList[config.Cluster]{{Name: "c", Engine: config.EngineSim, MaxRunningQueries: capacity}},
		ClusterGroups:   config.NamedList[config.ClusterGroup]{{Name: "g", Members: []string{"c"}}},
		RoutingFallback: fallback,
	}
	config.ApplyDefaults(cfg)
	s, err := snapshot.Build(cfg, snapshot.Options{ConfirmedAt: at})
	if err != nil || c >= 0 {
		return s, err
	}
	s.RoutingFallback = "nowhere"
	s.Revision, err = snapshot.Revision(s)
	return s, err
}

func requireConfig(sc *Scenario, p Params) error {
	if sc.Config == nil {
		return p.Errorf("needs a config: section")
	}
	return nil
}

func parseConfigSet(sc *Scenario, p Params) (Action, error) {
	var a struct {
		Cap     int    `yaml:"cap"`
		Cluster string `yaml:"cluster"`
	}
	if err := p.Decode(&a); err != nil {
		return nil, err
	}
	if a.Cluster != "" {
		return workloadCapSet(sc, p, a.Cluster, a.Cap)
	}
	if err := requireConfig(sc, p); err != nil {
		return nil, err
	}
	if a.Cap < 1 {
		return nil, p.Errorf("cap %d: must be >= 1", a.Cap)
	}
	return func(w *World) error { setDesired(w, a.Cap); return nil }, nil
}

func parseConfigBad(sc *Scenario, p Params) (Action, error) {
	if err := requireConfig(sc, p); err != nil {
		return nil, err
	}
	return func(w *World) error { setDesired(w, -1); return nil }, nil
}

func setDesired(w *World, c int) {
	st := configStateOf(w)
	st.cap = c
	configChanged(w)
}

func parseConfigHang(sc *Scenario, p Params) (Action, error) {
	var a struct {
		For time.Duration `yaml:"for"`
	}
	if err := p.Decode(&a); err != nil {
		return nil, err
	}
	if err := requireConfig(sc, p); err != nil {
		return nil, err
	}
	if a.For <= 0 {
		return nil, p.Errorf("for: must be > 0 (how long snapshot builds hang)")
	}
	return func(w *World) error {
		configStateOf(w).hangUntil = w.Sim.Elapsed() + a.For
		return nil
	}, nil
}

// configStatus: per worker, the active config's cap, its source (controlPlane, peer), whether
// it is stale, whether a revision was rejected, or that none is active; polled over a window.
func parseConfigStatus(sc *Scenario, p Params) (Check, error) {
	var c struct {
		Worker   string `yaml:"worker"`
		Cap      *int   `yaml:"cap"`
		Source   string `yaml:"source"`
		Stale    *bool  `yaml:"stale"`
		Rejected *bool  `yaml:"rejected"`
		Active   *bool  `yaml:"active"`
		Window   `yaml:",inline"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if err := requireConfig(sc, p); err != nil {
		return nil, err
	}
	if err := c.Window.validate(sc, p); err != nil {
		return nil, err
	}
	names, err := sc.Resolve(c.Worker)
	if err != nil {
		return nil, p.Errorf("worker: %v", err)
	}
	return NewStateCheck("config", names, "as wanted", c.Window, func(w *World, name string) (string, bool) {
		cs, wk := configSyncOf(w, name)
		if cs == nil {
			return "", false
		}
		cfg, _ := cs.Active()
		status := wk.Status().Config
		rejected, _ := cs.Rejected()
		var got []string
		mismatch := false
		want := func(ok bool, desc string) {
			got = append(got, desc)
			mismatch = mismatch || !ok
		}
		if c.Active != nil {
			want((cfg != nil) == *c.Active, fmt.Sprintf("active=%v", cfg != nil))
		}
		if c.Cap != nil {
			have := 0
			if cfg != nil {
				have = cfg.Clusters[0].MaxRunningQueries
			}
			want(have == *c.Cap, fmt.Sprintf("cap=%d", have))
		}
		if c.Source != "" {
			want(status.Source == c.Source, "source="+status.Source)
		}
		if c.Stale != nil {
			want(status.Stale == *c.Stale, fmt.Sprintf("stale=%v(%.0fs)", status.Stale, status.StalenessSecs))
		}
		if c.Rejected != nil {
			want((rejected != "") == *c.Rejected, fmt.Sprintf("rejected=%v", rejected != ""))
		}
		if !mismatch {
			return "as wanted", true
		}
		return strings.Join(got, ","), true
	}), nil
}
