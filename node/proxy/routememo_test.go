package proxy

import (
	"regexp"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// A client in transaction pool mode keeps its routing decision from transaction to transaction
// (in its last wire's memory) only while it holds: a config change re-routes its next
// transaction, a request with other session inputs (a new headers map) is routed again, and a
// router that reads the statement's text routes every statement.
func TestSessionRouteFollowsTheConfig(t *testing.T) {
	h := newHarness(t)
	h.core = New(Options{Env: h.env, OnFinish: h.recs.add})
	spec := func(rev, fallback string, routers ...Router) RuntimeSpec {
		return RuntimeSpec{Revision: rev, Fallback: fallback, Routers: routers,
			Clusters: []ClusterSpec{cl("a", 4, &wireEngine{}), cl("b", 4, &wireEngine{})},
			Groups: []GroupSpec{{Name: "g1", Members: []MemberSpec{{Cluster: "a"}}, MaxQueuedQueries: 5, CapacityWaitTimeout: time.Minute},
				{Name: "g2", Members: []MemberSpec{{Cluster: "b"}}, MaxQueuedQueries: 5, CapacityWaitTimeout: time.Minute}}}
	}
	var last *Wire
	tx := func(q *query.Request) string {
		t.Helper()
		w, ok, err := h.core.OpenWireInto(t.Context(), q, 1, "", last)
		if err != nil || !ok {
			t.Fatalf("OpenWireInto: %v %v", ok, err)
		}
		relayOneAndClose(t, t.Context(), w, q)
		last = w
		return w.Group
	}
	headers := map[string]string{"app": "x"}
	q := func(sql string) *query.Request {
		return &query.Request{SQL: sql, User: "alice", Protocol: query.ProtocolPostgres, Headers: headers}
	}
	want := func(step, got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: routed to %s, want %s", step, got, want)
		}
	}

	rtA := h.activate(spec("A", "g2", &HeaderRouter{Header: "app", ByValue: map[string]string{"x": "g1"}}))
	want("revision A, first transaction", tx(q("select 1")), "g1")
	want("revision A, second transaction", tx(q("select 2")), "g1")
	if last.s == nil || last.s.memo.rt != rtA {
		t.Fatal("the session did not keep its decision under revision A")
	}
	h.activate(spec("B", "g1", &HeaderRouter{Header: "app", ByValue: map[string]string{"x": "g2"}}))
	want("revision B, first transaction", tx(q("select 3")), "g2")
	want("revision B, second transaction", tx(q("select 4")), "g2")
	headers = map[string]string{"app": "other"} // a new session's inputs: no router's value
	want("revision B, other headers", tx(q("select 5")), "g1")

	h.activate(spec("C", "g2", &QueryRegexRouter{Rules: []RegexRule{{Pattern: regexp.MustCompile(`^select 1\b`), Group: "g1"}}}))
	want("revision C, select 1", tx(q("select 1")), "g1")
	want("revision C, select 2", tx(q("select 2")), "g2")
	want("revision C, select 1 again", tx(q("select 1")), "g1")

	h.activate(spec("D", "g2", &CompoundRouter{Mode: MatchAll, Group: "g1",
		Conditions: []Condition{UserIs{Name: "alice"}, QueryMatches{Pattern: regexp.MustCompile(`^select 1\b`)}}}))
	want("revision D, select 1", tx(q("select 1")), "g1")
	want("revision D, select 2", tx(q("select 2")), "g2")
}

// sessionOnly names the routers a session's decision may be kept for.
func TestSessionOnlyRouters(t *testing.T) {
	re := regexp.MustCompile(`x`)
	for _, c := range []struct {
		routers []Router
		want    bool
	}{
		{nil, true},
		{[]Router{&ProtocolRouter{}, &HeaderRouter{}, &TagsRouter{}}, true},
		{[]Router{&CompoundRouter{Conditions: []Condition{ProtocolIs{}, HeaderMatches{Pattern: re}, HeaderEquals{}, UserMatches{Pattern: re}, UserIs{}, HasTags{}}}}, true},
		{[]Router{&HeaderRouter{}, &QueryRegexRouter{}}, false},
		{[]Router{&CompoundRouter{Conditions: []Condition{UserIs{}, QueryMatches{Pattern: re}}}}, false},
		{[]Router{&ScriptRouter{}}, false},
	} {
		if got := sessionOnly(c.routers); got != c.want {
			t.Errorf("sessionOnly(%T...) = %v, want %v", c.routers, got, c.want)
		}
	}
}
