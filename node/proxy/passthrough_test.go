package proxy

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/internal/invariants"
	"github.com/queryflux/queryflux/internal/query"
)

var errEOF = io.EOF

func relayAll(query.Engine) bool  { return true }
func relayNone(query.Engine) bool { return false }

// TestAdmitPassthrough: a relayable query holds a slot until Finish, which reports its rows
// and bytes; anything that needs values (cache, settings.passthrough false, an engine the
// frontend cannot relay from) gets ok=false without a slot or a record; a refused query is
// reported once.
func TestAdmitPassthrough(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.activate(oneGroup(RoundRobin, 5, time.Second, cl("c1", 2, &fakeEngine{name: "c1"})))
	adm, ok, err := h.core.AdmitPassthrough(ctx, sel("select 1"), relayAll)
	if err != nil || !ok {
		t.Fatalf("admit: ok %v err %v", ok, err)
	}
	if h.core.Running("c1") != 1 || adm.Cluster != "c1" || adm.Group != "g" {
		t.Fatalf("running %d, admission %s/%s", h.core.Running("c1"), adm.Group, adm.Cluster)
	}
	rctx, cancel := adm.RunContext(ctx, func() {})
	if rctx != ctx {
		t.Fatal("without a query timeout the run context should be the caller's")
	}
	cancel()
	adm.Finish(7, 70, nil)
	r := h.recs.last(t)
	if r.Rows != 7 || r.Bytes != 70 || r.Status != StatusSucceeded || h.core.Running("c1") != 0 {
		t.Fatalf("record %+v, running %d", r, h.core.Running("c1"))
	}
	if p := h.core.Paths(); p.Passthrough != 1 || p.Arrow != 0 {
		t.Fatalf("paths %+v", p)
	}

	for name, setup := range map[string]func(*RuntimeSpec) func(query.Engine) bool{
		"cache":          func(s *RuntimeSpec) func(query.Engine) bool { s.Groups[0].Cache.TTL = time.Minute; return relayAll },
		"no-passthrough": func(s *RuntimeSpec) func(query.Engine) bool { s.NoPassthrough = true; return relayAll },
		"not-relayable":  func(s *RuntimeSpec) func(query.Engine) bool { return relayNone },
	} {
		h := newHarness(t)
		spec := oneGroup(RoundRobin, 5, time.Second, cl("c1", 2, &fakeEngine{name: "c1"}))
		can := setup(&spec)
		rt := h.activate(spec)
		adm, ok, err := h.core.AdmitPassthrough(ctx, sel("select 1"), can)
		if adm != nil || ok || err != nil || h.core.Running("c1") != 0 || len(h.recs.all()) != 0 {
			t.Fatalf("%s: got ok %v err %v running %d records %d", name, ok, err, h.core.Running("c1"), len(h.recs.all()))
		}
		if rt.Inflight() != 0 {
			t.Fatalf("%s: runtime left pinned (%d)", name, rt.Inflight())
		}
	}

	h = newHarness(t)
	h.core = New(Options{Env: h.env, OnFinish: h.recs.add, Check: func(*query.Request, string) error {
		return &query.Error{Code: query.CodeAccessDenied, Message: "no"}
	}})
	h.activate(oneGroup(RoundRobin, 5, time.Second, cl("c1", 2, &fakeEngine{name: "c1"})))
	_, _, err = h.core.AdmitPassthrough(ctx, sel("select 1"), relayAll)
	if !isCode(err, query.CodeAccessDenied) || len(h.recs.all()) != 1 {
		t.Fatalf("refused: %v, %d records", err, len(h.recs.all()))
	}
}

// TestPassthroughTimeoutAndLease: the run context ends on the group's query timeout (Explain
// names it) and on a lost lease (Explain names that).
func TestPassthroughTimeoutAndLease(t *testing.T) {
	h := newHarness(t)
	g := capacitytest.NewLosingGuard()
	h.core = New(Options{Env: h.env, OnFinish: h.recs.add, Guard: g})
	spec := oneGroup(RoundRobin, 5, time.Second, cl("c1", 2, &fakeEngine{name: "c1"}))
	spec.Groups[0].QueryTimeout = 20 * time.Millisecond
	h.activate(spec)
	ctx := context.Background()
	adm, ok, err := h.core.AdmitPassthrough(ctx, sel("select 1"), relayAll)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	rctx, cancel := adm.RunContext(ctx, func() {})
	eventually(t, "query timeout", func() bool { return rctx.Err() != nil })
	if err := adm.Explain(rctx.Err()); !isCode(err, query.CodeQueryTimeout) {
		t.Fatalf("timeout explained as %v", err)
	}
	cancel()
	adm.Finish(0, 0, adm.Explain(context.DeadlineExceeded))

	spec.Groups[0].QueryTimeout = 0
	h.activate(spec)
	adm, _, _ = h.core.AdmitPassthrough(ctx, sel("select 1"), relayAll)
	qctx, qcancel := context.WithCancel(ctx)
	defer qcancel()
	rctx, _ = adm.RunContext(qctx, qcancel)
	g.LoseAll()
	if rctx.Err() == nil {
		t.Fatal("a lost lease did not cancel the relayed query")
	}
	var qe *query.Error
	if err := adm.Explain(context.Canceled); !errors.As(err, &qe) || qe.Code != query.CodeLeaseLost {
		t.Fatalf("lost lease explained as %v", err)
	}
	adm.Finish(0, 0, err)
	if err := adm.CheckLimits(1, 1); err != nil {
		t.Fatal(err)
	}
}

// TestAdmitPassthroughInto: one Admission serves statement after statement, each admitted,
// relayed and reported as its own (its id, rows, error and slot); an Admission not finished yet is
// never made over (a violation; the statement it holds runs on and is reported).
func TestAdmitPassthroughInto(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.activate(oneGroup(RoundRobin, 5, time.Second, cl("c1", 2, &fakeEngine{name: "c1"})))
	var kept Admission
	ids := map[string]bool{}
	for i := range 3 {
		adm, ok, err := h.core.AdmitPassthroughInto(ctx, sel("select 1"), relayAll, &kept)
		if err != nil || !ok || adm != &kept || h.core.Running("c1") != 1 {
			t.Fatalf("statement %d: ok %v err %v, into the kept admission %v, running %d", i, ok, err, adm == &kept, h.core.Running("c1"))
		}
		if ids[adm.QueryID] {
			t.Fatalf("statement %d: the id %s again", i, adm.QueryID)
		}
		ids[adm.QueryID] = true
		var failed error // the second fails: the third's record carries none of its error
		status, code, msg := StatusSucceeded, "", ""
		if i == 1 {
			failed = &query.Error{Code: "42S02", Message: "no such table"}
			status, code, msg = StatusFailed, "42S02", failed.Error()
		}
		_ = adm.Relay(ctx, func() {}).Finish(int64(i), 10*int64(i), failed)
		if r := h.recs.last(t); r.QueryID != adm.QueryID || r.Rows != int64(i) || r.Bytes != 10*int64(i) || r.Status != status ||
			r.ErrorCode != code || r.Error != msg || h.core.Running("c1") != 0 {
			t.Fatalf("statement %d: record %+v, running %d", i, r, h.core.Running("c1"))
		}
	}
	adm, _, _ := h.core.AdmitPassthroughInto(ctx, sel("select 2"), relayAll, &kept)
	id := adm.QueryID
	v := invariants.Catch(func() { _, _, _ = h.core.AdmitPassthroughInto(ctx, sel("select 3"), relayAll, &kept) })
	if v == nil || kept.QueryID != id || h.core.Running("c1") != 1 {
		t.Fatalf("an unfinished admission made over: violation %v, id %s (was %s), running %d", v, kept.QueryID, id, h.core.Running("c1"))
	}
	_ = adm.Relay(ctx, func() {}).Finish(2, 2, nil)
	if r := h.recs.last(t); r.QueryID != id || r.SQL != "select 2" || h.core.Running("c1") != 0 {
		t.Fatalf("record %+v, running %d", r, h.core.Running("c1"))
	}
}
