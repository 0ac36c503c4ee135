// Package scenarios loads scenario files (YAML: fleet, intervals, a timeline of faults, checks)
// and runs them in the simulator (sim/), one seed at a time.
//
// Roles, timeline event kinds and check kinds are registries (RegisterRole, RegisterEvent,
// RegisterCheck): registerBuiltins lists this package's own; a test may add kinds. Another
// package observes a run through RunOpts.Observe (chaos's headline metrics). The fleet's roles are the shipped ones, built by node/assembly.
//
// This package runs roles only inside the simulator; it reads scenario files and measures wall
// time for reports (never fed into the trace hash).
package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/queryflux/queryflux/sim"
)

// Scenario is a loaded scenario file.
type Scenario struct {
	Path        string
	Name        string        `yaml:"name"`
	Description string        `yaml:"description"`
	Duration    time.Duration `yaml:"duration"`
	// CheckEvery is how often polling checks look at the world (default 100ms of virtual time).
	CheckEvery time.Duration `yaml:"checkEvery"`
	Network    Network       `yaml:"network"`
	Intervals  Intervals     `yaml:"intervals"`
	Fleet      Fleet         `yaml:"fleet"`
	Timeline   []*Event      `yaml:"timeline"`
	Checks     []*CheckSpec  `yaml:"checks"`
	// Workload is the query workload (workload.go); nil: the fleet runs no queries.
	Workload *Workload `yaml:"workload"`
	// Config makes control planes serve and workers follow a config snapshot (config.go).
	Config *ConfigSpec `yaml:"config"`

	specs     []NodeSpec     // the fleet expanded, in file order
	specIndex map[string]int // name -> index in specs
}

// Network is the default link model.
type Network struct {
	Latency *Latency `yaml:"latency"`
	Drop    float64  `yaml:"drop"`
}

// Latency is a latency distribution: fixed (min), uniform (min..max) or exponential (min + mean).
type Latency struct {
	Dist string        `yaml:"dist"` // fixed, uniform, exponential
	Min  time.Duration `yaml:"min"`
	Max  time.Duration `yaml:"max"`
	Mean time.Duration `yaml:"mean"`
}

// Intervals are the fleet's timing knobs; zero means the role's default.
type Intervals struct {
	Heartbeat      time.Duration `yaml:"heartbeat"`
	StaleAfter     time.Duration `yaml:"staleAfter"`
	EvictGrace     time.Duration `yaml:"evictGrace"`
	Reaper         time.Duration `yaml:"reaper"`
	RequestTimeout time.Duration `yaml:"requestTimeout"`
	HealthProbe    time.Duration `yaml:"healthProbe"`
	LagThreshold   time.Duration `yaml:"lagThreshold"`
	HealthFlips    int           `yaml:"healthFlips"`
	// ConfigPoll and ConfigRetryMax are the workers' config long-poll and their longest wait
	// between failed polls (queryflux.controlPlane.pollTimeoutSecs, retryMaxSecs); a config:
	// section's pollTimeout and retryMax win.
	ConfigPoll     time.Duration `yaml:"configPoll"`
	ConfigRetryMax time.Duration `yaml:"configRetryMax"`
}

// Fleet names the nodes. controlPlanes and workers are shorthands for nodes of role
// "controlplane" and "worker"; nodes may name any registered role.
type Fleet struct {
	ControlPlanes []NodeSpec          `yaml:"controlPlanes"`
	Workers       []NodeSpec          `yaml:"workers"`
	Nodes         []NodeSpec          `yaml:"nodes"`
	Groups        map[string][]string `yaml:"groups"`
}

// NodeSpec is one node, or Count nodes named Prefix1..PrefixN.
type NodeSpec struct {
	Name         string            `yaml:"name"`
	Prefix       string            `yaml:"prefix"`
	Count        int               `yaml:"count"`
	Role         string            `yaml:"role"`
	Labels       map[string]string `yaml:"labels"`
	ControlPlane string            `yaml:"controlPlane"` // for workers: which control plane (default the first)
	Peers        []string          `yaml:"peers"`        // for roles that talk to named nodes
}

// Event is one timeline entry: `at` plus exactly one registered kind.
type Event struct {
	At     time.Duration
	Kind   string
	Params Params
	action Action
}

// CheckSpec is one checks entry: exactly one registered kind, optionally `name`.
type CheckSpec struct {
	Name   string
	Kind   string
	Params Params
}

// Params is the YAML value of an event or check, decoded by its kind.
type Params struct {
	node ast.Node
	src  *source
}

type source struct {
	path string
	data []byte
}

// Decode decodes the params into v (a struct, string, list...); unknown keys are errors.
func (p Params) Decode(v any) error {
	if p.node == nil {
		return nil
	}
	if err := yaml.NodeToValue(p.node, v, yaml.DisallowUnknownField()); err != nil {
		return fmt.Errorf("%s: %s", p.src.path, yaml.FormatError(err, false, false))
	}
	return nil
}

// Pos is "file:line" of the params, for error messages.
func (p Params) Pos() string {
	if p.node == nil || p.node.GetToken() == nil {
		return p.src.path
	}
	return fmt.Sprintf("%s:%d", p.src.path, p.node.GetToken().Position.Line)
}

func (p Params) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", p.Pos(), fmt.Sprintf(format, args...))
}

// Errorf is an error naming the params' place in the file.
func (p Params) Errorf(format string, args ...any) error { return p.errorf(format, args...) }

// ---- registries ----

// Action is what an event does when its time comes. It runs in the simulator's runner (not a
// task): it must not block; spawn a task on w.Observer for anything that does.
type Action func(w *World) error

// EventKind parses an event's params at load time (sc is decoded and validated: names resolve).
type EventKind func(sc *Scenario, p Params) (Action, error)

// Check is one expectation. Start runs before the world runs (schedule polls, hooks); Result
// runs after.
type Check interface {
	Start(w *World)
	Result(w *World) (pass bool, detail string)
}

// CheckKind parses a check's params. It runs at load time (to report errors) and again for every
// run, so a Check may keep per-run state.
type CheckKind func(sc *Scenario, p Params) (Check, error)

// RoleKind builds the factory of a node of that role; the factory runs at every boot, returns the
// node's handler (nil: no listener) and should publish its role object with w.SetRole.
type RoleKind func(w *World, spec NodeSpec) (sim.Factory, error)

var (
	eventKinds = map[string]EventKind{}
	checkKinds = map[string]CheckKind{}
	roleKinds  = map[string]RoleKind{}
)

var builtinsOnce sync.Once

// builtins makes sure this package's own kinds are registered.
func builtins() { builtinsOnce.Do(registerBuiltins) }

// RegisterEvent adds a timeline event kind.
func RegisterEvent(name string, k EventKind) { builtins(); register(eventKinds, "event", name, k) }

// RegisterCheck adds a check kind (a test's).
func RegisterCheck(name string, k CheckKind) { builtins(); register(checkKinds, "check", name, k) }

// RegisterRole adds a node role.
func RegisterRole(name string, k RoleKind) { builtins(); register(roleKinds, "role", name, k) }

// registerBuiltins registers the roles, events and checks this package defines. Every use of the
// registries calls builtins first, so they are complete before any lookup and another package's
// RegisterCheck (a test's) cannot come first.
func registerBuiltins() {
	// The fleet roles (controlplane, worker) and the registry checks: registryState, reportedHealth,
	// selfHealth, tokenRevoked, reregistered.
	register(roleKinds, "role", "controlplane", controlPlaneRole)
	register(roleKinds, "role", "worker", workerRole)
	register(checkKinds, "check", "registryState", parseRegistryState)
	register(checkKinds, "check", "reportedHealth", parseReportedHealth)
	register(checkKinds, "check", "selfHealth", parseSelfHealth)
	register(checkKinds, "check", "tokenRevoked", parseTokenRevoked)
	register(checkKinds, "check", "reregistered", parseReregistered)

	register(checkKinds, "check", "leasesHeld", parseLeasesHeld)
	register(checkKinds, "check", "admitted", parseAdmitted)
	register(checkKinds, "check", "engineMax", parseEngineMax)
	register(checkKinds, "check", "expectViolation", parseExpectViolation)
	register(checkKinds, "check", "fairness", parseFairness)
	register(checkKinds, "check", "admittedRatio", parseAdmittedRatio)

	// The built-in role "pingpong" (the simulator's own test workload) and check "pings".
	register(roleKinds, "role", "pingpong", pingpongRole)
	register(checkKinds, "check", "pings", parsePings)

	register(checkKinds, "check", "historyConserved", parseHistoryConserved)

	register(checkKinds, "check", "leasesWithinCap", parseCapOracle(func(st *WorkloadStats) (int, map[string]int) {
		return st.LeaseViolations, st.MaxLeases
	}, "leases held"))
	register(checkKinds, "check", "engineWithinCap", parseCapOracle(func(st *WorkloadStats) (int, map[string]int) {
		return st.EngineViolations, st.MaxExecuting
	}, "queries executing"))
	register(checkKinds, "check", "served", parseServed)
	register(checkKinds, "check", "cacheHitRate", parseCacheHitRate)

	// The built-in timeline events: crash, restart, stop (graceful), partition, heal, hold, release, link, drift,
	// clockStep, starve, revokeLeases, registerAs.
	register(eventKinds, "event", "crash", nodesEvent(func(n *sim.Node) { n.Crash() }))
	register(eventKinds, "event", "restart", nodesEvent(func(n *sim.Node) { n.Restart() }))
	register(eventKinds, "event", "stop", parseStop)
	register(eventKinds, "event", "partition", linkEvent(false, func(w *World, from, to string) { w.Sim.Net().Partition(from, to) }))
	register(eventKinds, "event", "heal", linkEvent(true, func(w *World, from, to string) { w.Sim.Net().Heal(from, to) }))
	register(eventKinds, "event", "hold", linkEvent(false, func(w *World, from, to string) { w.Sim.Net().Hold(from, to) }))
	register(eventKinds, "event", "release", linkEvent(false, func(w *World, from, to string) { w.Sim.Net().Release(from, to) }))
	register(eventKinds, "event", "link", parseLinkModel)
	register(eventKinds, "event", "drift", parseDrift)
	register(eventKinds, "event", "clockStep", parseClockStep)
	register(eventKinds, "event", "starve", parseStarve)
	register(eventKinds, "event", "revokeLeases", parseRevokeLeases)
	register(eventKinds, "event", "registerAs", parseRegisterAs)

	register(eventKinds, "event", "configSet", parseConfigSet)
	register(eventKinds, "event", "configBad", parseConfigBad)
	register(eventKinds, "event", "configHang", parseConfigHang)
	register(checkKinds, "check", "configStatus", parseConfigStatus)
	register(eventKinds, "event", "configEdit", parseConfigEdit)
	register(checkKinds, "check", "configNeverHalfApplied", parseConfigNeverHalfApplied)

	register(eventKinds, "event", "relabel", parseRelabel)
	register(checkKinds, "check", "groupsServed", parseGroupsServed)
	register(checkKinds, "check", "revisionConverged", parseRevisionConverged)
	register(checkKinds, "check", "revisionChange", parseRevisionChange)
	register(checkKinds, "check", "selectorUnmatched", parseSelectorUnmatched)
}

func register[K any](m map[string]K, what, name string, k K) {
	if _, dup := m[name]; dup {
		panic(fmt.Sprintf("scenarios: %s kind %q registered twice", what, name))
	}
	m[name] = k
}

// EventKinds, CheckKinds and RoleKinds list the registered names, sorted.
func EventKinds() []string { builtins(); return sortedKeys(eventKinds) }
func CheckKinds() []string { builtins(); return sortedKeys(checkKinds) }
func RoleKinds() []string  { builtins(); return sortedKeys(roleKinds) }

func eventKind(name string) EventKind { builtins(); return eventKinds[name] }
func checkKind(name string) CheckKind { builtins(); return checkKinds[name] }
func roleKind(name string) RoleKind   { builtins(); return roleKinds[name] }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ---- loading ----

// current is the file being decoded (UnmarshalYAML gets no context); parseMu serializes Parse.
var (
	current *source
	parseMu sync.Mutex
)

// Load reads and validates a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes a scenario from data; path names it in errors.
func Parse(path string, data []byte) (*Scenario, error) {
	parseMu.Lock()
	defer parseMu.Unlock()
	current = &source{path: path, data: data}
	defer func() { current = nil }()
	sc := &Scenario{Path: path}
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.DisallowUnknownField())
	if err := dec.Decode(sc); err != nil {
		return nil, fmt.Errorf("%s: %s", path, yaml.FormatError(err, false, false))
	}
	if err := sc.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, ev := range sc.Timeline {
		a, err := eventKind(ev.Kind)(sc, ev.Params)
		if err != nil {
			return nil, err
		}
		ev.action = a
	}
	for _, c := range sc.Checks {
		if _, err := checkKind(c.Kind)(sc, c.Params); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

func (sc *Scenario) validate() error {
	if sc.Duration <= 0 {
		return errors.New("duration: must be > 0 (e.g. duration: 5m)")
	}
	if sc.CheckEvery == 0 {
		sc.CheckEvery = 100 * time.Millisecond
	}
	if sc.CheckEvery < 0 {
		return errors.New("checkEvery: must be > 0")
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(sc.Path[strings.LastIndex(sc.Path, "/")+1:], ".yaml")
	}
	if _, err := sc.linkModel(); err != nil {
		return err
	}
	if sc.Workload != nil {
		if sc.Workload.Workers < 0 {
			return fmt.Errorf("workload.workers %d: must be >= 0", sc.Workload.Workers)
		}
		if err := sc.resizeWorkers(sc.Workload.Workers); err != nil {
			return fmt.Errorf("workload.workers: %w", err)
		}
	}
	specs, err := sc.nodeSpecs()
	if err != nil {
		return err
	}
	sc.specs, sc.specIndex = specs, map[string]int{}
	for i, s := range specs {
		sc.specIndex[s.Name] = i
	}
	names := map[string]bool{}
	for _, s := range specs {
		names[s.Name] = true
	}
	for _, s := range specs {
		if s.ControlPlane != "" && (!names[s.ControlPlane] || specs[sc.specIndex[s.ControlPlane]].Role != "controlplane") {
			return fmt.Errorf("fleet: %s's controlPlane %q is not a control plane of the fleet", s.Name, s.ControlPlane)
		}
	}
	for g, members := range sc.Fleet.Groups {
		if names[g] || builtinGroups[g] {
			return fmt.Errorf("fleet.groups.%s: a group may not share a node's or a built-in group's name", g)
		}
		for _, m := range members {
			if !names[m] {
				return fmt.Errorf("fleet.groups.%s: no node named %q", g, m)
			}
		}
	}
	if sc.Config != nil {
		if err := sc.Config.validate(); err != nil {
			return err
		}
	}
	if sc.Workload != nil {
		if err := sc.Workload.validate(sc); err != nil {
			return err
		}
	}
	for i, ev := range sc.Timeline {
		if ev.At > sc.Duration {
			return fmt.Errorf("timeline[%d] (%s): at %v is after the scenario's duration %v", i, ev.Params.Pos(), ev.At, sc.Duration)
		}
	}
	return nil
}

// UnmarshalYAML decodes `- at: 30s` + one kind.
func (ev *Event) UnmarshalYAML(node ast.Node) error {
	p := Params{node: node, src: current}
	m, ok := node.(*ast.MappingNode)
	if !ok {
		return p.errorf("a timeline event is a mapping: at: <duration> and one of %s", strings.Join(EventKinds(), ", "))
	}
	haveAt := false
	for _, kv := range m.Values {
		key := kv.Key.GetToken().Value
		vp := Params{node: kv.Value, src: current}
		switch {
		case key == "at":
			var d time.Duration
			if err := vp.Decode(&d); err != nil {
				return err
			}
			ev.At, haveAt = d, true
		case eventKind(key) != nil:
			if ev.Kind != "" {
				return vp.errorf("one event per timeline entry: both %q and %q", ev.Kind, key)
			}
			ev.Kind, ev.Params = key, vp
		default:
			return vp.errorf("unknown field %q in a timeline event (event kinds: %s)", key, strings.Join(EventKinds(), ", "))
		}
	}
	if !haveAt {
		return p.errorf("timeline event without at:")
	}
	if ev.Kind == "" {
		return p.errorf("timeline event without a kind (one of %s)", strings.Join(EventKinds(), ", "))
	}
	return nil
}

// UnmarshalYAML decodes `- <kind>: {...}` with an optional name.
func (c *CheckSpec) UnmarshalYAML(node ast.Node) error {
	p := Params{node: node, src: current}
	m, ok := node.(*ast.MappingNode)
	if !ok {
		return p.errorf("a check is a mapping: one of %s", strings.Join(CheckKinds(), ", "))
	}
	for _, kv := range m.Values {
		key := kv.Key.GetToken().Value
		vp := Params{node: kv.Value, src: current}
		switch {
		case key == "name":
			if err := vp.Decode(&c.Name); err != nil {
				return err
			}
		case checkKind(key) != nil:
			if c.Kind != "" {
				return vp.errorf("one kind per check: both %q and %q", c.Kind, key)
			}
			c.Kind, c.Params = key, vp
		default:
			return vp.errorf("unknown field %q in a check (check kinds: %s)", key, strings.Join(CheckKinds(), ", "))
		}
	}
	if c.Kind == "" {
		return p.errorf("check without a kind (one of %s)", strings.Join(CheckKinds(), ", "))
	}
	if c.Name == "" {
		c.Name = fmt.Sprintf("%s@%d", c.Kind, m.GetToken().Position.Line)
	}
	return nil
}

// nodeSpecs expands the fleet into one spec per node, in file order, with roles set.
func (sc *Scenario) nodeSpecs() ([]NodeSpec, error) {
	var out []NodeSpec
	add := func(where string, specs []NodeSpec, role string) error {
		for i, s := range specs {
			if role != "" {
				if s.Role != "" && s.Role != role {
					return fmt.Errorf("fleet.%s[%d]: role %q in a %s list", where, i, s.Role, role)
				}
				s.Role = role
			}
			if roleKind(s.Role) == nil {
				return fmt.Errorf("fleet.%s[%d]: unknown role %q (roles: %s)", where, i, s.Role, strings.Join(RoleKinds(), ", "))
			}
			switch {
			case s.Name != "" && (s.Prefix != "" || s.Count != 0):
				return fmt.Errorf("fleet.%s[%d]: name, or prefix with count, not both", where, i)
			case s.Name != "":
				out = append(out, s)
			case s.Prefix != "" && s.Count > 0:
				for j := 1; j <= s.Count; j++ {
					c := s
					c.Name = fmt.Sprintf("%s%d", s.Prefix, j)
					c.Prefix, c.Count = "", 0
					out = append(out, c)
				}
			default:
				return fmt.Errorf("fleet.%s[%d]: needs a name, or a prefix and a count > 0", where, i)
			}
		}
		return nil
	}
	if err := add("controlPlanes", sc.Fleet.ControlPlanes, "controlplane"); err != nil {
		return nil, err
	}
	if err := add("workers", sc.Fleet.Workers, "worker"); err != nil {
		return nil, err
	}
	if err := add("nodes", sc.Fleet.Nodes, ""); err != nil {
		return nil, err
	}
	seen := map[string]bool{ObserverName: true, EnginesName: true}
	for _, s := range out {
		if seen[s.Name] {
			return nil, fmt.Errorf("fleet: node %q named twice (or reserved)", s.Name)
		}
		seen[s.Name] = true
	}
	return out, nil
}
