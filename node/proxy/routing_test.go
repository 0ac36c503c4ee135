package proxy

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

func TestRouters(t *testing.T) {
	re := regexp.MustCompile
	script, err := CompileScript("t", `
def route(query, ctx):
    if query["user"] == "etl" and "batch" in ctx["groups"]:
        return "batch"
    if query["headers"].get("X-Team") == "bi":
        return "bi"
    return None
`, []string{"batch", "bi", "default"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		router Router
		req    query.Request
		want   string // "" means no match
	}{
		{"protocol match", &ProtocolRouter{ByProtocol: map[string]string{"trino": "t", "mysql": "m"}}, query.Request{Protocol: "mysql"}, "m"},
		{"protocol miss", &ProtocolRouter{ByProtocol: map[string]string{"trino": "t"}}, query.Request{Protocol: "postgres"}, ""},
		{"header match", &HeaderRouter{Header: "X-Trino-Source", ByValue: map[string]string{"airflow": "etl"}},
			query.Request{Headers: map[string]string{"X-Trino-Source": "airflow"}}, "etl"},
		{"header case-insensitive name", &HeaderRouter{Header: "x-trino-source", ByValue: map[string]string{"airflow": "etl"}},
			query.Request{Headers: map[string]string{"X-Trino-Source": "airflow"}}, "etl"},
		{"header other value", &HeaderRouter{Header: "X-Trino-Source", ByValue: map[string]string{"airflow": "etl"}},
			query.Request{Headers: map[string]string{"X-Trino-Source": "superset"}}, ""},
		{"header absent", &HeaderRouter{Header: "X-Trino-Source", ByValue: map[string]string{"airflow": "etl"}}, query.Request{}, ""},
		{"regex first rule wins", &QueryRegexRouter{Rules: []RegexRule{{re(`(?i)^\s*insert`), "w"}, {re(`(?i)select`), "r"}}},
			query.Request{SQL: "INSERT INTO t SELECT 1"}, "w"},
		{"regex second rule", &QueryRegexRouter{Rules: []RegexRule{{re(`(?i)^\s*insert`), "w"}, {re(`(?i)select`), "r"}}},
			query.Request{SQL: "select 1"}, "r"},
		{"regex miss", &QueryRegexRouter{Rules: []RegexRule{{re(`^drop`), "x"}}}, query.Request{SQL: "select 1"}, ""},
		{"tags all present", &TagsRouter{Rules: []TagRule{{Tags: []string{"etl", "nightly"}, Group: "batch"}}},
			query.Request{Tags: []string{"nightly", "x", "etl"}}, "batch"},
		{"tags one missing", &TagsRouter{Rules: []TagRule{{Tags: []string{"etl", "nightly"}, Group: "batch"}}},
			query.Request{Tags: []string{"etl"}}, ""},
		{"compound all holds", &CompoundRouter{Mode: MatchAll, Group: "c", Conditions: []Condition{
			ProtocolIs{[]string{"trino"}}, UserIs{"bob"}, QueryMatches{re(`orders`)}}},
			query.Request{Protocol: "trino", User: "bob", SQL: "select * from orders"}, "c"},
		{"compound all fails on one", &CompoundRouter{Mode: MatchAll, Group: "c", Conditions: []Condition{
			ProtocolIs{[]string{"trino"}}, UserIs{"bob"}}},
			query.Request{Protocol: "trino", User: "eve"}, ""},
		{"compound any holds on one", &CompoundRouter{Mode: MatchAny, Group: "c", Conditions: []Condition{
			HasTags{[]string{"vip"}}, HeaderEquals{"X-Prio", "high"}}},
			query.Request{Headers: map[string]string{"x-prio": "high"}}, "c"},
		{"compound any none", &CompoundRouter{Mode: MatchAny, Group: "c", Conditions: []Condition{
			HasTags{[]string{"vip"}}, UserMatches{re(`^svc-`)}}},
			query.Request{User: "alice"}, ""},
		{"script by user", script, query.Request{User: "etl"}, "batch"},
		{"script by header", script, query.Request{User: "x", Headers: map[string]string{"X-Team": "bi"}}, "bi"},
		{"script None", script, query.Request{User: "x"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, why, ok, err := tc.router.Route(&tc.req)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if tc.want == "" {
				if ok {
					t.Fatalf("matched %q (%s), want no match", g, why)
				}
				return
			}
			if !ok || g != tc.want {
				t.Fatalf("got (%q, %v, %s), want %q", g, ok, why, tc.want)
			}
			if why == "" {
				t.Fatal("a match must say why")
			}
		})
	}
}

func TestRouteOrderFallbackAndTrace(t *testing.T) {
	routers := []Router{
		&ProtocolRouter{ByProtocol: map[string]string{"trino": "t"}},
		&QueryRegexRouter{Rules: []RegexRule{{regexp.MustCompile(`orders`), "o"}}},
	}
	known := func(g string) bool { return g == "t" || g == "o" || g == "fb" }

	d := route(routers, "fb", known, &query.Request{Protocol: "trino", SQL: "select * from orders"})
	if d.Group != "t" || len(d.Trace) != 1 || !d.Trace[0].Matched || d.Trace[0].Router != "protocolBased#0" {
		t.Fatalf("first router must win: %+v", d)
	}
	d = route(routers, "fb", known, &query.Request{Protocol: "mysql", SQL: "select * from orders"})
	if d.Group != "o" || len(d.Trace) != 2 || d.Trace[0].Matched || d.Trace[1].Router != "queryRegex#1" {
		t.Fatalf("second router: %+v", d)
	}
	d = route(routers, "fb", known, &query.Request{Protocol: "mysql", SQL: "select 1"})
	if d.Group != "fb" || len(d.Trace) != 3 || d.Trace[2].Router != "fallback" || !d.Trace[2].Matched {
		t.Fatalf("fallback: %+v", d)
	}
	d = route(routers, "", known, &query.Request{Protocol: "mysql", SQL: "select 1"})
	if d.Group != "" || d.Trace[len(d.Trace)-1].Matched {
		t.Fatalf("no fallback must leave the query unrouted: %+v", d)
	}
}

func TestNoRouteIsAnError(t *testing.T) {
	h := newHarness(t)
	spec := oneGroup(RoundRobin, 0, 0, cl("a", 1, &fakeEngine{rows: 1}))
	spec.Fallback = ""
	spec.Routers = []Router{&ProtocolRouter{ByProtocol: map[string]string{"trino": "g"}}}
	h.activate(spec)
	_, err := h.run(t.Context(), sel("select 1"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeNoRoute {
		t.Fatalf("want CodeNoRoute, got %v", err)
	}
	if rec := h.recs.last(t); rec.Status != StatusFailed || rec.ErrorCode != query.CodeNoRoute || len(rec.Trace) != 2 {
		t.Fatalf("record: %+v", rec)
	}
}

func TestScriptRouterSafety(t *testing.T) {
	t.Run("step limit stops a runaway script and routing falls through", func(t *testing.T) {
		r, err := CompileScript("loop", "def route(query, ctx):\n    n = 0\n    while True:\n        n += 1\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.StepsMax = 10_000
		_, _, _, err = r.Route(&query.Request{})
		if err == nil || !strings.Contains(err.Error(), "too many steps") {
			t.Fatalf("want step-limit error, got %v", err)
		}
		d := route([]Router{r}, "fb", func(string) bool { return true }, &query.Request{})
		if d.Group != "fb" || !strings.HasPrefix(d.Trace[0].Reason, "error:") {
			t.Fatalf("a failing script must be traced and skipped: %+v", d)
		}
	})
	t.Run("unknown group from a script falls through", func(t *testing.T) {
		r, err := CompileScript("u", "def route(query, ctx):\n    return 'nope'\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		d := route([]Router{r}, "fb", func(g string) bool { return g == "fb" }, &query.Request{})
		if d.Group != "fb" || !strings.Contains(d.Trace[0].Reason, "unknown group") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("one-parameter form", func(t *testing.T) {
		r, err := CompileScript("one", "def route(query):\n    return 'g' if query['protocol'] == 'trino' else None\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		if g, _, ok, err := r.Route(&query.Request{Protocol: "trino"}); err != nil || !ok || g != "g" {
			t.Fatalf("got %q %v %v", g, ok, err)
		}
	})
	bad := []struct{ name, src, want string }{
		{"syntax", "def route(query, ctx)\n    return 1\n", "script router bad"},
		{"no route", "x = 1\n", "no function route"},
		{"load", "load('x.star', 'y')\ndef route(q, c):\n    return None\n", "load() is not allowed"},
		{"arity", "def route():\n    return None\n", "route(query, ctx)"},
		{"top-level loop", "n = 0\nwhile True:\n    n += 1\n", "too many steps"},
	}
	for _, tc := range bad {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			_, err := CompileScript("bad", tc.src, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
	t.Run("wrong return type is an error", func(t *testing.T) {
		r, _ := CompileScript("int", "def route(query, ctx):\n    return 3\n", nil)
		if _, _, _, err := r.Route(&query.Request{}); err == nil || !strings.Contains(err.Error(), "int") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("script cannot mutate the query", func(t *testing.T) {
		r, _ := CompileScript("mut", "def route(query, ctx):\n    query['sql'] = 'drop'\n    return None\n", nil)
		if _, _, _, err := r.Route(&query.Request{}); err == nil || !strings.Contains(err.Error(), "frozen") {
			t.Fatalf("want frozen error, got %v", err)
		}
	})
}

// A runtime whose routers decide by the protocol alone routes each protocol once: its
// decisions are those of the routers, for every protocol (the database naming a group still
// wins), and they are the runtime's own, so a new configuration routes by its routers from its
// first query, never by the decisions of the one it replaced. Routers that read more than the
// protocol are asked for every query.
func TestProtocolDecisionsAreTheRuntimes(t *testing.T) {
	h := newHarness(t)
	spec := func(pgGroup string, more ...Router) RuntimeSpec {
		return RuntimeSpec{
			Clusters: []ClusterSpec{cl("ca", 2, &fakeEngine{}), cl("cb", 2, &fakeEngine{})},
			Groups:   []GroupSpec{{Name: "a", Members: []MemberSpec{{Cluster: "ca"}}}, {Name: "b", Members: []MemberSpec{{Cluster: "cb"}}}},
			Routers:  append([]Router{&ProtocolRouter{ByProtocol: map[string]string{query.ProtocolPostgres: pgGroup}}}, more...),
			Fallback: "b",
		}
	}
	rt := h.activate(spec("a"))
	for _, p := range []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL, "other"} {
		req := &query.Request{SQL: "select 1", Protocol: p}
		got, want := rt.Route(req), routeNamed(rt.routers, rt.rnames, rt.fallback, rt.knownGroup, req)
		if got.Group != want.Group || !reflect.DeepEqual(got.Trace, want.Trace) {
			t.Errorf("%s: routed %+v, the routers say %+v", p, got, want)
		}
		if got.g != nil && got.g != rt.groups[got.Group] {
			t.Errorf("%s: routed to %q with another group's %q", p, got.Group, got.g.name)
		}
	}
	if d := rt.Route(&query.Request{Protocol: query.ProtocolPostgres, Database: "b"}); d.Group != "b" {
		t.Errorf("a client's database naming group b: routed to %q", d.Group)
	}
	for i, want := range []string{"ca", "cb", "ca"} {
		if i == 1 {
			h.activate(spec("b"))
		}
		if i == 2 {
			h.activate(spec("b", &HeaderRouter{Header: "x-team", ByValue: map[string]string{"blue": "a"}}))
		}
		req := sel("select 1")
		req.Headers = map[string]string{"x-team": "blue"}
		req.Protocol = query.ProtocolMySQL // past the protocolBased router: the header router decides
		if i < 2 {
			req.Protocol = query.ProtocolPostgres
		}
		if _, err := h.run(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		if got := h.recs.last(t).Cluster; got != want {
			t.Fatalf("configuration %d: ran on %s, want %s", i+1, got, want)
		}
	}
}

// TestHeaderConditions: a header condition reads the request's header, whatever other headers it
// carries: an absent header matches no pattern (not even one matching ""), HeaderEquals with a
// value wants that value, and with none wants the header present.
func TestHeaderConditions(t *testing.T) {
	other := map[string]string{"X-Other": "1"}
	team := func(v string) map[string]string { return map[string]string{"X-Other": "1", "x-team": v} }
	cases := []struct {
		name    string
		cond    Condition
		headers map[string]string
		want    bool
	}{
		{"pattern matching empty, header absent", HeaderMatches{"X-Team", regexp.MustCompile(`^.*$`)}, other, false},
		{"pattern matching empty, no headers", HeaderMatches{"X-Team", regexp.MustCompile(`^.*$`)}, nil, false},
		{"pattern, header matches", HeaderMatches{"X-Team", regexp.MustCompile(`^bi$`)}, team("bi"), true},
		{"pattern, header differs", HeaderMatches{"X-Team", regexp.MustCompile(`^bi$`)}, team("ops"), false},
		{"equals, header absent", HeaderEquals{"X-Team", "bi"}, other, false},
		{"equals, header differs", HeaderEquals{"X-Team", "bi"}, team("ops"), false},
		{"equals, header same", HeaderEquals{"X-Team", "bi"}, team("bi"), true},
		{"equals empty value, header absent", HeaderEquals{"X-Team", ""}, other, false},
		{"equals empty value, header present", HeaderEquals{"X-Team", ""}, team("ops"), true},
		{"equals empty value, header present and empty", HeaderEquals{"X-Team", ""}, team(""), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := tc.cond.Test(&query.Request{Headers: tc.headers}); got != tc.want {
				t.Fatalf("%#v on %v: %v (%s), want %v", tc.cond, tc.headers, got, why, tc.want)
			}
		})
	}
	r := &HeaderRouter{Header: "X-Team", ByValue: map[string]string{"": "empty", "bi": "bi"}}
	if g, why, ok, _ := r.Route(&query.Request{Headers: other}); ok || !strings.Contains(why, "absent") {
		t.Fatalf("an absent header routed to %q (%s): an empty value is not an absent header", g, why)
	}
	if g, _, ok, _ := r.Route(&query.Request{Headers: team("")}); !ok || g != "empty" {
		t.Fatalf("a present empty header routed to %q %v, want the empty value's group", g, ok)
	}
}

// TestEveryRouterNamesItsGroups: a runtime refuses a router naming a group it does not serve,
// whichever rule of the router names it.
func TestEveryRouterNamesItsGroups(t *testing.T) {
	re := regexp.MustCompile(`x`)
	for _, r := range []Router{
		&ProtocolRouter{ByProtocol: map[string]string{"trino": "g", "mysql": "nowhere"}},
		&HeaderRouter{Header: "X-Team", ByValue: map[string]string{"a": "g", "b": "nowhere"}},
		&QueryRegexRouter{Rules: []RegexRule{{re, "g"}, {re, "nowhere"}}},
		&TagsRouter{Rules: []TagRule{{[]string{"a"}, "g"}, {[]string{"b"}, "nowhere"}}},
		&CompoundRouter{Mode: MatchAll, Conditions: []Condition{UserIs{"bob"}}, Group: "nowhere"},
	} {
		spec := oneGroup(RoundRobin, 0, 0, cl("a", 1, &fakeEngine{rows: 1}))
		spec.Routers = []Router{r}
		if _, err := NewRuntime(spec); err == nil || !strings.Contains(err.Error(), `unknown group "nowhere"`) {
			t.Errorf("%s naming an unknown group: %v, want refused", r.Kind(), err)
		}
	}
}

// TestRoutingReasons: a trace says why each router did or did not match, in words an operator
// can act on: the protocol that has no entry (one no frontend speaks too), every condition of a
// compound router that held.
func TestRoutingReasons(t *testing.T) {
	p := &ProtocolRouter{ByProtocol: map[string]string{"trino": "t"}}
	for _, proto := range []string{query.ProtocolMySQL, "carrier-pigeon"} {
		if _, why, ok, _ := p.Route(&query.Request{Protocol: proto}); ok || why != `no entry for protocol "`+proto+`"` {
			t.Errorf("protocol %s: %v %q", proto, ok, why)
		}
	}
	c := &CompoundRouter{Mode: MatchAll, Group: "c", Conditions: []Condition{UserIs{"bob"}, ProtocolIs{[]string{"trino"}}}}
	if _, why, ok, _ := c.Route(&query.Request{User: "bob", Protocol: "trino"}); !ok || why != `all: user "bob"; protocol trino` {
		t.Errorf("compound all: %v %q", ok, why)
	}
}
