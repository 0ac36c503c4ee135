package proxy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/query"
)

func testConfig() *config.Config {
	off := false
	cfg := &config.Config{
		Clusters: config.NamedList[config.Cluster]{
			{Name: "pg1", Engine: config.EngineSim, MaxRunningQueries: 2,
				Credentials: config.Credentials{User: "u", Password: "s3cret"},
				Variants:    map[string]config.ClusterOverrides{"etl": {}}},
			{Name: "pg2", Engine: config.EngineSim, MaxRunningQueries: 2},
			{Name: "off", Engine: config.EngineSim, MaxRunningQueries: 1, Enabled: &off},
		},
		ClusterGroups: config.NamedList[config.ClusterGroup]{
			{Name: "main", Members: []string{"pg1", "pg2"}, Strategy: config.StrategyWeighted, Weights: map[string]int{"pg1": 3},
				Cache: config.GroupCache{Enabled: true}},
			{Name: "etl", Members: []string{"pg1::etl", "off"}, MaxQueuedQueries: 7, CapacityWaitTimeoutSecs: 9},
			{Name: "bi", Members: []string{"pg2"}, ReadOnly: true, BlockedStatements: []string{"create table"}},
			{Name: "vip", Members: []string{"pg2"}},
			{Name: "scripted", Members: []string{"pg2"}},
		},
		Routers: []config.Router{
			{Type: config.RouterProtocolBased, Trino: "bi"},
			{Type: config.RouterHeader, HeaderName: "X-Source", HeaderValue: "airflow", Group: "etl"},
			{Type: config.RouterQueryRegex, Rules: []config.RegexRule{{Regex: `(?i)^insert`, Group: "etl"}}},
			{Type: config.RouterTags, TagToGroup: map[string]string{"vip": "vip"}},
			{Type: config.RouterCompound, Combine: "all", Group: "vip", Conditions: []config.Condition{
				{Type: config.ConditionUser, User: "ceo"}, {Type: config.ConditionProtocol, Protocol: "mysql"}}},
			{Type: config.RouterScript, Name: "s", Source: "def route(query, ctx):\n    return 'scripted' if query['database'] == 'lab' else None\n"},
		},
		RoutingFallback: "main",
	}
	cfg.Settings.Guardrails = config.Guardrails{MaxResultRows: 1000, MaxResultBytes: 1 << 20, MaxQueuedPerUser: 3}
	config.ApplyDefaults(cfg)
	return cfg
}

type opened struct{ names []string }

func (o *opened) factory(c config.Cluster) (query.Engine, error) {
	o.names = append(o.names, c.Name)
	return &fakeEngine{rows: 1}, nil
}

func TestBuildFromConfig(t *testing.T) {
	var o opened
	rt, err := Build(testConfig(), o.factory)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.names, ","); got != "pg1,pg1::etl,pg2" {
		t.Fatalf("engines opened for %s; want enabled clusters only, variants expanded", got)
	}
	cases := []struct {
		req  query.Request
		want string
	}{
		{query.Request{Protocol: "trino"}, "bi"},
		{query.Request{Protocol: "postgres", Headers: map[string]string{"x-source": "airflow"}}, "etl"},
		{query.Request{Protocol: "postgres", SQL: "INSERT INTO t VALUES (1)"}, "etl"},
		{query.Request{Protocol: "postgres", Tags: []string{"vip"}}, "vip"},
		{query.Request{Protocol: "mysql", User: "ceo"}, "vip"},
		{query.Request{Protocol: "postgres", User: "ceo"}, "main"},
		{query.Request{Protocol: "postgres", Database: "lab"}, "scripted"},
		{query.Request{Protocol: "postgres", SQL: "select 1"}, "main"},
	}
	for _, tc := range cases {
		if d := rt.Route(&tc.req); d.Group != tc.want {
			t.Errorf("%+v routed to %q, want %q (trace %+v)", tc.req, d.Group, tc.want, d.Trace)
		}
	}
	if rt.limits != (Limits{MaxResultRows: 1000, MaxResultBytes: 1 << 20, MaxQueuedPerUser: 3}) {
		t.Fatalf("guardrails not mapped: %+v", rt.limits)
	}
	etl := rt.groups["etl"]
	if etl.maxQueued != 7 || etl.waitTimeout != 9*time.Second || etl.strategy != RoundRobin {
		t.Fatalf("etl group: %+v", etl)
	}
	main := rt.groups["main"]
	if main.maxQueued != DefaultMaxQueuedQueries || main.waitTimeout != DefaultCapacityWaitTimeout ||
		main.cache.TTL != DefaultCacheTTL || main.members[0].weight != 3 || main.members[1].weight != 1 {
		t.Fatalf("main group defaults: %+v", main)
	}
	if bi := rt.groups["bi"]; !bi.readOnly || len(bi.blocked) != 1 || bi.blocked[0] != "create table" {
		t.Fatalf("bi guardrails not mapped: %+v", bi)
	}
	if rt.groups["bi"].cache.TTL != 0 {
		t.Fatal("cache must be off unless enabled")
	}
}

func TestBuildFingerprints(t *testing.T) {
	var o opened
	base, _ := Build(testConfig(), o.factory)

	pw := testConfig()
	pw.Clusters[1].Credentials.Password = "changed" // pg2: in main, bi, vip, scripted
	edited, _ := Build(pw, o.factory)
	if base.GroupFingerprint("main") == edited.GroupFingerprint("main") || base.GroupFingerprint("bi") == edited.GroupFingerprint("bi") {
		t.Fatal("editing pg2 must change the fingerprint of every group it is in")
	}
	if base.GroupFingerprint("etl") != edited.GroupFingerprint("etl") {
		t.Fatal("editing pg2 must not touch etl, which does not contain it")
	}

	grp := testConfig()
	grp.ClusterGroups[2].QueryTimeoutSecs = 5 // bi
	edited, _ = Build(grp, o.factory)
	if base.GroupFingerprint("bi") == edited.GroupFingerprint("bi") || base.GroupFingerprint("main") != edited.GroupFingerprint("main") {
		t.Fatal("a group edit changes that group's fingerprint only")
	}
	again, _ := Build(testConfig(), o.factory)
	if again.GroupFingerprint("main") != base.GroupFingerprint("main") {
		t.Fatal("fingerprints must be stable for the same config")
	}
}

func TestBuildRejectsBadRouters(t *testing.T) {
	cases := []struct {
		name   string
		router config.Router
		want   string
	}{
		{"regex", config.Router{Type: config.RouterQueryRegex, Regex: "(", Group: "main"}, "routers[6]: regex"},
		{"script syntax", config.Router{Type: config.RouterScript, Name: "broken", Source: "def route(q, c)\n  return 1"}, "routers[6]: script router broken"},
		{"script no route", config.Router{Type: config.RouterScript, Source: "x = 1"}, "no function route"},
		{"compound regex", config.Router{Type: config.RouterCompound, Group: "main", Conditions: []config.Condition{{Type: config.ConditionQueryRegex, Regex: "["}}}, "conditions[0]"},
		{"unknown target", config.Router{Type: config.RouterProtocolBased, MySQL: "nope"}, `unknown group "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Routers = append(cfg.Routers, tc.router)
			var o opened
			rt, err := Build(cfg, o.factory)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v (runtime %v)", tc.want, err, rt != nil)
			}
		})
	}

}

func TestBuildClosesEnginesOnFailure(t *testing.T) {
	var made []*fakeEngine
	factory := func(c config.Cluster) (query.Engine, error) {
		if c.Name == "pg2" {
			return nil, errors.New("dial refused")
		}
		e := &fakeEngine{}
		made = append(made, e)
		return e, nil
	}
	_, err := Build(testConfig(), factory)
	if err == nil || !strings.Contains(err.Error(), "pg2") || !strings.Contains(err.Error(), "dial refused") {
		t.Fatalf("got %v", err)
	}
	if len(made) != 2 || !made[0].closed.Load() || !made[1].closed.Load() {
		t.Fatal("engines opened before the failure must be closed")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatal("secret in error")
	}
}

// engineTable hands out fresh fakeEngines and remembers them by cluster, newest last.
type engineTable struct{ made map[string][]*fakeEngine }

func (et *engineTable) factory(c config.Cluster) (query.Engine, error) {
	if et.made == nil {
		et.made = map[string][]*fakeEngine{}
	}
	e := &fakeEngine{rows: 1}
	et.made[c.Name] = append(et.made[c.Name], e)
	return e, nil
}

func TestBuildReusesUnchangedEngines(t *testing.T) {
	h := newHarness(t)
	var et engineTable
	rt1, err := Build(testConfig(), et.factory)
	if err != nil {
		t.Fatal(err)
	}
	h.core.Activate(rt1)

	edited := testConfig()
	edited.Clusters[1].MaxRunningQueries = 5 // pg2 changes; pg1 and pg1::etl do not
	rt2, err := Build(edited, et.factory, Reuse(h.core.Runtime()))
	if err != nil {
		t.Fatal(err)
	}
	if len(et.made["pg1"]) != 1 || len(et.made["pg1::etl"]) != 1 || len(et.made["pg2"]) != 2 {
		t.Fatalf("engines opened: pg1=%d pg1::etl=%d pg2=%d; want only pg2 reopened",
			len(et.made["pg1"]), len(et.made["pg1::etl"]), len(et.made["pg2"]))
	}
	if rt2.Engine("pg1") != et.made["pg1"][0] {
		t.Fatal("rt2 must run pg1 on the engine rt1 opened")
	}
	h.core.Activate(rt2)
	if !et.made["pg2"][0].closed.Load() {
		t.Fatal("the replaced pg2 engine must close with rt1")
	}
	if et.made["pg1"][0].closed.Load() {
		t.Fatal("a reused engine closed while rt2 uses it")
	}

	// A built-but-discarded runtime gives its references back without closing shared engines.
	rt3, err := Build(edited, et.factory, Reuse(rt2))
	if err != nil {
		t.Fatal(err)
	}
	rt3.Discard()
	if et.made["pg1"][0].closed.Load() || et.made["pg2"][1].closed.Load() {
		t.Fatal("discarding rt3 closed engines rt2 still uses")
	}

	// Reusing from a retired runtime whose engines are closed opens new ones.
	rt4, err := Build(testConfig(), et.factory)
	if err != nil {
		t.Fatal(err)
	}
	h.core.Activate(rt4)
	for i, e := range []*fakeEngine{et.made["pg1"][0], et.made["pg2"][0], et.made["pg2"][1]} {
		if !e.closed.Load() {
			t.Fatalf("engine %d still open after every runtime using it retired", i)
		}
	}
	rt5, err := Build(testConfig(), et.factory, Reuse(rt2))
	if err != nil {
		t.Fatal(err)
	}
	if rt5.Engine("pg1") == et.made["pg1"][0] {
		t.Fatal("reused a closed engine")
	}
	rt5.Discard()
}

// One plan builds any number of runtimes, each with its own clusters: what one build reused
// from its previous runtime stays out of the next build from the same plan.
func TestOnePlanBuildsIndependentRuntimes(t *testing.T) {
	var et engineTable
	p, err := Compile(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Build(et.factory)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Build(et.factory, Reuse(a))
	if err != nil {
		t.Fatal(err)
	}
	if b.Engine("pg1") != a.Engine("pg1") || len(et.made["pg1"]) != 1 {
		t.Fatalf("b must reuse a's pg1 engine (%d opened)", len(et.made["pg1"]))
	}
	c, err := p.Build(et.factory)
	if err != nil {
		t.Fatal(err)
	}
	if len(et.made["pg1"]) != 2 || c.Engine("pg1") != et.made["pg1"][1] {
		t.Fatalf("c, built without Reuse, runs pg1 on %p; want the engine opened for it (%d opened)", c.Engine("pg1"), len(et.made["pg1"]))
	}
	c.Discard()
	if et.made["pg1"][0].closed.Load() {
		t.Fatal("discarding c closed the engine a and b share")
	}
	b.Discard()
	a.Discard()
	if !et.made["pg1"][0].closed.Load() {
		t.Fatal("a's pg1 engine still open after a and b were discarded")
	}
}

// A PostgreSQL client's database must name a group, a cluster or a cluster's engine database,
// unless a script router reads the database (testConfig has one, which routes "lab").
func TestCheckDatabase(t *testing.T) {
	cfg := testConfig()
	cfg.Clusters = append(cfg.Clusters,
		config.Cluster{Name: "url", Engine: config.EnginePostgres, Endpoint: "postgres://app@db:5432/sales", MaxRunningQueries: 1},
		config.Cluster{Name: "named", Engine: config.EnginePostgres, Endpoint: "db:5432", Database: "ledger", MaxRunningQueries: 1},
		config.Cluster{Name: "plain", Engine: config.EnginePostgres, Endpoint: "db:5432", Credentials: config.Credentials{User: "etl_user"}, MaxRunningQueries: 1},
		config.Cluster{Name: "inmem", Engine: config.EngineDuckDB, Endpoint: ":memory:", MaxRunningQueries: 1},
		config.Cluster{Name: "onfile", Engine: config.EngineDuckDB, Endpoint: "/var/lib/qf/warehouse.duckdb", MaxRunningQueries: 1},
	)
	check := func(cfg *config.Config, name string) error {
		t.Helper()
		var o opened
		rt, err := Build(cfg, o.factory)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Discard()
		return rt.CheckDatabase(name)
	}
	for _, name := range []string{"main", "etl", "pg1", "pg1::etl", "off", "sales", "ledger", "etl_user", "anything"} {
		if err := check(cfg, name); err != nil {
			t.Errorf("%q with a script reading the database: %v", name, err)
		}
	}
	cfg.Routers = cfg.Routers[:len(cfg.Routers)-1] // no script
	for _, name := range []string{"main", "pg1::etl", "sales", "ledger", "etl_user", "memory", "warehouse"} {
		if err := check(cfg, name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"anything", "app", "lab", "postgres", ""} {
		var qe *query.Error
		if err := check(cfg, name); !errors.As(err, &qe) || qe.Code != "3D000" || qe.Message != `database "`+name+`" does not exist` {
			t.Errorf("%q: want 3D000 database does not exist, got %v", name, err)
		}
	}
}
