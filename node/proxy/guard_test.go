package proxy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/query"
)

func TestLostLeaseCancelsTheQuery(t *testing.T) {
	h := newHarness(t)
	guard := capacitytest.NewLosingGuard()
	h.core = New(Options{Env: h.env, Guard: guard, OnFinish: h.recs.add, Registerer: h.reg})
	g := newGate(h.env)
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1, gate: g})))
	o := h.async(t.Context(), sel("select 1"))
	eventually(t, "running", func() bool { return h.core.Running("a") == 1 })
	guard.Slots()[0].Lose()
	_, err := o.result(t)
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeLeaseLost || !strings.Contains(qe.Message, "capacity lease a#1 on cluster a was lost") {
		t.Fatalf("want a lease-lost error, got %v", err)
	}
	if h.core.Running("a") != 0 || guard.Running("a") != 0 {
		t.Fatal("lost slot not released")
	}
	if rec := h.recs.last(t); rec.Status != StatusFailed || rec.ErrorCode != query.CodeLeaseLost {
		t.Fatalf("record %+v", rec)
	}
	lost := testutil.ToFloat64(h.core.metrics.queries.WithLabelValues("g", "a", statusLeaseLost))
	failed := testutil.ToFloat64(h.core.metrics.queries.WithLabelValues("g", "a", string(StatusFailed)))
	if lost != 1 || failed != 0 {
		t.Fatalf("queries_total: lease_lost %v, failed %v; want the query counted as lease_lost", lost, failed)
	}
}

func TestGuardUnavailableFailsTheQuery(t *testing.T) {
	h := newHarness(t)
	guard := capacitytest.NewLosingGuard()
	guard.SetUnavailable(true)
	h.core = New(Options{Env: h.env, Guard: guard, OnFinish: h.recs.add})
	h.activate(oneGroup(RoundRobin, 5, time.Minute, cl("a", 1, &fakeEngine{rows: 1})))
	_, err := h.run(t.Context(), sel("select 1"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeCoordinationUnavailable || !qe.Retryable || h.core.Queued("g") != 0 {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(err.Error(), "control-plane.internal") {
		t.Fatalf("the client's error names the control plane: %v", err)
	}
}

type pingFailEngine struct {
	fakeEngine
	down bool
}

func (p *pingFailEngine) Ping(ctx context.Context) error {
	if p.down {
		return errors.New("unreachable")
	}
	return nil
}

func TestCheckHealthSkipsDownClusters(t *testing.T) {
	h := newHarness(t)
	a := &pingFailEngine{fakeEngine: fakeEngine{rows: 1}, down: true}
	h.activate(oneGroup(Failover, 0, 0, cl("a", 5, a), cl("b", 5, &fakeEngine{rows: 1})))
	h.core.CheckHealth(t.Context(), time.Second)
	mustRun(t, h)
	if r := h.recs.last(t); r.Cluster != "b" {
		t.Fatalf("ran on %s while a is down", r.Cluster)
	}
	a.down = false
	h.core.CheckHealth(t.Context(), time.Second)
	mustRun(t, h)
	if r := h.recs.last(t); r.Cluster != "a" {
		t.Fatalf("ran on %s after a recovered", r.Cluster)
	}
}

func TestCheckHookRefusesBeforeCacheAndQueue(t *testing.T) {
	h := newHarness(t)
	calls := 0
	h.core = New(Options{Env: h.env, OnFinish: h.recs.add, Check: func(req *query.Request, group string) error {
		calls++
		if req.User == "mallory" {
			return &query.Error{Code: query.CodeAccessDenied, Message: "user mallory may not use group " + group}
		}
		return nil
	}})
	ea := &fakeEngine{rows: 1}
	h.activate(cacheSpec(ea, &fakeEngine{rows: 1}, 1, 1))
	mustRun(t, h) // alice fills the cache
	req := sel("select 1")
	req.User = "mallory"
	_, err := h.run(t.Context(), req)
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeAccessDenied {
		t.Fatalf("want access denied even for a cached statement, got %v", err)
	}
	if calls != 2 || ea.executes.Load() != 1 {
		t.Fatalf("check ran %d times, engine %d times", calls, ea.executes.Load())
	}
	if r := h.recs.last(t); r.Status != StatusFailed || r.ErrorCode != query.CodeAccessDenied || r.Group != "g" {
		t.Fatalf("record %+v", r)
	}
	if _, err := h.core.Admit(t.Context(), req); !errors.As(err, &qe) || qe.Code != query.CodeAccessDenied {
		t.Fatalf("Admit must run the check too: %v", err)
	}
}
