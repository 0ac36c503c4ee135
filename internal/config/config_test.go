package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

func paths(errs []FieldError) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Path
	}
	return out
}

func TestFullConfigCompiles(t *testing.T) {
	cfg, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := Compile(cfg); err != nil {
		t.Fatalf("Compile:\n%v", err)
	}
	if cfg.QueryFlux.Role != RoleControlPlane || len(cfg.Clusters) != 3 || len(cfg.ClusterGroups) != 3 || len(cfg.Routers) != 6 {
		t.Fatalf("unexpected shape: %v", cfg)
	}
	// Map form keeps the file's order and takes names from the keys.
	if got := []string{cfg.Clusters[0].Name, cfg.Clusters[1].Name, cfg.Clusters[2].Name}; !slices.Equal(got, []string{"trino-1", "pg-1", "duck"}) {
		t.Fatalf("cluster names %v", got)
	}
	if cfg.Clusters[2].IsEnabled() || !cfg.Clusters[0].IsEnabled() {
		t.Fatal("enabled flags wrong")
	}
	if cfg.Clusters[0].Credentials.Password.Reveal() != "trino-pass" {
		t.Fatal("password not decoded")
	}
	if cfg.ClusterGroups[2].Strategy != StrategyRoundRobin {
		t.Fatalf("default strategy not applied: %q", cfg.ClusterGroups[2].Strategy)
	}
	if cfg.Settings.AccessControl.Rules[1].Effect != EffectAllow {
		t.Fatal("default effect not applied")
	}
}

func TestClustersAsListOrMapAreTheSame(t *testing.T) {
	asList := mustParse(t, `
clusters:
  - {name: a, engine: sim, maxRunningQueries: 1}
  - {name: b, engine: sim, maxRunningQueries: 2}
`)
	asMap := mustParse(t, `
clusters:
  a: {engine: sim, maxRunningQueries: 1}
  b: {name: b, engine: sim, maxRunningQueries: 2}
`)
	if len(asList.Clusters) != 2 || len(asMap.Clusters) != 2 {
		t.Fatalf("lengths %d %d", len(asList.Clusters), len(asMap.Clusters))
	}
	for i := range asList.Clusters {
		if asList.Clusters[i].Name != asMap.Clusters[i].Name || asList.Clusters[i].MaxRunningQueries != asMap.Clusters[i].MaxRunningQueries {
			t.Fatalf("cluster %d differs: %+v vs %+v", i, asList.Clusters[i], asMap.Clusters[i])
		}
	}
	_, err := Parse([]byte("clusters:\n  a: {name: b, engine: sim}\n"))
	if err == nil || !strings.Contains(err.Error(), `name "b" differs from its key "a"`) {
		t.Fatalf("want name/key mismatch, got %v", err)
	}
}

func TestUnknownKeysAreEachReportedWithPathAndLine(t *testing.T) {
	src := `queryflux:
  role: worker
  colour: blue
clusters:
  - name: a
    engine: sim
    endpiont: x
groups: []
clusterGroups:
  g:
    members: [a]
    Strategy: roundRobin
`
	_, err := Parse([]byte(src))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	want := []FieldError{
		{Path: "queryflux.colour", Line: 3},
		{Path: "clusters[0].endpiont", Line: 7},
		{Path: "groups", Line: 8},
		{Path: "clusterGroups[0].Strategy", Line: 12},
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs)
	}
	for i, w := range want {
		if errs[i].Path != w.Path || errs[i].Line != w.Line || !strings.HasPrefix(errs[i].Message, "unknown field") {
			t.Errorf("error %d = %+v, want path %s line %d", i, errs[i], w.Path, w.Line)
		}
	}
	if !strings.Contains(errs[3].Message, `did you mean "strategy"`) {
		t.Errorf("no suggestion: %s", errs[3].Message)
	}
}

func TestBrokenYAMLReportsItsLine(t *testing.T) {
	for _, tc := range []struct {
		src  string
		line int
	}{
		{"queryflux:\n  role: worker\n  frontends: [unclosed\n", 3},
		{"clusters:\n  - name: a\n    maxRunningQueries: lots\n", 3},
		{"queryflux:\n  role: [a, b]\n", 2},
		{"routingFallback: a\nroutingFallback: b\n", 2}, // a duplicate key is an error, not an override
	} {
		_, err := Parse([]byte(tc.src))
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 {
			t.Fatalf("%q: want one error, got %v", tc.src, err)
		}
		if errs[0].Line != tc.line {
			t.Errorf("%q: line %d, want %d (%v)", tc.src, errs[0].Line, tc.line, errs[0])
		}
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	cfg := mustParse(t, `
queryflux:
  role: boss
clusters:
  - {name: a, engine: trino, maxRunningQueries: 1}
  - {name: b, engine: oracle, endpoint: x, maxRunningQueries: 1}
  - {name: a, engine: sim, maxRunningQueries: 0}
clusterGroups:
  - {name: g, members: [a, zz], strategy: random}
routers:
  - {type: header, headerName: X, headerValue: v, group: nope}
  - {type: magic}
  - {type: protocolBased, mysql: g, regex: "x"}
  - {type: queryRegex, regex: "(", group: g}
routingFallback: missing
historyPolicy: {redaction: all}
`)
	errs := Validate(cfg)
	got := paths(errs)
	want := []string{
		"queryflux.role",
		"clusters[0].endpoint",
		"clusters[1].engine",
		"clusters[2].name",
		"clusters[2].maxRunningQueries",
		"clusterGroups[0].members[1]",
		"clusterGroups[0].strategy",
		"routers[0].group",
		"routers[1].type",
		"routers[2].regex",
		"routers[3].regex",
		"routingFallback",
		"historyPolicy.redaction",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paths:\n got %q\nwant %q\nerrors:\n%v", got, want, Errors(errs))
	}
	byPath := map[string]FieldError{}
	for _, e := range errs {
		byPath[e.Path] = e
	}
	if m := byPath["clusters[1].engine"].Message; !strings.HasPrefix(m, `unknown engine "oracle"`) {
		t.Errorf("engine message %q", m)
	}
	if m := byPath["routers[0].group"].Message; m != `unknown group "nope"` {
		t.Errorf("group message %q", m)
	}
	if e := byPath["clusters[1].engine"]; e.Line != 6 {
		t.Errorf("line of clusters[1].engine = %d, want 6", e.Line)
	}
	if Compile(cfg) == nil {
		t.Fatal("Compile accepted an invalid config")
	}
}

func TestWorkerNeedsControlPlane(t *testing.T) {
	cfg := mustParse(t, "queryflux: {role: worker, persistence: {databaseUrl: 'postgres://u:hunter2@h/d'}}\n")
	errs := Validate(cfg)
	got := paths(errs)
	for _, p := range []string{"queryflux.controlPlane.url", "queryflux.controlPlane.secret", "queryflux.persistence.databaseUrl"} {
		if !slices.Contains(got, p) {
			t.Errorf("missing error at %s; got %v", p, got)
		}
	}
	if strings.Contains(Errors(errs).Error(), "hunter2") {
		t.Fatal("an error message shows the database password")
	}
	if cfg.QueryFlux.Coordination.Mode != CoordinationControlPlane {
		t.Errorf("worker default coordination mode %q", cfg.QueryFlux.Coordination.Mode)
	}
}

func TestVariantsExpand(t *testing.T) {
	cfg := mustParse(t, `
clusters:
  - name: t
    engine: trino
    endpoint: http://h:1
    credentials: {user: u, password: p}
    maxRunningQueries: 5
    labels: {a: "1", b: "2"}
    variants:
      z: {maxRunningQueries: 1, labels: {b: "3"}}
      etl: {credentials: {user: etl}, enabled: false}
clusterGroups:
  - {name: g, members: ["t::etl", "t::z"]}
routingFallback: g
`)
	if err := Compile(cfg); err != nil {
		t.Fatal(err)
	}
	ec := cfg.ExpandClusters()
	names := []string{ec[0].Name, ec[1].Name, ec[2].Name}
	if !slices.Equal(names, []string{"t", "t::etl", "t::z"}) {
		t.Fatalf("names %v", names)
	}
	etl, z := ec[1].Cluster, ec[2].Cluster
	if etl.Credentials.User != "etl" || etl.Credentials.Password != "" || etl.IsEnabled() || etl.MaxRunningQueries != 5 {
		t.Errorf("etl variant %+v", etl)
	}
	if z.MaxRunningQueries != 1 || z.Labels["a"] != "1" || z.Labels["b"] != "3" || z.Endpoint != "http://h:1" {
		t.Errorf("z variant %+v", z)
	}
	if cfg.Clusters[0].Labels["b"] != "2" {
		t.Error("expanding a variant changed the base cluster's labels")
	}
	dup := mustParse(t, `
clusters:
  - {name: t, engine: sim, maxRunningQueries: 1, variants: {x: {}}}
  - {name: "t::x", engine: sim, maxRunningQueries: 1}
`)
	if got := paths(Validate(dup)); !slices.Equal(got, []string{"clusters[1].name"}) {
		t.Fatalf("want a duplicate at clusters[1].name, got %v", got)
	}
}

func TestRouterFieldsMustFitTheType(t *testing.T) {
	cfg := mustParse(t, `
clusters: [{name: a, engine: sim, maxRunningQueries: 1}]
clusterGroups: [{name: g, members: [a]}]
routers:
  - {type: compound, group: g, conditions: [{type: header, headerName: X, regex: y}, {type: tag}]}
  - {type: script, source: ""}
  - {type: tags, tagToGroup: {nightly: g, adhoc: h}}
routingFallback: g
`)
	got := paths(Validate(cfg))
	want := []string{
		"routers[0].conditions[0].regex",
		"routers[0].conditions[1].tag",
		"routers[1].source",
		"routers[2].tagToGroup.adhoc",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// Compile compiles script routers itself (no package has to register it), naming the router,
// its line, and what went wrong; node/proxy builds routers with the same function.
func TestCompileRejectsScriptRoutersThatDoNotCompile(t *testing.T) {
	cfg := mustParse(t, `
clusters: [{name: a, engine: sim, maxRunningQueries: 1}]
clusterGroups: [{name: g, members: [a]}]
routers:
  - {type: script, name: ok, source: "def route(q):\n    return 'g'\n"}
  - {type: script, name: spin, source: "def route(q, c):\n    while True:\n        pass\nroute(1, 2)\n"}
  - {type: script, source: "x = 1"}
routingFallback: g
`)
	err := Compile(cfg)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	if got := paths(errs); !slices.Equal(got, []string{"routers[1].source", "routers[2].source"}) {
		t.Fatalf("got %v", errs)
	}
	if !strings.Contains(errs[0].Message, "script router spin") || !strings.Contains(errs[0].Message, "too many steps") {
		t.Errorf("step limit: %v", errs[0])
	}
	if !strings.Contains(errs[1].Message, "no function route") || errs[1].Line != 7 {
		t.Errorf("no route: %v (line %d)", errs[1], errs[1].Line)
	}
}

func TestRegisteredEngineCheck(t *testing.T) {
	RegisterEngine("testengine", func(c Cluster) []FieldError {
		if c.Options["mode"] != "fast" {
			return []FieldError{Errorf("options.mode", "must be fast")}
		}
		return nil
	})
	cfg := mustParse(t, `
clusters:
  - {name: a, engine: testengine, maxRunningQueries: 1, options: {mode: slow}, variants: {v: {options: {mode: fast}}}}
clusterGroups: [{name: g2, members: [a]}]
routingFallback: g2
`)
	err := Compile(cfg)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	if got := paths(errs); !slices.Equal(got, []string{"clusters[0].options.mode"}) {
		t.Fatalf("got %v", errs)
	}
	if !slices.Contains(EngineKinds(), "testengine") {
		t.Fatal("registered engine not listed")
	}
}

// The policy's scripts are compiled by Compile itself: this package does not import
// internal/policy, so nothing registered them.
func TestCompileChecksPolicyScripts(t *testing.T) {
	cfg := mustParse(t, `
translation:
  scripts:
    - {name: ok, source: "def transform(sql, src, dst):\n  return sql\n"}
    - {name: two, source: "def transform(a, b, c, d):\n  return a\n"}
settings:
  guardScripts:
    - {name: g, source: "def check(q):\n  return None\n"}
`)
	err := Compile(cfg)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	if got := paths(errs); !slices.Equal(got, []string{"translation.scripts[1].source", "settings.guardScripts[0].source"}) {
		t.Fatalf("got %v", errs)
	}
	if !strings.Contains(errs[1].Message, "no function guard") || errs[1].Line != 8 {
		t.Errorf("guard error %+v, want no function guard at line 8", errs[1])
	}
	progs, _ := CompileTranslationScripts(cfg)
	if len(progs) != 2 || progs[0] == nil || progs[1] != nil {
		t.Errorf("programs %v: want the first compiled, the second nil", progs)
	}
}

func TestDefaultsAreIdempotent(t *testing.T) {
	cfg := mustParse(t, "{}")
	before := *cfg
	ApplyDefaults(cfg)
	if !reflect.DeepEqual(cfg.QueryFlux, before.QueryFlux) || cfg.HistoryPolicy != before.HistoryPolicy {
		t.Fatal("ApplyDefaults changed an already defaulted config")
	}
	if err := Compile(cfg); err != nil {
		t.Fatalf("empty config should compile: %v", err)
	}
}

func TestWorkerAPICredentialsMode(t *testing.T) {
	cfg := mustParse(t, "queryflux: {workerApi: {credentials: plain}}\n")
	if got := paths(Validate(cfg)); !slices.Equal(got, []string{"queryflux.workerApi.credentials"}) {
		t.Fatalf("got %v", got)
	}
	if cfg := mustParse(t, "{}"); cfg.QueryFlux.WorkerAPI.Credentials != CredentialsEmbedded {
		t.Fatalf("default %q", cfg.QueryFlux.WorkerAPI.Credentials)
	}
}

func TestBuiltInEngineChecks(t *testing.T) {
	cfg := mustParse(t, `
clusters:
  - {name: t1, engine: trino, endpoint: "ftp://user:pw-in-url@h", maxRunningQueries: 1}
  - {name: p1, engine: postgres, endpoint: "postgres://u:pw-in-url@h:5432/db", maxRunningQueries: 1}
  - {name: p2, engine: postgres, endpoint: "mysql://u:pw-in-url@h", maxRunningQueries: 1}
  - {name: m1, engine: mysql, endpoint: "h", maxRunningQueries: 1}
  - {name: s1, engine: starrocks, endpoint: "h:9030", maxRunningQueries: 1}
  - {name: d1, engine: duckdb, endpoint: "/tmp/x.duckdb", maxRunningQueries: 1}
`)
	errs := Validate(cfg)
	if got := paths(errs); !slices.Equal(got, []string{"clusters[0].endpoint", "clusters[2].endpoint", "clusters[3].endpoint"}) {
		t.Fatalf("got %v", Errors(errs))
	}
	if strings.Contains(Errors(errs).Error(), "pw-in-url") {
		t.Fatal("an endpoint URL with a password was quoted back")
	}
	// An engine package's registration replaces the built-in check.
	RegisterEngine(EngineStarRocks, func(c Cluster) []FieldError {
		return []FieldError{Errorf("options", "starrocks engine check ran")}
	})
	if got := paths(Validate(cfg)); !slices.Contains(got, "clusters[4].options") {
		t.Fatalf("registered check did not run: %v", got)
	}
}

// `config check` must refuse what `serve` refuses: registry timing below the control plane's
// production minimums.
func TestRegistryTimingBelowTheServeMinimumsIsAnError(t *testing.T) {
	cfg := mustParse(t, "queryflux: {heartbeatIntervalSecs: 20, registry: {staleAfterSecs: 30, graceSecs: 5}}\n")
	got := paths(Validate(cfg))
	for _, p := range []string{"queryflux.registry.staleAfterSecs", "queryflux.registry.graceSecs"} {
		if !slices.Contains(got, p) {
			t.Errorf("missing error at %s; got %v", p, got)
		}
	}
	cfg = mustParse(t, "queryflux: {registry: {staleAfterSecs: 20}}\n")
	if got := paths(Validate(cfg)); !slices.Contains(got, "queryflux.registry.staleAfterSecs") {
		t.Errorf("staleAfterSecs 20 accepted; got %v", got)
	}
	cfg = mustParse(t, "queryflux: {registry: {staleAfterSecs: 30, graceSecs: 10}}\n")
	if got := paths(Validate(cfg)); slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, "registry") }) {
		t.Errorf("the minimums themselves refused: %v", got)
	}
}

func TestPoolModeMustBeKnown(t *testing.T) {
	cfg := mustParse(t, `
clusters: [{name: a, engine: sim, maxRunningQueries: 1}]
clusterGroups:
  - {name: g, members: [a], poolMode: session, resetQuery: "DISCARD ALL"}
  - {name: h, members: [a], poolMode: statement}
  - {name: i, members: [a], poolMode: transaction}
routingFallback: g
`)
	if got := paths(Validate(cfg)); !slices.Equal(got, []string{"clusterGroups[1].poolMode"}) {
		t.Fatalf("want an unknown pool mode at clusterGroups[1].poolMode, got %v", got)
	}
}

// A poll timeout the control plane cannot serve is refused by config check, not at start.
func TestPollTimeoutAboveTheControlPlaneCapIsAnError(t *testing.T) {
	cfg := mustParse(t, "queryflux: {role: worker, controlPlane: {url: 'http://cp:9000', secret: s, pollTimeoutSecs: 301}}\n")
	if got := paths(Validate(cfg)); !slices.Contains(got, "queryflux.controlPlane.pollTimeoutSecs") {
		t.Fatalf("pollTimeoutSecs 301 accepted; got %v", got)
	}
}

// The uplink's and the config sync's timing are settings: bad values are named, a
// millisecond flush interval replaces the seconds one, and left out they take the defaults
// the uplink and the config sync had built in.
func TestUplinkAndRetrySettings(t *testing.T) {
	cfg := mustParse(t, "queryflux: {historyUplink: {flushIntervalMs: -1, batchRecords: -2, sendTimeoutMs: -3}, controlPlane: {retryMaxSecs: -4}}\n")
	got := paths(Validate(cfg))
	want := []string{"queryflux.controlPlane.retryMaxSecs", "queryflux.historyUplink.batchRecords",
		"queryflux.historyUplink.sendTimeoutMs", "queryflux.historyUplink.flushIntervalMs"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	def := mustParse(t, "{}")
	up := def.QueryFlux.HistoryUplink
	if up.BatchRecords != 500 || up.SendTimeoutMs != 10000 || up.FlushInterval() != 5*time.Second || def.QueryFlux.ControlPlane.RetryMaxSecs != 30 {
		t.Fatalf("defaults %+v, retry %d", up, def.QueryFlux.ControlPlane.RetryMaxSecs)
	}
	ms := mustParse(t, "queryflux: {historyUplink: {flushIntervalMs: 250}}\n")
	if d := ms.QueryFlux.HistoryUplink.FlushInterval(); d != 250*time.Millisecond {
		t.Fatalf("flushIntervalMs 250: %v", d)
	}
}
