package proxy

import (
	"errors"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

func TestReadOnlyAndBlockedStatements(t *testing.T) {
	cases := []struct {
		sql      string
		readOnly bool
		blocked  []string
		refused  bool
	}{
		{"select 1", true, nil, false},
		{"show tables", true, nil, false},
		{"explain select 1", true, nil, false},
		{"EXPLAIN ANALYZE delete from t", true, nil, true},
		{"set search_path = x", true, nil, false},
		{"begin", true, nil, false},
		{"insert into t values (1)", true, nil, true},
		{"with d as (select 1) delete from t", true, nil, true},
		{"select 1; drop table t", true, nil, true},
		{"call proc()", true, nil, true},
		{"/*! DELETE FROM t */", true, nil, true}, // MySQL runs an executable comment
		{"select 1 /*!50000 ; drop table t */", true, nil, true},
		{"/*M! delete from t */", false, []string{"delete"}, true},
		{"/* drop */ select 1", true, nil, false},
		{"with x as (delete from t returning *) select * from x", true, nil, true},
		{"with x as (select 1) select * from x", true, nil, false},
		{"select * into t2 from t", true, nil, true},
		{"select * from t into outfile '/tmp/x'", true, nil, true},
		{"select 1 into @x", true, nil, false},
		{"select * from t for update", true, nil, true},
		{"select 'delete', \"update\" from t", true, nil, false},
		{"drop table t", false, []string{"drop"}, true},
		{"DROP TABLE t", false, []string{"drop"}, true},
		{"create table t (a int)", false, []string{"create table"}, true},
		{"create view v as select 1", false, []string{"create table"}, false},
		{"truncate t", false, []string{"ddl"}, true},
		{"with d as (select 1) delete from t", false, []string{"delete"}, true},
		{"select 'drop table t'", false, []string{"drop"}, false},
		{"/* drop */ select 1", false, []string{"drop"}, false},
		{"update t set a = 1", false, []string{"drop", "delete"}, false},
		{"select 1", false, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.sql, func(t *testing.T) {
			h := newHarness(t)
			spec := oneGroup(RoundRobin, 0, 0, cl("a", 1, &fakeEngine{rows: 1}))
			spec.Groups[0].ReadOnly, spec.Groups[0].BlockedStatements = tc.readOnly, tc.blocked
			h.activate(spec)
			eng := spec.Clusters[0].Engine.(*fakeEngine)
			_, err := h.run(t.Context(), sel(tc.sql))
			var qe *query.Error
			refused := errors.As(err, &qe) && qe.Code == query.CodeAccessDenied
			if refused != tc.refused {
				t.Fatalf("refused=%v (err %v), want %v", refused, err, tc.refused)
			}
			if tc.refused && eng.executes.Load() != 0 {
				t.Fatal("a refused statement reached the engine")
			}
		})
	}
}

func TestCacheableUsesTheTokenizer(t *testing.T) {
	cases := []struct {
		sql  string
		want bool
	}{
		{"select * from t", true},
		{"with x as (select 1) select * from x", true},
		{"values (1), (2)", true},
		{"select 1; drop table t", false},
		{"select 1; select 2", false},
		{"select now()", false},
		{"select t.now from t", true},
		{"select current_user", false},
		{"select * from t for update", false},
		{"select * into t2 from t", false},
		{"show tables", false},
		{"explain select 1", false},
		{"/* app=report */ select * from t", true}, // a tagged select is still a select
		{"/* app=report */ select now()", false},
		{"(select 1) union (select 2)", true},
	}
	for _, tc := range cases {
		if got := cacheableRequest(&query.Request{SQL: tc.sql, Protocol: query.ProtocolPostgres}); got != tc.want {
			t.Errorf("Cacheable(%q) = %v, want %v", tc.sql, got, tc.want)
		}
	}
}

func TestMultiStatementNotCached(t *testing.T) {
	h := newHarness(t)
	ea := &fakeEngine{rows: 1}
	h.activate(cacheSpec(ea, &fakeEngine{rows: 1}, 1, 1))
	for i := 0; i < 2; i++ {
		if _, err := h.run(t.Context(), sel("select 1; drop table t")); err != nil {
			t.Fatal(err)
		}
	}
	if ea.executes.Load() != 2 {
		t.Fatal("a multi-statement request was answered from the cache")
	}
}

func TestResultLimits(t *testing.T) {
	for _, lim := range []Limits{{MaxResultRows: 5}, {MaxResultBytes: 40}} {
		h := newHarness(t)
		spec := oneGroup(RoundRobin, 0, 0, cl("a", 1, &fakeEngine{rows: 10}))
		spec.Limits = lim
		h.activate(spec)
		_, err := h.run(t.Context(), sel("select * from big"))
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Code != query.CodeLimitExceeded {
			t.Fatalf("%+v: want CodeLimitExceeded, got %v", lim, err)
		}
		if r := h.recs.last(t); r.Status != StatusFailed || r.ErrorCode != query.CodeLimitExceeded || h.core.Running("a") != 0 {
			t.Fatalf("record %+v", r)
		}
	}
	h := newHarness(t)
	spec := oneGroup(RoundRobin, 0, 0, cl("a", 1, &fakeEngine{rows: 10}))
	spec.Limits = Limits{MaxResultRows: 10}
	h.activate(spec)
	if n, err := h.run(t.Context(), sel("select * from big")); err != nil || n != 10 {
		t.Fatalf("a result at the limit must pass: %d %v", n, err)
	}
}

func TestMaxQueuedPerUser(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	spec := oneGroup(RoundRobin, 10, time.Minute, cl("a", 1, &fakeEngine{rows: 1, gate: g}))
	spec.Limits = Limits{MaxQueuedPerUser: 1}
	h.activate(spec)
	running := h.async(t.Context(), sel("select 1"))
	eventually(t, "running", func() bool { return h.core.Running("a") == 1 })
	queued := h.async(t.Context(), sel("select 2")) // alice's one allowed wait
	eventually(t, "queued", func() bool { return h.core.Queued("g") == 1 })
	_, err := h.run(t.Context(), sel("select 3"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeQueueFull {
		t.Fatalf("alice's second wait: want CodeQueueFull, got %v", err)
	}
	bob := sel("select 4")
	bob.User = "bob"
	other := h.async(t.Context(), bob)
	eventually(t, "bob queued", func() bool { return h.core.Queued("g") == 2 })
	g.release()
	for _, o := range []*outcome{running, queued, other} {
		if _, err := o.result(t); err != nil {
			t.Fatal(err)
		}
	}
}
